/**
 * The forms of a released value that scrubbing (src/vault/scrub.ts) searches for: the value
 * itself, its base64 (whole and the fragments it alone determines inside longer data), its URL
 * encodings and URL-escaped base64, its hex, each inside JSON strings to JSON_LEVELS levels as the
 * common encoders escape them, and its Unicode normalizations. The module comment of scrub.ts
 * lists them and says why each; the spellings searched by pattern (percent escapes, JSON escapes,
 * HTML references) are in percentSpelling.ts, jsonSpelling.ts and referenceSpelling.ts.
 */

import { LONG_VALUE } from "./longValues.js";

/** The shortest base64 fragment listed: a shorter one would match everywhere. */
export const MIN_FRAGMENT = 8;

/** Every form of `value` that scrubbing replaces (see the module comment). */
export function formsOf(value: string): string[] {
  return [...listedForms(value), ...hexForms(value)];
}

/**
 * The UTF-8 bytes of `value` in hex, lower- and upper-case, as a debug dump or a hex-encoding
 * library writes them. Searched on their own (indexOf): forms that start with a digit in the one
 * alternation would slow every scan of text full of numbers tenfold.
 */
export function hexForms(value: string): string[] {
  const hex = Buffer.from(value, "utf8").toString("hex");
  return [hex, hex.toUpperCase()];
}

/**
 * The most levels of JSON strings, one inside another's JSON text, at which a value is listed as
 * JSON.stringify writes it (each level doubles the backslashes of a `"` or `\`: six write 63 of
 * them before a `"`, so a value of 40 such characters takes 2,560, and the text a stderr cut keeps
 * back grows with it). Before, three: `ab"cd-secret` inside four levels of a server's message
 * reached the client, readable after four `JSON.parse`. A value over LONG_VALUE characters is
 * listed to three levels still (listedForms).
 */
export const JSON_LEVELS = 6;

/** The levels of JSON strings at which `value`'s forms are listed (listedForms), and its percent spelling read (percentPattern). */
export function jsonLevelsOf(value: string): number {
  return value.length <= LONG_VALUE ? JSON_LEVELS : 3;
}

/**
 * The Unicode normalizations a value is also scrubbed in. A server may normalize the text it is
 * given before it echoes it: composed (NFC: `é` as U+00E9, what most input methods write),
 * decomposed (NFD: `e` and U+0301, as macOS writes file names and many libraries normalize), or
 * with compatibility characters replaced (NFKC and NFKD: `ﬁ` as `fi`, `½` as `1⁄2`, a fullwidth
 * `Ａ` as `A`, as password preparation, SASLprep and PRECIS, does). The text reads the same to a
 * person in each, and a value released in one form leaked in another is the same secret. A value
 * of ASCII alone is its own normalization in all four, so this costs nothing for it.
 */
const NORMALIZATIONS = ["NFC", "NFD", "NFKC", "NFKD"] as const;

/** `value` and each of its normalizations that differs from it. */
export function normalizationsOf(value: string): string[] {
  const out = new Set([value]);
  // (a value of ASCII alone, the common case, is normalized to itself in every form)
  for (let i = 0; i < value.length; i++)
    if (value.charCodeAt(i) > 0x7f) {
      for (const form of NORMALIZATIONS) out.add(value.normalize(form));
      break;
    }
  return [...out];
}

/** The forms searched by the one alternation. */
export function listedForms(value: string): string[] {
  const base = new Set<string>([value]);
  const bytes = Buffer.from(value, "utf8");
  const std = bytes.toString("base64");
  const base64 = new Set<string>();
  for (const b64 of [std, std.replace(/=+$/, "")]) {
    base64.add(b64);
    base64.add(urlSafe(b64));
  }
  for (const frag of alignedFragments(bytes)) {
    if (frag.length < MIN_FRAGMENT) continue;
    base64.add(frag);
    base64.add(urlSafe(frag));
  }
  for (const b64 of base64) {
    base.add(b64);
    // as a query string or a path carries it (a Basic credential in `?auth=`): URL-escaped
    for (const escaped of BASE64_URL_ESCAPED)
      for (const upper of [true, false]) base.add(urlEscaped(b64, escaped, upper));
  }
  for (const u of urlEncodings(value)) {
    base.add(u);
    base.add(u.replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase()));
  }
  const out = new Set<string>();
  for (const f of base) {
    out.add(f);
    // inside a JSON string, and inside JSON that is itself inside a JSON string (a tool result
    // whose text is JSON): escaped once and twice
    for (const once of jsonEscapes(f)) {
      out.add(once);
      out.add(stringified(once));
    }
    // and three times and deeper, to JSON_LEVELS, as JSON.stringify writes each level (a tool
    // result whose JSON has a field of JSON text: an API's answer that carries a JSON document as
    // a string, a log line of it in another): only a value with a character JSON.stringify
    // escapes (`"`, `\`, a control) is written otherwise there, each level doubling its
    // backslashes
    // (past three levels only for a value searched by regex: a 64 KiB value of `"` would be
    // 4 Mi characters six levels down, and what a stderr cut keeps back 36 times that)
    let deeper = stringified(stringified(f));
    if (deeper !== f)
      for (let level = 3; level <= jsonLevelsOf(value); level++) {
        deeper = stringified(deeper);
        out.add(deeper);
      }
  }
  out.delete("");
  return [...out];
}

