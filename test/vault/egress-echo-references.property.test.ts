// The egress proxy's echo check (src/vault/egress/echo.ts) against the escapes HTML templates,
// JSON encoders and redirects write, in any mix: each character of a released value written as
// itself, an HTML reference (decimal or hex in either case, with or without leading zeros, or a
// name: `&#43;`, `&#x2b;`, `&#X002B;`, `&plus;`), a JSON `\uXXXX` escape in either case, or a
// URL escape once or twice (`%2B`, `%252b`); and each `+`, `/`, `=` (`-`, `_`) of its base64
// (whole, or inside longer base64 at any alignment, as a Basic auth echo) so. fast-check searches
// for a value, a spelling, text around it and cuts of the body that let the value (or the base64
// characters it alone determines) through.
// And a value with characters outside ASCII, and two characters that one HTML name stands for
// (`fj`: `&fjlig;`, `<` and U+20D2: `&nvlt;`), each written by any name it has.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { EchoScrubber, type Spelling, spellingsOf, withoutValues } from "../../src/vault/egress/echo.js";
import { allNames, allPairNames, namedPair } from "../../src/vault/htmlNames.js";
import { NAMED, REF_DIGITS } from "../../src/vault/htmlReferences.js";

/** One way of writing character `c` (a code point), chosen by `pick` (a number from fast-check). */
function spellChar(c: string, pick: number): string {
  const code = c.codePointAt(0)!;
  const bytes = [...Buffer.from(c, "utf8")];
  const hex = (n: number, width: number, upper: boolean) => {
    const h = n.toString(16).padStart(width, "0");
    return upper ? h.toUpperCase() : h;
  };
  // leading zeros, as many as the digits read allow (a code point takes up to 7 decimal digits)
  const zeros = "0".repeat((pick >> 3) % (REF_DIGITS - 6));
  const upper = (pick >> 5) % 2 === 0;
  switch (pick % 8) {
    case 0:
      return c;
    case 1:
      return `&#${zeros}${code};`;
    case 2:
      return `&#${upper ? "X" : "x"}${zeros}${hex(code, 1, (pick >> 6) % 2 === 0)};`;
    case 3: {
      const names = NAMED.get(c);
      return names ? `&${names[(pick >> 7) % names.length]};` : `&#x${hex(code, 4, upper)};`;
    }
    case 4:
      return c.length === 2 ? c : `\\u${hex(code, 4, upper)}`;
    case 5:
      return bytes.map((b) => `%${hex(b, 2, upper)}`).join("");
    case 6:
      return bytes.map((b) => `%25${hex(b, 2, upper)}`).join("");
    default:
      return c;
  }
}

/** `s` with each character written as `picks` choose, in turn. */
function spell(s: string, picks: number[]): string {
  return [...s].map((c, i) => spellChar(c, picks.length === 0 ? 0 : picks[i % picks.length]!)).join("");
}

/**
 * `text` (latin1, one byte a character) with every escape spellChar writes read once: what the
 * bytes spell. The test's own reading, not the proxy's.
 */
function decoded(text: string): string {
  const names = new Map([...NAMED].flatMap(([c, ns]) => ns.map((n) => [n, c] as const)));
  const utf8 = (s: string) => Buffer.from(s, "utf8").toString("latin1");
  return text.replace(
    /&#[xX]([0-9a-fA-F]{1,10});|&#([0-9]{1,10});|&([A-Za-z]+);|\\u([0-9a-fA-F]{4})|%25([0-9a-fA-F]{2})|%([0-9a-fA-F]{2})/g,
    (m, h, d, name, u, twice, once) => {
      if (h !== undefined) return utf8(String.fromCodePoint(Number.parseInt(h, 16)));
      if (d !== undefined) return utf8(String.fromCodePoint(Number.parseInt(d, 10)));
      if (name !== undefined) return names.has(name) ? names.get(name)! : m;
      if (u !== undefined) return utf8(String.fromCharCode(Number.parseInt(u, 16)));
      return String.fromCharCode(Number.parseInt(twice ?? once, 16));
    },
  );
}

/** `body` through one scrubber, cut at `cuts`. */
function streamed(body: Buffer, cuts: number[], s: readonly Spelling[]): Buffer {
  const scrubber = new EchoScrubber(s);
  const out: Buffer[] = [];
  let at = 0;
  for (const c of [...new Set(cuts.map((c) => c % (body.length + 1)))].sort((a, b) => a - b)) {
    out.push(scrubber.push(body.subarray(at, c)));
    at = c;
  }
  out.push(scrubber.push(body.subarray(at)), scrubber.end());
  return Buffer.concat(out);
}

/** The base64 characters that `bytes` alone determine at byte offset `offset` of longer data. */
function determined(bytes: Buffer, offset: number): string {
  const encoded = Buffer.concat([Buffer.alloc(offset), bytes]).toString("base64");
  return encoded.slice(Math.ceil((8 * offset) / 6), Math.floor((8 * (offset + bytes.length)) / 6));
}

