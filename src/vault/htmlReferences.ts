/**
 * HTML character references, as both scrubbers of released values read them (the egress proxy's
 * echo check, src/vault/egress/echo.ts, and the scrubber of server output, src/vault/scrub.ts).
 * An HTML template writes a character of text as a reference: Go's html/template writes `+` as
 * `&#43;`, others write `&#x2B;`, `&#x2b;` or `&plus;`; an upstream's HTML error page that quotes
 * a token, or a server that renders one into a page, spells it so.
 *
 * Read here, as HTML's parser reads them in text: a numeric reference, decimal (`&#43;`) or hex
 * (`&#x2B;`, `&#X2b;`), with up to REF_DIGITS digits (leading zeros included), with its `;` or
 * without it (`&#43` before a character that is no digit: the parser takes every digit there is);
 * a named reference HTML defines for an ASCII character (NAMED) with its `;`, and the legacy names
 * HTML's parser reads without one too (LEGACY: `&amp`, `&lt`, `&quot`…, the longest that starts
 * the letters there, as `&ampx` reads `&x`); with `names` "all" (the scrubber of server output),
 * every name HTML defines for one character and every legacy name (src/vault/htmlNames.ts:
 * `&eacute;`, `&frac12`: the echo check reads them for a value's characters outside ASCII), and
 * every name HTML defines for two characters, read as both (`&fjlig;`, "fj": a reference's
 * `second`; the echo check reads them for two adjacent characters of a value).
 * And a reference written with references, to REFERENCE_READINGS readings (eachNestedReference:
 * `&amp;#43;`, an HTML page escaped again, reads `+`). Not read: a numeric
 * reference of more digits; with "ascii", a name for a character outside ASCII.
 */

import {
  LONGEST_ANY_NAME,
  LONGEST_LEGACY_NAME,
  legacyCodePoint,
  namedCodePoint,
  namedPair,
} from "./htmlNames.js";

/**
 * The most digits read in one numeric reference (leading zeros included). HTML's parser reads any
 * number; a bound is needed because the egress proxy's stream keeps back as many bytes as the
 * longest spelling of a value may take (src/vault/egress/echo.ts), and 16 digits is more than any
 * encoder pads a reference to (Go and Python write none, some templates pad to 4 or 7 digits):
 * past it the padding is a server's own doing, as reversing a value would be.
 */
export const REF_DIGITS = 16;

/**
 * The most times a text's escapes are read, one reading after another (HTML references and `%25`
 * here and in src/vault/referenceSpelling.ts): `&amp;amp;amp;#43;` (an HTML page escaped three
 * times more) reads `+` in four. Each reading is one more pass over the text, and a reading only
 * shortens it, so text built to nest escapes without end (`&amp;amp;amp;…`) would cost a pass per
 * level, quadratic in its length; four, as the URL credential check decodes a query value four
 * times (docs/security.md), covers a template's output escaped again by each of three layers
 * (a page, JSON text in a page, a redirect).
 */
export const REFERENCE_READINGS = 4;

/**
 * The named references HTML defines for ASCII characters, by character (the HTML standard's
 * list of named character references, every name whose character is ASCII).
 */
export const NAMED: ReadonlyMap<string, readonly string[]> = new Map([
  ["\t", ["Tab"]],
  ["\n", ["NewLine"]],
  ["!", ["excl"]],
  ['"', ["quot", "QUOT"]],
  ["#", ["num"]],
  ["$", ["dollar"]],
  ["%", ["percnt"]],
  ["&", ["amp", "AMP"]],
  ["'", ["apos"]],
  ["(", ["lpar"]],
  [")", ["rpar"]],
  ["*", ["ast", "midast"]],
  ["+", ["plus"]],
  [",", ["comma"]],
  [".", ["period"]],
  ["/", ["sol"]],
  [":", ["colon"]],
  [";", ["semi"]],
  ["<", ["lt", "LT"]],
  ["=", ["equals"]],
  [">", ["gt", "GT"]],
  ["?", ["quest"]],
  ["@", ["commat"]],
  ["[", ["lsqb", "lbrack"]],
  ["\\", ["bsol"]],
  ["]", ["rsqb", "rbrack"]],
  ["^", ["Hat"]],
  ["_", ["lowbar", "UnderBar"]],
  ["`", ["grave", "DiacriticalGrave"]],
  ["{", ["lcub", "lbrace"]],
  ["|", ["verbar", "vert", "VerticalLine"]],
  ["}", ["rcub", "rbrace"]],
]);

