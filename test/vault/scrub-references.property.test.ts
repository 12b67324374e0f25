// The scrubber of server output (src/vault/scrub.ts) against the escapes HTML templates and
// redirects write, in any mix with the others it reads: each character of a released value, and
// of its base64 (whole, or inside longer base64 at any alignment), written as itself, an HTML
// reference (decimal or hex in either case, with or without leading zeros, or a name: `&#43;`,
// `&#x2b;`, `&#X002B;`, `&plus;`), a JSON `\uXXXX` escape in either case, or a URL escape once or
// twice (`%2B`, `%252b`). In plain text (a stderr line), in a JSON message's string, and in one
// whose `&` are written `\u0026` (as Go's encoding/json writes an HTML page). fast-check searches
// for a value, a spelling and text around it that let the value (or the base64 characters it
// alone determines) through.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { NAMED, REF_DIGITS } from "../../src/vault/htmlReferences.js";
import { ReleasedValues } from "../../src/vault/scrub.js";
import { scrubbedEveryWay } from "./scrubbedEveryWay.js";

const MARK = "[redacted:api]";

/** One way of writing character `c` (a code point), chosen by `pick`. */
function spellChar(c: string, pick: number): string {
  const code = c.codePointAt(0)!;
  const bytes = [...Buffer.from(c, "utf8")];
  const hex = (n: number, width: number, upper: boolean) => {
    const h = n.toString(16).padStart(width, "0");
    return upper ? h.toUpperCase() : h;
  };
  const zeros = "0".repeat((pick >> 3) % (REF_DIGITS - 6));
  const upper = (pick >> 5) % 2 === 0;
  switch (pick % 8) {
    case 1:
      return `&#${zeros}${code};`;
    case 2:
      return `&#${upper ? "X" : "x"}${zeros}${hex(code, 1, (pick >> 6) % 2 === 0)};`;
    case 3: {
      const names = NAMED.get(c);
      return names ? `&${names[(pick >> 7) % names.length]};` : `&#x${hex(code, 4, upper)};`;
    }
    case 4:
      return Array.from({ length: c.length }, (_, i) => `\\u${hex(c.charCodeAt(i), 4, upper)}`).join("");
    case 5:
      return bytes.map((b) => `%${hex(b, 2, upper)}`).join("");
    case 6:
      return bytes.map((b) => `%25${hex(b, 2, upper)}`).join("");
    default:
      return c;
  }
}

/**
 * `s` with each character written as `picks` choose, in turn. A `"` or `\` is not left as itself
 * beside escapes of the kind that would read it otherwise, as no encoder leaves it so: beside
 * JSON escapes a `\` is one too (a `\` kept before `\u0061` reads as `\\` and `u0061`, whatever
 * references do), and beside URL escapes a `"` or `\` is one too (one kept is written `\"` or
 * `\\` inside a JSON string, and the value percent-encoded around it is not caught there).
 */
function spell(s: string, picks: number[]): string {
  const chars = [...s];
  const kind = (i: number) => picks[i % picks.length]! % 8;
  const json = chars.some((_, i) => kind(i) === 4);
  const url = chars.some((_, i) => kind(i) === 5 || kind(i) === 6);
  return chars
    .map((c, i) => {
      const raw = kind(i) === 0 || kind(i) === 7;
      if (raw && json && c === "\\") return spellChar(c, 4);
      if (raw && url && (c === '"' || c === "\\")) return spellChar(c, 5);
      return spellChar(c, picks[i % picks.length]!);
    })
    .join("");
}

/**
 * Base64 `b64` with each character written as itself, an HTML reference or a `\u` escape, as
 * `picks` choose, and then, if `url` says so, its `+`, `/` and `=` URL-escaped, once or twice,
 * as encoders that escape them write them (all of them: other mixes of URL escapes in base64 are
 * not looked for).
 */
function spellBase64(b64: string, picks: number[], url: 0 | 1 | 2): string {
  const escaped = [...b64].map((c) => (url > 0 && "+/=".includes(c) ? spellChar(c, url === 1 ? 5 : 6) : c));
  return escaped
    .map((e, i) => (e.length > 1 ? e : spellChar(e, [0, 1, 2, 3, 4][picks[i % picks.length]! % 5]!)))
    .join("");
}

/**
 * `text` with every escape spellChar writes read once (the test's own reading): as UTF-8 bytes in
 * latin1, one character a byte.
 */
