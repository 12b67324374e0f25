// The egress proxy's echo check (src/vault/egress/echo.ts) against two more ways an upstream's
// answer can write a released value back:
// - a character written as an HTML reference that is then URL-escaped (`%26%2343%3B` for `+`, as a
//   URL built from HTML-escaped text carries it; `%2526%2523x2b%253B` escaped again), mixed with
//   every other spelling the check reads (deepSpelling.ts);
// - the value's base64 (whole, or inside longer base64 at any alignment, as a Basic auth echo)
//   with any of its characters escaped, its letters and digits too (`\u0041`, `%41`, `%2541`,
//   `&#65;`, `&#x41;`, `&amp;#65;`, `\\u0041`, `%26%2365%3B`), as an encoder that escapes more
//   than it must writes them; and its two letters `fj` as the one HTML name of both, `&fjlig;`,
//   which an HTML reader decodes to both (escaped again, `&amp;fjlig;`, or URL-escaped,
//   `%26fjlig%3B`): the values are built so that their base64 holds `fj` at their alignment.
// fast-check searches for a value, a spelling, text around it and cuts of the body that let the
// value (or the base64 characters it alone determines, 8 or more) through. Before, both reached
// the server: a URL-escaped reference was not read, and base64 letters were looked for only as
// themselves; and a base64 `fj` written `&fjlig;` was not read as two.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { EchoScrubber, type Spelling, spellingsOf, withoutValues } from "../../src/vault/egress/echo.js";
import { NAMED } from "../../src/vault/htmlReferences.js";
import { KINDS, readDeep, spellDeep } from "./deepSpelling.js";

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

/**
 * `c` (one UTF-16 unit or a pair) as an HTML reference (decimal, hex in either case, or a name)
 * whose `&`, `#` and `;` are URL-escaped 1 to 5 times, as encodeURIComponent writes HTML-escaped
 * text (its digits, letters and `x` as themselves); other characters of the reference kept.
 */