// text around the value: characters that start escapes, and ends of them, so that a spelling can
// run into its neighbours
const around = fc
  .array(fc.constantFrom(" ", "\n", "<p>", "&", "&amp;", "#", ";", "%", "%25", "\\", "\\u00", "x"), {
    maxLength: 6,
  })
  .map((a) => a.join(""));
const picks = fc.array(fc.nat(), { minLength: 1, maxLength: 12 });
const cuts = fc.array(fc.nat(), { maxLength: 6 });

describe("a released value echoed with HTML references, `\\u` escapes and URL escapes once or twice, any mix", () => {
  it("property: the value itself, any of its characters so written: none reaches the client", () => {
    fc.assert(
      fc.property(
        fc.string({ unit: "binary", minLength: 4, maxLength: 24 }),
        picks,
        around,
        around,
        cuts,
        (value, p, before, after, at) => {
          const s = spellingsOf([["api", value]]);
          const written = spell(value, p);
          const body = Buffer.from(`${before}${written}${after}`, "utf8");
          const out = streamed(body, at, s);
          expect(out.equals(withoutValues(body, s))).toBe(true);
          const shown = out.toString("latin1");
          expect(shown).not.toContain(Buffer.from(written, "utf8").toString("latin1"));
          const value8 = Buffer.from(value, "utf8").toString("latin1");
          for (const piece of shown.split(/portcullis-placeholder(?::|%3A)api/))
            expect(decoded(piece)).not.toContain(value8);
        },
      ),
      { numRuns: 600 },
    );
  });

  it("property: its base64, whole or inside longer base64 at any alignment, its `+`, `/`, `=` so written", () => {
    fc.assert(
      fc.property(
        fc.string({ unit: "binary", minLength: 7, maxLength: 30 }),
        fc.string({ maxLength: 5 }),
        fc.boolean(),
        picks,
        around,
        cuts,
        (value, prefix, urlSafe, p, before, at) => {
          const s = spellingsOf([["api", value]]);
          const bytes = Buffer.from(value, "utf8");
          const data = Buffer.concat([Buffer.from(prefix, "utf8"), bytes]);
          let b64 = data.toString("base64");
          if (urlSafe) b64 = b64.replaceAll("+", "-").replaceAll("/", "_");
          // (its letters and digits as themselves: no encoder escapes those, and the proxy
          // finds an occurrence from where they are)
          const written = [...b64]
            .map((c, i) => (/[A-Za-z0-9]/.test(c) ? c : spellChar(c, p[i % p.length]!)))
            .join("");
          const body = Buffer.from(`${before}${written}${before}`, "latin1");
          const out = streamed(body, at, s);
          expect(out.equals(withoutValues(body, s))).toBe(true);
          let fragment = determined(bytes, Buffer.byteLength(prefix) % 3);
          if (urlSafe) fragment = fragment.replaceAll("+", "-").replaceAll("/", "_");
          // (fragments under 8 characters are not looked for: they would match ordinary text)
          if (fragment.length >= 8) expect(decoded(out.toString("latin1"))).not.toContain(fragment);
        },
      ),
      { numRuns: 600 },
    );
  });
});

describe("a base64 form that starts with a character that may be escaped", () => {
  it("`?…` after two bytes: its own base64 starts with `/`, written `&#47;`, `%252F` or `\\u002f`, cut anywhere", () => {
    const value = "?secret-token-1234>>";
    const s = spellingsOf([["api", value]]);
    const own = determined(Buffer.from(value), 2);
    expect(own[0]).toBe("/");
    const b64 = Buffer.from(`ab${value}`).toString("base64");
    for (const slash of ["&#47;", "&sol;", "%252F", "\\u002f", "&#x00002f;"]) {
      const body = Buffer.from(`x ${b64.replaceAll("/", slash).replaceAll("+", "&#43;")} y`, "latin1");
      const whole = withoutValues(body, s);
      expect(decoded(whole.toString("latin1")), slash).not.toContain(own);
      for (let cut = 0; cut <= body.length; cut++) expect(streamed(body, [cut], s).equals(whole)).toBe(true);
    }
  });
});

// characters outside ASCII that HTML names, each by every name it has (`é`: `eacute`; `½`:
// `frac12`, `half`; `∳`: `awconint`, `CounterClockwiseContourIntegral`)
const NON_ASCII_NAMES = new Map<string, string[]>();
for (const [name, code] of allNames())
  if (code >= 0x80)
    NON_ASCII_NAMES.set(String.fromCodePoint(code), [
      ...(NON_ASCII_NAMES.get(String.fromCodePoint(code)) ?? []),
      name,
    ]);
const namedChar = fc.constantFrom(...NON_ASCII_NAMES.keys());
// and two characters that one name stands for (`fj`: `fjlig`; `<` and U+20D2: `nvlt`; U+205F
// and U+200A: `ThickSpace`), by every such name
const PAIR_NAMES = new Map<string, string[]>();
for (const [name, [a, b]] of allPairNames()) {
  const two = String.fromCodePoint(a, b);
  PAIR_NAMES.set(two, [...(PAIR_NAMES.get(two) ?? []), name]);
}
const namedTwo = fc.constantFrom(...PAIR_NAMES.keys());