function decoded(text: string): string {
  const names = new Map([...NAMED].flatMap(([c, ns]) => ns.map((n) => [n, c] as const)));
  const utf8 = (s: string) => Buffer.from(s, "utf8").toString("latin1");
  const units = (u: string) =>
    String.fromCharCode(
      ...u
        .split("\\u")
        .slice(1)
        .map((h) => Number.parseInt(h, 16)),
    );
  let out = "";
  const re =
    /&#[xX]([0-9a-fA-F]{1,10});|&#([0-9]{1,10});|&([A-Za-z]+);|((?:\\u[0-9a-fA-F]{4})+)|%25([0-9a-fA-F]{2})|%([0-9a-fA-F]{2})/g;
  let at = 0;
  for (let m = re.exec(text); m !== null; m = re.exec(text)) {
    out += utf8(text.slice(at, m.index));
    at = m.index + m[0].length;
    const [whole, h, d, name, u, twice, once] = m;
    if (h !== undefined) out += utf8(String.fromCodePoint(Number.parseInt(h, 16)));
    else if (d !== undefined) out += utf8(String.fromCodePoint(Number.parseInt(d, 10)));
    else if (name !== undefined) out += utf8(names.get(name) ?? whole);
    else if (u !== undefined) out += utf8(units(u));
    else out += String.fromCharCode(Number.parseInt(twice ?? once!, 16));
  }
  return out + utf8(text.slice(at));
}

const tricky = fc.constantFrom(
  ..."abcXYZ019".split(""),
  ..."+/=&;#%\\<>\"'[]{}".split(""),
  " ",
  "é",
  "中",
  "😀",
);
const valueArb = fc.string({ unit: tricky, minLength: 4, maxLength: 24 });
const around = fc
  .array(fc.constantFrom(" ", "\n", "<p>", "&", "&amp;", "#", ";", "%", "%25", "x", "ab"), { maxLength: 5 })
  .map((a) => a.join(""));
const picks = fc.array(fc.nat(), { minLength: 1, maxLength: 12 });

describe("a released value written with HTML references, `\\u` escapes and URL escapes once or twice, any mix", () => {
  it("property: the value, any of its characters so written: none is left outside the markers", () => {
    fc.assert(
      fc.property(valueArb, picks, around, around, (value, p, before, after) => {
        const r = new ReleasedValues();
        r.add("api", value);
        const written = spell(value, p);
        const value8 = Buffer.from(value, "utf8").toString("latin1");
        for (const out of scrubbedEveryWay(r, before, written, after)) {
          expect(out).not.toContain(written);
          for (const piece of out.split(MARK)) expect(decoded(piece), out).not.toContain(value8);
        }
      }),
      { numRuns: 500 },
    );
  });

  it("property: its base64, whole or inside longer base64 at any alignment, any of its characters so written", () => {
    fc.assert(
      fc.property(
        valueArb.filter((v) => Buffer.byteLength(v) >= 7),
        fc.string({ maxLength: 5 }),
        fc.boolean(),
        picks,
        fc.constantFrom(0, 1, 2),
        around,
        (value, prefix, urlSafe, p, url, before) => {
          const r = new ReleasedValues();
          r.add("api", value);
          const bytes = Buffer.from(value, "utf8");
          const offset = Buffer.byteLength(prefix);
          let b64 = Buffer.concat([Buffer.from(prefix, "utf8"), bytes]).toString("base64");
          let own = b64.slice(Math.ceil((8 * offset) / 6), Math.floor((8 * (offset + bytes.length)) / 6));
          if (urlSafe) {
            b64 = b64.replaceAll("+", "-").replaceAll("/", "_");
            own = own.replaceAll("+", "-").replaceAll("/", "_");
          }
          const written = spellBase64(b64, p, url as 0 | 1 | 2);
          // (fragments under 8 characters are not looked for: they would match ordinary text)
          for (const out of scrubbedEveryWay(r, before, written, before))
            if (own.length >= 8)
              for (const piece of out.split(MARK)) expect(decoded(piece), out).not.toContain(own);
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe("a long value (searched without a regex built from it) written with references", () => {
  it("a 2,000-character value with every `+`, `/`, `=` a reference, and URL-encoded twice: markers only", () => {
    const value = "k+/=".repeat(500);
    const r = new ReleasedValues();
    r.add("api", value);
    const refs = value.replace(/[+/=]/g, (c) => `&#x${c.charCodeAt(0).toString(16)};`);
    const twice = encodeURIComponent(encodeURIComponent(value));
    for (const written of [refs, twice, value.replace(/\+/g, "&plus;")]) {
      expect(r.scrubText(`a ${written} b`)).toBe(`a ${MARK} b`);
      const line = JSON.stringify({ jsonrpc: "2.0", id: 1, result: { text: `a ${written} b` } });
      expect(JSON.parse(r.scrubLine(line)).result.text).toBe(`a ${MARK} b`);
    }
  });
});
