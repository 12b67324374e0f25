/**
 * What every way the egress echo check looks for a value shares (echo.ts, escapedBase64.ts): what
 * a way of looking is (Spelling) and what it finds (Match); the escapes' first bytes and how deep
 * a URL escape is read; how long one character's spelling may be; and the readings of escapes
 * both make (hex digits, `&amp;` written for an `&`, an HTML reference URL-escaped). A module of
 * its own so the two that import it import nothing of each other.
 */

import {
  eachNestedReference,
  LONGEST_NESTED_ANY_REFERENCE,
  LONGEST_NESTED_REFERENCE,
  type Names,
  REFERENCE_READINGS,
} from "../htmlReferences.js";

/** A place where a value is spelled, and the placeholder that goes there. */
export interface Match {
  at: number;
  end: number;
  to: Buffer;
}

/** One way a value is looked for. */
export interface Spelling {
  /** the most bytes one occurrence takes */
  readonly longest: number;
  /** the first occurrence that starts at or after `from` and before `before` (whole in `buf`) */
  first(buf: Buffer, from: number, before: number): Match | null;
  /**
   * first() for one pass over `buf` (echo.ts's replaceUpTo): asked at a `from` that only grows,
   * it may keep what it read for one ask for the next. Made per pass, so nothing it keeps outlives
   * the bytes it read (a piece's buffer may be reused by its owner with other bytes).
   */
  pass?(buf: Buffer, before: number): (from: number) => Match | null;
  /**
   * The first place at or after `from`, before `before`, where an occurrence may start that the
   * bytes after `buf` could still make (or make longer): what a stream must keep until they come;
   * -1 when there is none. Spends `work.left`; when it runs out, answers `from` (keep it all).
   */
  unfinished(buf: Buffer, from: number, before: number, work: { left: number }): number;
  /**
   * A byte every occurrence holds, and every unfinished one that another spelling does not
   * already keep (usableIn): an escaped form of base64 is not looked for in bytes without it
   */
  readonly needs?: number;
  /** as `needs`, one of these bytes (a base64 form spelled with escapes: `%`, `\\` or `&`) */
  readonly needsOneOf?: readonly number[];
}

/**
 * The most times a URL escape is read: escaped once (`%2F`) and then again at each of
 * REFERENCE_READINGS readings (`%252F` … `%252525252F`), as the gateway's scrubber of server
 * output reads `%25` (src/vault/referenceSpelling.ts).
 */
export const URL_DEPTH = 1 + REFERENCE_READINGS;

/**
 * The most bytes one character of a value takes in any of its spellings: four UTF-8 bytes
 * URL-escaped URL_DEPTH times (`%2525252525F0…`), or an HTML reference written with references
 * (LONGEST_NESTED_REFERENCE; for a character outside ASCII, named by any name HTML defines, its
 * last reading `&CounterClockwiseContourIntegral;`: LONGEST_NESTED_ANY_REFERENCE), or a surrogate
 * pair JSON-escaped twice (`\\ud83d\\ude00`). A name of two characters (`&fjlig;`) is no longer
 * than the longest name (src/vault/htmlNames.ts), so it and its readings fit in LONGEST_CHAR
 * bytes too, for two characters of the value: the walk reads one whole where a character's
 * spelling would fit, and keeps back as much where it may be cut (spelledValue.ts).
 */
export const LONGEST_CHAR = Math.max(
  4 * (1 + 2 * URL_DEPTH),
  LONGEST_NESTED_REFERENCE,
  LONGEST_NESTED_ANY_REFERENCE,
  14,
);

export const PERCENT = 0x25;
export const BACKSLASH = 0x5c;
export const AMPERSAND = 0x26;
export const PLUS = 0x2b;
/** The first byte of every escape (URL, JSON, HTML). */
export const ESCAPE_STARTS: readonly number[] = [PERCENT, BACKSLASH, AMPERSAND];

/** The value of a hex digit byte, or -1. */
export function hexDigit(b: number): number {
  if (b >= 0x30 && b <= 0x39) return b - 0x30;
  if (b >= 0x41 && b <= 0x46) return b - 0x37;
  if (b >= 0x61 && b <= 0x66) return b - 0x57;
  return -1;
}