function urlEscapedReference(c: string, pick: number): string {
  const code = c.codePointAt(0)!;
  const upper = (pick >> 3) % 2 === 0;
  const zeros = "0".repeat((pick >> 4) % 4);
  const names = NAMED.get(c);
  let ref: string;
  switch (pick % 3) {
    case 0:
      ref = `&#${zeros}${code};`;
      break;
    case 1: {
      const h = code.toString(16);
      ref = `&#${upper ? "X" : "x"}${zeros}${upper ? h.toUpperCase() : h};`;
      break;
    }
    default:
      ref = names ? `&${names[(pick >> 6) % names.length]};` : `&#${code};`;
  }
  const times = 1 + ((pick >> 8) % 5);
  const hexCase = (h: string) => ((pick >> 2) % 2 === 0 ? h : h.toLowerCase());
  return ref.replace(
    /[&#;]/g,
    (ch) => `%${"25".repeat(times - 1)}${hexCase(ch.charCodeAt(0).toString(16).toUpperCase())}`,
  );
}

/** One way of writing `c`: a URL-escaped reference (one pick in three), or any spelling spellDeep writes but `&#37;2B`. */
function spellAny(c: string, pick: number, next: string): string {
  if (pick % 3 === 0) return urlEscapedReference(c, pick >> 2);
  const kind = (pick >> 2) % KINDS;
  // (kind 7, `&#37;2B`, a URL escape whose `%` is a reference: not read by the proxy, a documented limit)
  return spellDeep(c, kind === 7 ? (pick >> 2) + 1 : pick >> 2, next);
}

/** What `&` is written as before a name at each reading of a reference written with references. */
const AMPERSANDS = ["&amp;", "&AMP;", "&#38;", "&#x26;", "&amp"];

/**
 * `fj` as the one name HTML defines for both, `&fjlig;`, as `pick` chooses: as itself, its `&`
 * written with references once to three times more (`&amp;fjlig;`, `&#38;amp;fjlig;`), or its
 * `&` and `;` URL-escaped one to five times (`%26fjlig%3B`, `%2526fjlig%253B`), either hex case.
 */
function fjName(pick: number): string {
  switch (pick % 3) {
    case 0:
      return "&fjlig;";
    case 1: {
      let ref = "&fjlig;";
      for (let k = 0; k < 1 + ((pick >> 2) % 3); k++)
        ref = `${AMPERSANDS[(pick >> (4 + k)) % AMPERSANDS.length]}${ref.slice(1)}`;
      return ref;
    }
    default: {
      const again = "25".repeat((pick >> 2) % 5);
      return (pick >> 5) % 2 === 0 ? `%${again}26fjlig%${again}3B` : `%${again}26fjlig%${again}3b`;
    }
  }
}

/**
 * `s` with each character written as `picks` choose, from its end (a bare reference looks at
 * what follows); with `pairs`, an `f` before a `j` written with it as `&fjlig;` (fjName) where
 * its pick says so, one time in two.
 */
function spellAll(s: string, picks: number[], keep?: RegExp, pairs = false): string {
  const chars = [...s];
  const out: string[] = new Array(chars.length);
  for (let i = chars.length - 1; i >= 0; i--) {
    const c = chars[i]!;
    const pick = picks[i % picks.length]!;
    const before = picks[(i - 1 + picks.length) % picks.length]!;
    if (pairs && c === "j" && chars[i - 1] === "f" && (before >> 20) % 2 === 0) {
      out[i] = "";
      out[--i] = fjName(before >> 21);
      continue;
    }
    out[i] = keep?.test(c) ? c : spellAny(c, pick, out[i + 1] ?? "");
  }
  return out.join("");
}

/**
 * `text` with every escape read as deep as the spellings here write them: URL escapes first read,
 * then references again; and `&fjlig;`, once all of them are read, as the two letters it stands for.
 */
const readAll = (text: string) => readDeep(readDeep(text)).replaceAll("&fjlig;", "fj");

/**
 * `value` with `~` and a character from `0` to `?` put in at each of `at` (a place in the value,
 * and the character), after as many `a` as it takes for the `~` to start a group of three bytes
 * of the data it is in (`prefixBytes` before it): each such two bytes' base64 starts `fj`.
 */
function withFj(value: string, prefixBytes: number, at: number[]): string {
  let v = value;
  for (const n of at) {
    const chars = [...v];
    const k = n % (chars.length + 1);
    const head = chars.slice(0, k).join("");
    const pad = "a".repeat((3 - ((prefixBytes + Buffer.byteLength(head)) % 3)) % 3);
    v = `${head}${pad}~${String.fromCharCode(0x30 + ((n >> 8) % 16))}${chars.slice(k).join("")}`;
  }
  return v;
}

const picks = fc.array(fc.nat(), { minLength: 1, maxLength: 12 });
const around = fc
  .array(fc.constantFrom(" ", "\n", "<p>", "&", "&amp;", "#", ";", "%", "%25", "%26", "\\", "\\u00", "x"), {
    maxLength: 6,
  })
  .map((a) => a.join(""));
const cuts = fc.array(fc.nat(), { maxLength: 6 });
const PLACEHOLDER = /portcullis-placeholder(?::|%(?:25)*3A)api/;

describe("a released value with characters written as URL-escaped HTML references (`%26%2343%3B`)", () => {
  it("`+` as `%26%2343%3B`, `%26%23x2B%3B`, `%26plus%3B` and `%2526%252343%253B`", () => {
    const value = "sk+live+token+1234";
    const s = spellingsOf([["api", value]]);
    for (const plus of ["%26%2343%3B", "%26%23x2B%3B", "%26%23X2b%3b", "%26plus%3B", "%2526%252343%253B"]) {
      const body = Buffer.from(`?next=${value.replaceAll("+", plus)}&x=1`, "latin1");
      expect(withoutValues(body, s).toString("latin1"), plus).toMatch(
        /^\?next=portcullis-placeholder%(25)?3Aapi&x=1$/,
      );
    }
  });

  it("property: any mix with the other spellings: none reaches the server", () => {
    fc.assert(
      fc.property(
        fc.string({ unit: "binary", minLength: 4, maxLength: 20 }),
        picks,
        around,
        around,
        cuts,
        (value, p, before, after, at) => {
          const s = spellingsOf([["api", value]]);
          const written = spellAll(value, p);
          const body = Buffer.from(`${before}${written}${after}`, "utf8");
          const out = streamed(body, at, s);
          expect(out.equals(withoutValues(body, s))).toBe(true);
          // alone, the whole of it is the value
          const alone = withoutValues(Buffer.from(written, "utf8"), s).toString("latin1");
          expect(alone).toMatch(new RegExp(`^${PLACEHOLDER.source}$`));
          const value8 = Buffer.from(value, "utf8").toString("latin1");
          for (const piece of out.toString("latin1").split(PLACEHOLDER))
            expect(readAll(piece)).not.toContain(value8);
        },
      ),
      { numRuns: 500 },
    );
  });
});

describe("a released value's base64 with any of its characters escaped, letters and digits too", () => {
  it("`\\u0041`, `%41`, `&#65;` for the letters of a Basic auth echo", () => {
    const value = "sk-live-Qz7w9XvB2mN4";
    const s = spellingsOf([["api", value]]);
    const b64 = Buffer.from(`user:${value}`).toString("base64");
    const own = determined(Buffer.from(value), 5 % 3);
    for (const write of [
      (c: string) => `\\u00${c.charCodeAt(0).toString(16)}`,
      (c: string) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
      (c: string) => `&#${c.charCodeAt(0)};`,
    ]) {
      const echoed = [...b64].map((c, i) => (i % 3 === 1 ? write(c) : c)).join("");
      const out = withoutValues(Buffer.from(`{"auth":"Basic ${echoed}"}`, "latin1"), s).toString("latin1");
      expect(readAll(out), echoed).not.toContain(own);
    }
  });

  it("`fj` as `&fjlig;`, `&amp;fjlig;` and `%26fjlig%3B` in a Basic auth echo", () => {
    const value = "s~0~5~7-live-tok9Qz";
    const s = spellingsOf([["api", value]]);
    const b64 = Buffer.from(`user:${value}`).toString("base64");
    const own = determined(Buffer.from(value), 5 % 3);
    expect(own).toContain("fj");
    for (const name of ["&fjlig;", "&amp;fjlig;", "%26fjlig%3B", "%2526fjlig%253b"]) {
      const echoed = b64.replaceAll("fj", name);
      const out = withoutValues(Buffer.from(`{"auth":"Basic ${echoed}"}`, "latin1"), s).toString("latin1");
      expect(readAll(out), echoed).not.toContain(own);
    }
  });

  it("property: whole or inside longer base64 at any alignment, each character any way, `fj` as `&fjlig;` too: none reaches the server", () => {
    fc.assert(
      fc.property(
        fc.string({ unit: "binary", minLength: 7, maxLength: 30 }),
        fc.string({ maxLength: 5 }),
        fc.array(fc.nat(), { maxLength: 3 }),
        fc.boolean(),
        picks,
        around,
        cuts,
        (generated, prefix, fj, urlSafe, p, before, at) => {
          const value = withFj(generated, Buffer.byteLength(prefix), fj);
          const s = spellingsOf([["api", value]]);
          const bytes = Buffer.from(value, "utf8");
          const data = Buffer.concat([Buffer.from(prefix, "utf8"), bytes]);
          let b64 = data.toString("base64");
          if (urlSafe) b64 = b64.replaceAll("+", "-").replaceAll("/", "_");
          const written = spellAll(b64, p, undefined, true);
          const body = Buffer.from(`${before}${written}${before}`, "latin1");
          const out = streamed(body, at, s);
          expect(out.equals(withoutValues(body, s))).toBe(true);
          let fragment = determined(bytes, Buffer.byteLength(prefix) % 3);
          if (urlSafe) fragment = fragment.replaceAll("+", "-").replaceAll("/", "_");
          // (fragments under 8 characters are not looked for: they would match ordinary text)
          if (fragment.length >= 8) expect(readAll(out.toString("latin1"))).not.toContain(fragment);
        },
      ),
      { numRuns: 500 },
    );
  });
});