/** The character each name of NAMED stands for. */
export const NAMED_CHAR: ReadonlyMap<string, string> = new Map(
  [...NAMED].flatMap(([c, names]) => names.map((n) => [n, c] as const)),
);

/**
 * The names of NAMED HTML's parser reads without a `;` as well (its legacy names: the HTML
 * standard's table lists each of these also without `;`), longest first.
 */
const LEGACY = ["quot", "QUOT", "amp", "AMP", "lt", "LT", "gt", "GT"];

/** The longest name of NAMED, in characters. */
export const LONGEST_NAME = Math.max(...[...NAMED_CHAR.keys()].map((n) => n.length));

/**
 * The most characters one reference takes: `&#x`, REF_DIGITS digits and `;`, or `&`, the longest
 * name and `;`.
 */
export const LONGEST_REFERENCE = Math.max(4 + REF_DIGITS, 2 + LONGEST_NAME);

/**
 * The most characters one reference written with references takes, read REFERENCE_READINGS times:
 * its `&` written `&amp;` (or `&#38;`…) at each reading but the last, up to LONGEST_REFERENCE
 * characters each time (a reference to `&` of REF_DIGITS digits).
 */
export const LONGEST_NESTED_REFERENCE = REFERENCE_READINGS * LONGEST_REFERENCE;

/**
 * As LONGEST_NESTED_REFERENCE, with every name HTML defines read (names "all"): the last reading
 * may be the longest name of all (`&CounterClockwiseContourIntegral;`), the others stand for `&`.
 */
export const LONGEST_NESTED_ANY_REFERENCE =
  (REFERENCE_READINGS - 1) * LONGEST_REFERENCE + Math.max(LONGEST_REFERENCE, 2 + LONGEST_ANY_NAME);

/**
 * What a reference reads: the character it stands for, the second one when it is a name of two
 * characters (`&fjlig;`: `f`, then `j`; -1 for one), and where it ends.
 */
export interface Reference {
  char: number;
  second: number;
  end: number;
}

/**
 * The reference that starts at `at` in `s` (its `&`), if complete: what it reads (Reference);
 * null otherwise. A string is read by UTF-16 code units, a buffer by bytes
 * (a reference is ASCII either way). With `bare` false, only a reference with its `;` (a reader
 * stricter than HTML's parser: what it leaves, `&#xa` before `aaa`, is read otherwise); with
 * `bare` "names", a legacy name without its `;` too but a number only with it (a reader between
 * the two: `&amp#9` read once gives `&#9`, which the first reads as a tab, taking a value's `9`,
 * and the second never reads: see referenceSpelling.ts, eachReading).
 */
export function referenceAt(
  s: string | Uint8Array,
  at: number,
  bare: Bare = true,
  names: Names = "ascii",
): Reference | null {
  return unitAt(s, at) === 0x26 ? referenceAfterAmpersand(s, at + 1, bare, names) : null;
}

/**
 * Each reading of the reference at `at`, as a reference written with references reads: the
 * reference there, and while it stands for `&`, the one that `&` starts with what follows it
 * (`&amp;#43;` reads `&` and then `&#43;`, `+`), up to REFERENCE_READINGS readings. `on` gets
 * each reading's character, end and second character (-1 but for a name of two, with "all"),
 * shallowest first; nothing when there is no reference at `at`.
 */
export function eachNestedReference(
  s: string | Uint8Array,
  at: number,
  on: (char: number, end: number, second: number) => void,
  names: Names = "ascii",
): void {
  let ref = referenceAt(s, at, true, names);
  for (let k = 0; ref !== null && k < REFERENCE_READINGS; k++) {
    on(ref.char, ref.end, ref.second);
    if (ref.char !== 0x26) return;
    ref = referenceAfterAmpersand(s, ref.end, true, names);
  }
}

/**
 * Where the deepest reading of the reference at `at` that stands for `char` (and then `second`,
 * for a name of two characters; -1: `char` alone) ends (eachNestedReference, without a callback:
 * the egress proxy asks it at every `&` it walks), or -1. Only `&` can be read so at more than
 * one depth (every reading but the last is `&`).
 */
export function nestedReferenceEnd(
  s: string | Uint8Array,
  at: number,
  char: number,
  names: Names = "ascii",
  second = -1,
): number {
  let end = -1;
  let ref = referenceAt(s, at, true, names);
  for (let k = 0; ref !== null && k < REFERENCE_READINGS; k++) {
    if (ref.char === char && ref.second === second) end = ref.end;
    if (ref.char !== 0x26) break;
    ref = referenceAfterAmpersand(s, ref.end, true, names);
  }
  return end;
}

