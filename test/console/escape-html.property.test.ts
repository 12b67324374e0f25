// The console's one way of putting text into HTML (src/console/html.ts). Its promise: escapeHtml
// "escapes the five HTML metacharacters (so text is inert in element content and in quoted
// attributes) and marks invisible or reordering characters ... visibly as `⟦U+XXXX⟧`, so a
// description cannot hide text from the human or reorder what they read"; and "interpolated
// values are escaped unless they are already `Html` ..., so forgetting to escape is not possible by
// construction". fast-check searches any string (UTF-16 units, lone surrogates included, whole
// graphemes, and strings dense in markup: `<`, `&`, entity-like runs, quotes) for one whose escaped
// form, put in element text and in a double-quoted attribute:
//   - holds a raw `<`, `>`, `"` or `'`, or an `&` that does not begin one of the five entities
//     escapeHtml writes (so no parser can read a tag, end the attribute, or a different character);
//   - does not decode back to the input with its hidden characters marked (markInvisible), and to
//     the input itself when it has none;
//   - still holds a character a human cannot see, by the class the comment names (controls but
//     tab and line ends, format characters, lone surrogates, private use, unassigned, separators
//     but the space, Default_Ignorable_Code_Points), written here, not taken from the module.
// And the `html` tag and `pre` escape every interpolated value so, in content and attributes.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { escapeHtml, Html, html, markInvisible, pre } from "../../src/console/html.js";

const ENTITY = /&(?:amp|lt|gt|quot|#39);/g;
const DECODED: Record<string, string> = {
  "&amp;": "&",
  "&lt;": "<",
  "&gt;": ">",
  "&quot;": '"',
  "&#39;": "'",
};

/** The escaped text as an HTML parser reads it in content or a quoted attribute (only these five). */
const decode = (s: string) => s.replace(ENTITY, (e) => DECODED[e]!);

/** Characters the doc says a human cannot see for what they are (tab, LF, CR and the space aside). */
function hiddenByDoc(cp: number): boolean {
  if (cp === 0x09 || cp === 0x0a || cp === 0x0d || cp === 0x20) return false;
  const c = String.fromCodePoint(cp);
  if (cp >= 0xd800 && cp <= 0xdfff) return true;
  return /[\p{Cc}\p{Cf}\p{Co}\p{Cn}\p{Z}\p{Default_Ignorable_Code_Point}]/u.test(c);
}

/** The code points of `s`, a lone surrogate as itself. */
function codePoints(s: string): number[] {
  const out: number[] = [];
  for (let i = 0; i < s.length; i++) {
    const cp = s.codePointAt(i)!;
    out.push(cp);
    if (cp > 0xffff) i++;
  }
  return out;
}

const markupy = fc.string({
  unit: fc.constantFrom(
    "<",
    ">",
    "&",
    '"',
    "'",
    "`",
    "=",
    "/",
    ";",
    "#",
    "x",
    "amp",
    "lt;",
    "&#60;",
    "&lt;",
    "&amp;",
    "&#x3C;",
    "script",
    "\u202e",
    "\u2066",
    "\u200b",
    "\u0000",
    "\r",
    "\n",
    "\t",
    "\u00a0",
    "\u{e0041}",
    "\ud800",
    "\udc00",
    "⟦U+202E⟧",
    "😀",
  ),
  maxLength: 30,
});
const anyText = fc.oneof(
  fc.string({ unit: "binary", maxLength: 60 }),
  fc.string({ unit: "grapheme", maxLength: 30 }),
  markupy,
);

describe("escapeHtml", () => {
  it("no raw metacharacter, and every & begins one of its five entities", () => {
    fc.assert(
      fc.property(anyText, (s) => {
        const out = escapeHtml(s);
        expect(out, JSON.stringify(s)).not.toMatch(/[<>"']/);
        expect(out.replace(ENTITY, ""), JSON.stringify(s)).not.toContain("&");
      }),
      { numRuns: 3000 },
    );
  });

  it("decodes back to the input, its hidden characters marked; to the input itself when it has none", () => {
    fc.assert(
      fc.property(anyText, (s) => {
        const back = decode(escapeHtml(s));
        expect(back, JSON.stringify(s)).toBe(markInvisible(s));
        if (!codePoints(s).some(hiddenByDoc)) expect(back, JSON.stringify(s)).toBe(s);
      }),
      { numRuns: 3000 },
    );
  });

  it("what it decodes to holds no character a human cannot see", () => {
    fc.assert(
      fc.property(anyText, (s) => {
        const hidden = codePoints(decode(escapeHtml(s))).filter(hiddenByDoc);
        expect(
          hidden.map((cp) => cp.toString(16)),
          JSON.stringify(s),
        ).toEqual([]);
      }),
      { numRuns: 3000 },
    );
  });

  it("a marked character reads as its code point: each ⟦U+XXXX⟧ the input did not hold names one it held", () => {
    fc.assert(
      fc.property(anyText, (s) => {
        const marks = (t: string) => t.match(/⟦U\+[0-9A-F]{4,6}⟧/g) ?? [];
        const added = marks(markInvisible(s)).length - marks(s).length;
        expect(added, JSON.stringify(s)).toBe(codePoints(s).filter(hiddenByDoc).length);
      }),
      { numRuns: 2000 },
    );
  });

  it("values that are not strings are shown as their text, escaped", () => {
    fc.assert(
      fc.property(fc.oneof(fc.integer(), fc.double(), fc.boolean(), fc.bigInt()), (v) => {
        expect(escapeHtml(v)).toBe(escapeHtml(String(v)));
      }),
    );
    expect(escapeHtml({ toString: () => '<img src=x onerror="a">' })).toBe(
      "&lt;img src=x onerror=&quot;a&quot;&gt;",
    );
  });
});

describe("the html tag and pre: every value escaped, in content and in attributes", () => {
  it("a string, a number, an array of them: escaped; only Html goes in as it is", () => {
    fc.assert(
      fc.property(anyText, anyText, fc.array(anyText, { maxLength: 3 }), (a, b, list) => {
        const page = html`<p title="${a}" data-x="${b}">${a}<b>${list}</b></p>`;
        expect(page).toBeInstanceOf(Html);
        const esc = escapeHtml;
        expect(page.text).toBe(
          `<p title="${esc(a)}" data-x="${esc(b)}">${esc(a)}<b>${list.map((x) => esc(x)).join("")}</b></p>`,
        );
        // the only tags and quotes are the template's own
        const template = '<p title="" data-x=""><b></b></p>';
        expect(page.text.replace(/[^<>"]/g, ""), JSON.stringify([a, b, list])).toBe(
          template.replace(/[^<>"]/g, ""),
        );
      }),
      { numRuns: 1000 },
    );
  });

  it("pre escapes its text and its class", () => {
    fc.assert(
      fc.property(anyText, anyText, (text, cls) => {
        const out = pre(text, cls).text;
        expect(out).toBe(`<pre class="${escapeHtml(cls)}">${escapeHtml(text)}</pre>`);
        expect(out.replace(/[^<>"]/g, "")).toBe('<pre class=""></pre>'.replace(/[^<>"]/g, ""));
      }),
      { numRuns: 1000 },
    );
  });
});
