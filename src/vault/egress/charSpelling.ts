/**
 * How one character of a value released to the egress proxy may be written (its Char), and where
 * each of its escaped spellings ends when it starts at a place: URL escapes of its UTF-8 bytes
 * (urlSpelled), JSON escapes of its UTF-16 units once or escaped again (jsonSpelled), HTML
 * references URL-escaped (urlEscapedReferenceEnd). What spelledValue.ts's walk over a value asks
 * at each character; split out of echo.ts, no behaviour of its own.
 */

import { allNames, allPairNames } from "../htmlNames.js";
import { NAMED, type Names, REFERENCE_READINGS } from "../htmlReferences.js";
import {
  AMPERSAND,
  BACKSLASH,
  eachUrlEscapedReading,
  hexDigit,
  hexPairAt,
  isAmpName,
  mayStartUrlEscapedReference,
  PERCENT,
  PLUS,
  URL_DEPTH,
} from "./echoSpelling.js";

/** The JSON short escapes, by the character they stand for. */
export const JSON_SHORT: Record<number, number> = {
  34: 0x22, // \"
  92: 0x5c, // \\
  47: 0x2f, // \/
  8: 0x62, // \b
  12: 0x66, // \f
  10: 0x6e, // \n
  13: 0x72, // \r
  9: 0x74, // \t
};

/** Each byte that can follow `&` in a named reference of the character, by character code. */
const NAME_STARTS = new Map<number, Uint8Array>(
  [...NAMED].map(([c, names]) => {
    const starts = new Uint8Array(256);
    for (const n of names) starts[n.charCodeAt(0)] = 1;
    return [c.charCodeAt(0), starts] as const;
  }),
);

/** As NAME_STARTS, for characters outside ASCII (every name HTML defines: src/vault/htmlNames.ts), made when first needed. */
let nonAsciiNameStarts: Map<number, Uint8Array> | null = null;

export function nameStarts(code: number): Uint8Array | undefined {
  if (code < 0x80) return NAME_STARTS.get(code);
  if (nonAsciiNameStarts === null) {
    nonAsciiNameStarts = new Map();
    for (const [name, c] of allNames()) {
      if (c < 0x80) continue;
      const starts = nonAsciiNameStarts.get(c) ?? new Uint8Array(256);
      starts[name.charCodeAt(0)] = 1;
      nonAsciiNameStarts.set(c, starts);
    }
  }
  return nonAsciiNameStarts.get(code);
}

/** As nameStarts, for the names of two characters that start with `code` (`f`: `fjlig`), made when first needed. */
let pairNameStarts: Map<number, Uint8Array> | null = null;

export function pairStarts(code: number): Uint8Array | undefined {
  if (pairNameStarts === null) {
    pairNameStarts = new Map();
    for (const [name, [c]] of allPairNames()) {
      const starts = pairNameStarts.get(c) ?? new Uint8Array(256);
      starts[name.charCodeAt(0)] = 1;
      pairNameStarts.set(c, starts);
    }
  }
  return pairNameStarts.get(code);
}

/** One character of a value, and how it may be written. */
export interface Char {
  code: number;
  /** its UTF-8 bytes */
  bytes: Uint8Array;
  /** its UTF-16 code units */
  units: number[];
  /** written only as itself (a letter or digit of base64: no encoder escapes those) */
  plain: boolean;
  /**
   * the HTML names read for it: those of ASCII characters, or for a character outside ASCII
   * every name HTML defines (`&eacute;`, as PHP's htmlentities writes `é`)
   */
  names: Names;
  /**
   * whether HTML defines a name for it and the value's next character together (`f` before `j`:
   * `&fjlig;`), which an HTML reader decodes to both; neither written only as itself
   */
  pairsWithNext: boolean;
}

/**
 * Whether the `&` at `at` may start a reference to `code`, read at once or after the `&amp;`
 * (`&AMP;`, `&amp` without its `;`) written for its `&` at each reading but the last
 * (`&amp;#43;`): then `#` or a name of `code` follows (or, with `pair`, a name of two characters
 * that starts with it). An HTML page's `&amp;` before a space or a word is no start, and is skipped
 * without a walk (a walk at every one of them made the check of an HTML page 2.6 times as long).
 */
export function ampersandMayStart(buf: Buffer, at: number, code: number, pair = false): boolean {
  let q = at + 1;
  for (let k = 1; k < REFERENCE_READINGS && isAmpName(buf, q); k++) q += buf[q + 3] === 0x3b ? 4 : 3;
  const after = buf[q]!;
  return after === 0x23 || nameStarts(code)?.[after] === 1 || (pair && pairStarts(code)?.[after] === 1);
}

/** Whether byte `b` can start a spelling of `c`: itself, or an escape (URL, JSON, HTML), or `+` for a space. */
export function mayStart(b: number, c: Char): boolean {
  return (
    b === c.bytes[0] || b === PERCENT || b === BACKSLASH || b === AMPERSAND || (b === PLUS && c.code === 0x20)
  );
}

/** The most times a URL escape read by the last urlSpelled was escaped (0: none read). */
export let spelledDepth = 0;