/**
 * The reference whose `&` comes just before `q` (written there, or read from a reference that
 * stands for `&`): see referenceAt.
 */
/** Which references without their `;` are read: all (HTML's parser), none, or legacy names only. */
export type Bare = boolean | "names";

/**
 * Which names are read: those of ASCII characters (NAMED, LEGACY: the egress proxy's echo check,
 * for a character of a value that is ASCII), or every name HTML defines (src/vault/htmlNames.ts:
 * the scrubber of server output, and the echo check for a character of a value outside ASCII,
 * `&eacute;`, for two of a value that a name of two stands for, `&fjlig;`, and in its reading of
 * base64, which keeps only what stands for base64 characters: `&fjlig;` for its `fj`).
 */
export type Names = "ascii" | "all";

function referenceAfterAmpersand(
  s: string | Uint8Array,
  q0: number,
  bare: Bare = true,
  names: Names = "ascii",
): Reference | null {
  let q = q0;
  if (unitAt(s, q) === 0x23) {
    const x = unitAt(s, q + 1);
    const hex = x === 0x78 || x === 0x58;
    q += hex ? 2 : 1;
    let n = 0;
    let digits = 0;
    for (; digits < REF_DIGITS; q++, digits++) {
      const d = digitValue(unitAt(s, q), hex);
      if (d < 0) break;
      n = n * (hex ? 16 : 10) + d;
    }
    // more digits than read: HTML's parser takes them all, a character not read here
    if (digits === 0 || digitValue(unitAt(s, q), hex) >= 0 || n > 0x10ffff) return null;
    // the `;` is the reference's when there; without it, the reference ends at its last digit
    if (unitAt(s, q) === 0x3b) return { char: n, second: -1, end: q + 1 };
    return bare === true ? { char: n, second: -1, end: q } : null;
  }
  // the name's letters up to its `;`, read into a string only when the `;` is there (with every
  // name, its digits too: `&frac12;`, `&sup2`)
  const all = names === "all";
  for (; q <= q0 + (all ? LONGEST_ANY_NAME : LONGEST_NAME); q++) {
    const c = unitAt(s, q);
    if (!((c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || (all && c >= 0x30 && c <= 0x39))) break;
  }
  if (q === q0) return null;
  if (unitAt(s, q) === 0x3b) {
    const name = typeof s === "string" ? s.slice(q0, q) : String.fromCharCode(...s.subarray(q0, q));
    const char = all ? namedCodePoint(name) : NAMED_CHAR.get(name)?.charCodeAt(0);
    if (char !== undefined) return { char, second: -1, end: q + 1 };
    // a name of two characters (`&fjlig;`): none is a legacy name, so none is read without `;`
    const pair = all ? namedPair(name) : undefined;
    if (pair !== undefined) return { char: pair[0], second: pair[1], end: q + 1 };
  }
  // a legacy name without its `;` (or before letters that make no name with one): the longest
  // that starts the letters, as HTML's parser reads `&ampx` as `&x`
  if (bare === false) return null;
  if (all) {
    // the longest first, by length (a look-up for each, not a pass over all 106 names)
    for (let len = Math.min(q - q0, LONGEST_LEGACY_NAME); len >= 2; len--) {
      const name =
        typeof s === "string" ? s.slice(q0, q0 + len) : String.fromCharCode(...s.subarray(q0, q0 + len));
      const char = legacyCodePoint(name);
      if (char !== undefined) return { char, second: -1, end: q0 + len };
    }
    return null;
  }
  for (const name of LEGACY)
    if (q - q0 >= name.length && startsWithAt(s, q0, name))
      return { char: NAMED_CHAR.get(name)!.charCodeAt(0), second: -1, end: q0 + name.length };
  return null;
}

function startsWithAt(s: string | Uint8Array, at: number, name: string): boolean {
  for (let i = 0; i < name.length; i++) if (unitAt(s, at + i) !== name.charCodeAt(i)) return false;
  return true;
}

/** The code unit (or byte) at `i`, -1 past the end. */
function unitAt(s: string | Uint8Array, i: number): number {
  if (i >= s.length) return -1;
  return typeof s === "string" ? s.charCodeAt(i) : s[i]!;
}

function digitValue(c: number, hex: boolean): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (!hex) return -1;
  if (c >= 0x41 && c <= 0x46) return c - 0x37;
  if (c >= 0x61 && c <= 0x66) return c - 0x57;
  return -1;
}