/**
 * `s` as it appears inside a JSON string, as the common encoders write it: JSON.stringify;
 * non-ASCII as \uxxxx (Python's ensure_ascii) or \uXXXX; "/" as "\/" (PHP); "<", ">", "&",
 * U+2028 and U+2029 as \u00xx (Go's HTML-safe encoding); and their combinations.
 */
function jsonEscapes(s: string): string[] {
  const json = JSON.stringify(s).slice(1, -1);
  const hex = (c: string) => c.charCodeAt(0).toString(16).padStart(4, "0");
  const out = new Set<string>();
  for (const ascii of ["none", "lower", "upper"] as const) {
    let a = json;
    if (ascii !== "none") {
      a = a.replace(/[\u0080-\uffff]/g, (c) => `\\u${ascii === "lower" ? hex(c) : hex(c).toUpperCase()}`);
    }
    for (const html of [false, true]) {
      const h = html ? a.replace(/[<>&\u2028\u2029]/g, (c) => `\\u${hex(c)}`) : a;
      out.add(h);
      out.add(h.replaceAll("/", "\\/"));
    }
  }
  return [...out];
}

/** `s` as JSON.stringify writes it inside a JSON string (without the quotes). */
function stringified(s: string): string {
  return JSON.stringify(s).slice(1, -1);
}

function urlSafe(b64: string): string {
  return b64.replaceAll("+", "-").replaceAll("/", "_");
}

/**
 * Which of base64's `+`, `/` and `=` the common URL encoders escape: all three
 * (encodeURIComponent, URLSearchParams, Go's QueryEscape, Python's quote_plus and urlencode), `+`
 * and `=` (Python's quote(), which keeps `/` by default), `/` alone (Go's PathEscape). An encoder
 * is consistent, so only these mixes are listed, not every one (each is another form per base64
 * form, in the one alternation).
 */
const BASE64_URL_ESCAPED = [/[+/=]/g, /[+=]/g, /\//g];

/**
 * Base64 with the characters `escaped` matches URL-escaped (`%2B`, `%2F`, `%3D`), the hex upper-
 * or lower-case (the same string where it has none of them).
 */
function urlEscaped(b64: string, escaped: RegExp, upper: boolean): string {
  return b64.replace(escaped, (c) => {
    const hex = c.charCodeAt(0).toString(16);
    return `%${upper ? hex.toUpperCase() : hex}`;
  });
}

/**
 * The base64 characters that depend on `bytes` alone when they start at byte offset 0, 1 or 2
 * (mod 3) of longer data: the characters whose six bits all fall inside `bytes`.
 */
function alignedFragments(bytes: Buffer): string[] {
  const out: string[] = [];
  for (let offset = 0; offset < 3; offset++) {
    const encoded = Buffer.concat([Buffer.alloc(offset), bytes]).toString("base64");
    const start = Math.ceil((8 * offset) / 6);
    const end = Math.floor((8 * (offset + bytes.length)) / 6);
    if (end > start) out.push(encoded.slice(start, end));
  }
  return out;
}

function urlEncodings(value: string): string[] {
  const out: string[] = [];
  for (const enc of [encodeURIComponent, encodeURI]) {
    try {
      out.push(enc(value));
    } catch {
      /* a lone surrogate cannot be URL-encoded: there is no such form */
    }
  }
  out.push(new URLSearchParams({ v: value }).toString().slice(2));
  return out;
}