/**
 * Where `c` ends when written at `p` as its UTF-8 bytes, each as itself or URL-escaped, once
 * (`%2F`, `%2f`; a space also as `+`) or escaped again up to URL_DEPTH times in all (`%252F`, as
 * a redirect that carries a URL in its query writes it, `%25252F` a redirect of that), or -1;
 * sets spelledDepth. (Not for the byte `%` itself, which reads several ways at one place: the walk
 * reads those.)
 */
export function urlSpelled(buf: Buffer, p: number, c: Char): number {
  let q = p;
  const bytes = c.bytes;
  spelledDepth = 0;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    if (buf[q] === b) q += 1;
    else if (buf[q] === PERCENT) {
      // `%`, then `25` for each time the escape was escaped again, then the byte's two digits
      let d = 1;
      while (d < URL_DEPTH && buf[q + 2 * d - 1] === 0x32 && buf[q + 2 * d] === 0x35) d++;
      // (a byte of 0x25 is the `%` of a value's own, which the walk reads)
      if (hexPairAt(buf, q + 2 * d - 1) !== b) return -1;
      q += 1 + 2 * d;
      spelledDepth = Math.max(spelledDepth, d);
    } else if (b === 0x20 && buf[q] === PLUS) q += 1;
    else return -1;
  }
  return q;
}

/**
 * Each place where an HTML reference to `code` that is URL-escaped ends, when it starts at `p`:
 * its bytes (its `&`, `#`, `;`, digits, name) each as itself or URL-escaped once or again up to
 * URL_DEPTH times in all (`%26%2343%3B` for `+`, as a URL built from HTML-escaped text carries
 * it; `%2526%252343%253B`), read as references are (eachNestedReference), with `on` given the end
 * and the most times one of its escapes was escaped. Only a reference with an escape in it, and
 * only within LONGEST_CHAR bytes of `p` (one character's longest spelling, which the stream keeps:
 * a longer one is not read). With `second`, a reference to `code` and then `second` (a name of two
 * characters: `%26fjlig%3B`); without, to `code` alone.
 */
export function eachUrlEscapedReference(
  buf: Buffer,
  p: number,
  code: number,
  names: Names,
  on: (end: number, depth: number) => void,
  second = -1,
): void {
  eachUrlEscapedReading(
    buf,
    p,
    (char, end, depth, two) => char === code && two === second && on(end, depth),
    names,
  );
}

/**
 * The deepest end eachUrlEscapedReference gives for `code` (and `second`) at `p`, or -1; sets
 * spelledDepth to the times its escapes were escaped.
 */
export function urlEscapedReferenceEnd(
  buf: Buffer,
  p: number,
  code: number,
  names: Names,
  second = -1,
): number {
  if (!mayStartUrlEscapedReference(buf, p)) {
    spelledDepth = 0;
    return -1;
  }
  let end = -1;
  let depth = 0;
  eachUrlEscapedReference(
    buf,
    p,
    code,
    names,
    (e, d) => {
      if (e > end) {
        end = e;
        depth = d;
      }
    },
    second,
  );
  spelledDepth = depth;
  return end;
}

/**
 * Where `c` ends when written at `p` as JSON escapes (`\u002f` in either case, `\/`, `\n`…), or as
 * those escapes escaped again, as JSON text inside a JSON string writes them (`\\u002f`, `\\/`,
 * `\\\"` for `"`, `\\\\` for `\`), or -1.
 */
export function jsonSpelled(buf: Buffer, p: number, c: Char): number {
  if (buf[p] !== BACKSLASH) return -1;
  const short = c.units.length === 1 ? JSON_SHORT[c.code] : undefined;
  // (`\\` is `\` escaped once, and the start of it escaped twice: jsonSpelledTwice gives that)
  if (short !== undefined && buf[p + 1] === short) return p + 2;
  const once = unitEscapes(buf, p, c, 1);
  return once >= 0 ? once : jsonSpelledTwice(buf, p, c);
}

/**
 * Where `c` ends when written at `p` as a JSON escape escaped again (JSON text inside a JSON
 * string: `\\u002f`, `\\/`, `\\\"` for `"`, `\\\\` for `\`), or -1.
 */
export function jsonSpelledTwice(buf: Buffer, p: number, c: Char): number {
  if (buf[p] !== BACKSLASH || buf[p + 1] !== BACKSLASH) return -1;
  const short = c.units.length === 1 ? JSON_SHORT[c.code] : undefined;
  // its backslash written `\\`, and then `"` and `\` written `\"` and `\\`
  if (short !== undefined) {
    const rest = short === 0x22 || short === BACKSLASH ? [BACKSLASH, short] : [short];
    if (rest.every((b, i) => buf[p + 2 + i] === b)) return p + 2 + rest.length;
  }
  return unitEscapes(buf, p, c, 2);
}

/** Where `c` ends when written at `p` as `\uXXXX` escapes of its units, each `\` written `backslashes` times, or -1. */
export function unitEscapes(buf: Buffer, p: number, c: Char, backslashes: number): number {
  let q = p;
  for (const u of c.units) {
    for (let i = 0; i < backslashes; i++) if (buf[q + i] !== BACKSLASH) return -1;
    q += backslashes;
    if (buf[q] !== 0x75 || q + 5 > buf.length) return -1;
    let n = 0;
    for (let i = 1; i < 5; i++) {
      const d = hexDigit(buf[q + i]!);
      if (d < 0) return -1;
      n = n * 16 + d;
    }
    if (n !== u) return -1;
    q += 5;
  }
  return q;
}