/** Whether `amp` or `AMP` is written at `q`. */
export function isAmpName(buf: Buffer, q: number): boolean {
  return (
    (buf[q] === 0x61 && buf[q + 1] === 0x6d && buf[q + 2] === 0x70) ||
    (buf[q] === 0x41 && buf[q + 1] === 0x4d && buf[q + 2] === 0x50)
  );
}

/** What a URL-escaped reference read (echo.ts: eachUrlEscapedReference): its bytes, and where each ends in the text. */
const readBytes = new Uint8Array(LONGEST_CHAR);
const readEnds = new Int32Array(LONGEST_CHAR);
/** the most times a URL escape read up to each byte was escaped (0: none yet) */
const readDepths = new Int32Array(LONGEST_CHAR);

/**
 * Each reading of a URL-escaped reference at `p` (echo.ts: eachUrlEscapedReference), of any
 * character (and `second`, the second character of a name of two, `%26fjlig%3B`; -1 for one).
 */
export function eachUrlEscapedReading(
  buf: Buffer,
  p: number,
  on: (char: number, end: number, depth: number, second: number) => void,
  names: Names = "ascii",
): void {
  if (!mayStartUrlEscapedReference(buf, p)) return;
  const limit = Math.min(buf.length, p + LONGEST_CHAR);
  let q = p;
  let n = 0;
  let depth = 0;
  while (q < limit) {
    let b = buf[q]!;
    let next = q + 1;
    if (b === PERCENT) {
      let d = 1;
      while (d < URL_DEPTH && buf[q + 2 * d - 1] === 0x32 && buf[q + 2 * d] === 0x35) d++;
      const h = hexPairAt(buf, q + 2 * d - 1);
      if (h >= 0 && q + 1 + 2 * d <= limit) {
        b = h;
        next = q + 1 + 2 * d;
        depth = Math.max(depth, d);
      }
    }
    if (n === 0 && b !== AMPERSAND) return;
    readBytes[n] = b;
    readEnds[n] = next;
    readDepths[n] = depth;
    n++;
    q = next;
  }
  eachNestedReference(
    readBytes.subarray(0, n),
    0,
    (char, end, second) => {
      if (readDepths[end - 1]! > 0) on(char, readEnds[end - 1]!, readDepths[end - 1]!, second);
    },
    names,
  );
}

/**
 * Whether a URL-escaped reference may start at `p`: an `&` as itself followed by escapes
 * (`&%2343%3B`), or a URL escape of `&` (`%26`, `%2526`…), read as eachUrlEscapedReading reads
 * its first byte. Asked before a reading's callbacks are made: the walk asks at every byte it
 * tries, and an HTML page's `%20` is no start.
 */
export function mayStartUrlEscapedReference(buf: Buffer, p: number): boolean {
  const first = buf[p];
  if (first === AMPERSAND) return buf[p + 1] === PERCENT;
  if (first !== PERCENT) return false;
  let d = 1;
  while (d < URL_DEPTH && buf[p + 2 * d - 1] === 0x32 && buf[p + 2 * d] === 0x35) d++;
  return hexPairAt(buf, p + 2 * d - 1) === AMPERSAND;
}

/** The byte the two hex digits at `i` (`2F`, `2f`) stand for, or -1. */
export function hexPairAt(buf: Buffer, i: number): number {
  if (i + 1 >= buf.length) return -1;
  const high = hexDigit(buf[i]!);
  const low = hexDigit(buf[i + 1]!);
  return high < 0 || low < 0 ? -1 : high * 16 + low;
}

/** `chars` of base64 (`+`, `/`, `=`) URL-escaped, the escapes' hex in upper or lower case. */
export const urlEscaped = (upper: boolean, chars: RegExp) => (b64: string) =>
  b64.replace(chars, (c) => {
    const hex = c.charCodeAt(0).toString(16);
    return `%${upper ? hex.toUpperCase() : hex}`;
  });