/**
 * `c` (a character, or two that a name stands for) written as chance picks: itself (each of two
 * as spellNamed writes it), or a name of it as is, escaped again (`&amp;`) or URL-escaped
 * (`%26eacute%3B`, `%26fjlig%3B`).
 */
function spellNamed(c: string, pick: number): string {
  const pairNames = PAIR_NAMES.get(c);
  if (pairNames !== undefined && pick % 4 === 0) return [...c].map((x) => spellNamed(x, pick >> 4)).join("");
  const names = pairNames ?? NON_ASCII_NAMES.get(c);
  if (names === undefined) return c;
  const n = names[(pick >> 2) % names.length];
  return [c, `&${n};`, `&amp;${n};`, `%26${n}%3B`][pick % 4]!;
}

/** The test's own reading of what spellNamed writes. */
function readNamed(text: string): string {
  return text
    .replace(/%26([A-Za-z0-9]+)%3B/g, "&$1;")
    .replace(/&amp;([A-Za-z0-9]+;)/g, "&$1")
    .replace(/&([A-Za-z0-9]+);/g, (m, n) => {
      const two = namedPair(n);
      if (two !== undefined) return String.fromCodePoint(...two);
      const code = allNames().get(n);
      return code === undefined || code < 0x80 ? m : String.fromCodePoint(code);
    });
}

describe("a released value with characters outside ASCII, each written by any HTML name it has", () => {
  it("property: none reaches the client, the body cut anywhere (two characters one name stands for, by it)", () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(namedChar, namedTwo, fc.constantFrom("a", "-", "9", "&", ";", "%", "f", "j")), {
          minLength: 3,
          maxLength: 12,
        }),
        picks,
        around,
        around,
        cuts,
        (chars, p, before, after, at) => {
          const value = chars.join("");
          fc.pre([...value].some((c) => NON_ASCII_NAMES.has(c)) || chars.some((c) => PAIR_NAMES.has(c)));
          const s = spellingsOf([["api", value]]);
          const written = chars.map((c, i) => spellNamed(c, p[i % p.length]!)).join("");
          const body = Buffer.from(`${before}${written}${after}`, "utf8");
          const out = streamed(body, at, s);
          expect(out.equals(withoutValues(body, s))).toBe(true);
          const alone = withoutValues(Buffer.from(written, "utf8"), s).toString("utf8");
          expect(alone).toMatch(/^portcullis-placeholder(:|%3A)api$/);
          for (const piece of out.toString("utf8").split(/portcullis-placeholder(?::|%3A)api/))
            expect(readNamed(piece)).not.toContain(value);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe("two characters of a value written as the one name of both, the body cut at every byte", () => {
  it("a value that starts with `fj` and ends with `≂` and U+0338: each name nested, URL-escaped, the longest", () => {
    const value = "fjord-token-9\u2242\u0338";
    const s = spellingsOf([["api", value]]);
    const rest = "ord-token-9";
    for (const [first, last] of [
      ["&fjlig;", "&nesim;"],
      ["&amp;amp;amp;fjlig;", "&AMP;NotEqualTilde;"],
      ["%2525252526fjlig%252525253B", "%26nesim%3B"],
      ["&#38;fjlig;", "&amp;#38;NotEqualTilde;"],
    ] as const) {
      // (text of the page's own before and after: an `&` that starts no name, a `%`)
      const body = Buffer.from(`a &amp; ${first}${rest}${last} %20 b`, "utf8");
      const whole = withoutValues(body, s);
      expect(whole.toString("utf8"), first).toMatch(
        /^a &amp; portcullis-placeholder(:|%[0-9A-F]*3A)api %20 b$/,
      );
      for (let cut = 0; cut <= body.length; cut++)
        expect(streamed(body, [cut], s).equals(whole), `${first} cut at ${cut}`).toBe(true);
    }
  });
  it("a name of two characters is not read as its first alone: `ab&nesim;x…` is `ab≂` U+0338 `x…`, no value `ab≂x…`", () => {
    for (const value of ["ab\u2242x-token-123", "ab<\u2242-token-123"]) {
      const s = spellingsOf([["api", value]]);
      // (near the end of the body and far from it: the walk reads a character both ways near it)
      for (const tail of ["", " ".repeat(120)])
        for (const body of [
          "ab&nesim;x-token-123",
          "ab&amp;NotEqualTilde;x-token-123",
          "ab&nvlt;\u2242-token-123",
        ]) {
          const b = Buffer.from(body + tail, "utf8");
          expect(withoutValues(b, s).toString("utf8"), `${value} in ${body}`).toBe(body + tail);
        }
      // and the value itself, with its character outside ASCII named alone (`&esim;`), is found
      const named = value.replace("\u2242", "&esim;");
      expect(withoutValues(Buffer.from(named, "utf8"), s).toString("utf8")).toBe(
        "portcullis-placeholder:api",
      );
    }
  });
});
