/**
 * The egress echo check's reading of an answer with its escapes of base64 characters read
 * (`\u0041`, `%41`, `&#65;`, `%26%2365%3B` for `A`), and of the one name HTML defines for two
 * base64 characters, `&fjlig;` for `fj` (so written, escaped again or URL-escaped: one escape, two
 * characters of the reading): what EscapedBase64 (escapedBase64.ts) looks for base64 forms in. A reading grows as it is asked to (extend), so one pass over an answer
 * (echo.ts's replaceUpTo) reads each byte once however many echoes it replaces: before session
 * fifty each ask read a window of its own from where it was asked (5.5 KB or more per echo).
 */

import { allPairNames } from "../htmlNames.js";
import { eachNestedReference, NAMED, REFERENCE_READINGS } from "../htmlReferences.js";
import {
  AMPERSAND,
  BACKSLASH,
  eachUrlEscapedReading,
  hexDigit,
  hexPairAt,
  isAmpName,
  LONGEST_CHAR,
  PERCENT,
  URL_DEPTH,
} from "./echoSpelling.js";

const EMPTY = Buffer.alloc(0);

/** 1 for each byte of base64's alphabets, standard and URL-safe, `=` included. */
const BASE64_BYTE = new Uint8Array(256);
for (const c of "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=-_")
  BASE64_BYTE[c.charCodeAt(0)] = 1;

const isBase64 = (c: number) => c >= 0 && c < 256 && BASE64_BYTE[c] === 1;

/**
 * The names HTML gives base64 characters (`plus`, `sol`, `equals`, `lowbar`…), and those it gives
 * two of them (`fjlig`, the only one: the other names of two stand for a character outside ASCII
 * or beside one), as bytes.
 */
const BASE64_NAMES: readonly Buffer[] = [
  ...[...NAMED]
    .filter(([c]) => isBase64(c.charCodeAt(0)))
    .flatMap(([, names]) => names.map((n) => Buffer.from(n, "latin1"))),
  ...[...allPairNames()]
    .filter(([, [first, second]]) => isBase64(first) && isBase64(second))
    .map(([name]) => Buffer.from(name, "latin1")),
];

/** 1 for each byte that starts one of BASE64_NAMES: most names after an `&` start with none. */
const BASE64_NAME_START = new Uint8Array(256);
for (const name of BASE64_NAMES) BASE64_NAME_START[name[0]!] = 1;

/** Whether one of BASE64_NAMES is written at `q` (compared byte by byte: it is asked at every `&`). */
function base64NameAt(buf: Buffer, q: number): boolean {
  if (q >= buf.length || BASE64_NAME_START[buf[q]!] !== 1) return false;
  for (const name of BASE64_NAMES) {
    if (buf.length - q < name.length) continue;
    let i = 0;
    while (i < name.length && buf[q + i] === name[i]) i++;
    if (i === name.length) return true;
  }
  return false;
}

/**
 * Whether the `&` at `at` may start a reference to a base64 character (as ampersandMayStart, for
 * any of them): `#` or a name of one follows, perhaps after `&amp;` written for its `&`.
 */
function ampersandMayStartBase64(buf: Buffer, at: number): boolean {
  let q = at + 1;
  for (let k = 1; k < REFERENCE_READINGS && isAmpName(buf, q); k++) q += buf[q + 3] === 0x3b ? 4 : 3;
  return buf[q] === 0x23 || base64NameAt(buf, q);
}

/**
 * Whether an escape at `p` stands for a base64 character; if so, the character, where it ends
 * (the longest reading) and `depth` are left in escChar, escEnd and escDepth (no object per
 * escape: it is asked at every `%`, `\\` and `&`): a URL escape once or again up to URL_DEPTH times (`%41`, `%2541`), a JSON `\uXXXX` once
 * or escaped again (`\\u0041`) or `\/` with up to three backslashes, an HTML reference as HTML
 * reads it, written with references too (`&#65;`, `&amp;#x41;`), or a URL-escaped one
 * (`%26%2365%3B`); `depth` the times a URL escape read was escaped (0: none). A reference to two
 * base64 characters (`&fjlig;`, `&amp;fjlig;`, `%26fjlig%3B`) leaves the second in escSecond
 * (-1 for one): every name is read there ("all"), and all but those of base64 characters
 * dropped (takeEscape), so only a name of two adds to what is read.
 */
function base64Escape(buf: Buffer, p: number): boolean {
  const b = buf[p];
  escChar = -1;
  escSecond = -1;
  escEnd = -1;
  escDepth = 0;
  if (b === PERCENT) {
    let d = 1;
    while (d < URL_DEPTH && buf[p + 2 * d - 1] === 0x32 && buf[p + 2 * d] === 0x35) d++;
    const h = hexPairAt(buf, p + 2 * d - 1);
    if (h >= 0) takeEscape(h, p + 1 + 2 * d, d);
    // (an escaped `&` may start a URL-escaped reference)
    if (h === AMPERSAND) eachUrlEscapedReading(buf, p, takeEscape, "all");
  } else if (b === BACKSLASH) {
    let k = 1;
    while (k < 3 && buf[p + k] === BACKSLASH) k++;
    if (buf[p + k] === 0x2f) takeEscape(0x2f, p + k + 1, 0);
    else if (k <= 2 && buf[p + k] === 0x75 && p + k + 5 <= buf.length) {
      let n = 0;
      for (let i = 1; i < 5 && n >= 0; i++) {
        const d = hexDigit(buf[p + k + i]!);
        n = d < 0 ? -1 : n * 16 + d;
      }
      if (n >= 0 && n < 256) takeEscape(n, p + k + 5, 0);
    }
  } else if (b === AMPERSAND) {
    if (ampersandMayStartBase64(buf, p)) eachNestedReference(buf, p, takeReference, "all");
    if (buf[p + 1] === PERCENT) eachUrlEscapedReading(buf, p, takeEscape, "all");
  }
  return escEnd >= 0;
}

/**
 * The reading base64Escape keeps: the longest of a base64 character, or of two (no closure per
 * call: it is asked at every escape).
 */
let escChar = -1;
let escSecond = -1;
let escEnd = -1;
let escDepth = 0;
function takeEscape(char: number, end: number, depth: number, second = -1): void {
  if (isBase64(char) && (second < 0 || isBase64(second)) && end > escEnd) {
    escChar = char;
    escSecond = second;
    escEnd = end;
    escDepth = depth;
  }
}
const takeReference = (char: number, end: number, second: number) => takeEscape(char, end, 0, second);

/**
 * `buf` from `start` read with its escapes of base64 characters read (base64Escape: the longest
 * reading at each place), every other byte as itself, as far as it has been extended: `view()` is
 * the reading so far, and each escape read is kept in order (where it is in the reading, how many
 * characters it reads, one or two, where it starts and ends in `buf`, how deep a URL escape in it
 * was) to map the reading back to `buf`.
 * Each escape is read against the whole of `buf`, so a reading extended in steps is the reading
 * made at once, and the reading from any place it passed through (not inside an escape) is its
 * rest: a pass asked again from the end of what it replaced reads on, never again.
 */
export class Base64Reading {
  /** the reading's length so far */
  length = 0;
  /** where in `buf` it has been read to */
  readTo: number;
  /** where an escape begins in the reading that the end of `buf` may cut, or that may read otherwise with the bytes that follow (-1: none so far) */
  cut = -1;
  private readonly at: number[] = [];
  /** how many characters of the reading each escape is (2 for `&fjlig;`) */
  private readonly widths: number[] = [];
  private readonly starts: number[] = [];
  private readonly ends: number[] = [];
  private readonly depths: number[] = [];
  /** the reading once an escape was read (before, it is `buf` itself from `start`) */
  private copy: Buffer | null = null;
  private nextPercent: number;
  private nextBackslash: number;
  private nextAmpersand: number;

  constructor(
    readonly buf: Buffer,
    readonly start: number,
  ) {
    this.readTo = start;
    // (the next `%`, `\\` and `&`, found by indexOf as they are needed: most bytes are none)
    this.nextPercent = buf.indexOf(PERCENT, start);
    this.nextBackslash = buf.indexOf(BACKSLASH, start);
    this.nextAmpersand = buf.indexOf(AMPERSAND, start);
  }

  /** Whether an escape was read (else the reading is `buf` as written). */
  get decoded(): boolean {
    return this.at.length > 0;
  }

  get done(): boolean {
    return this.readTo >= this.buf.length;
  }

  /** The reading so far. */
  view(): Buffer {
    return this.copy === null
      ? this.buf.subarray(this.start, this.start + this.length)
      : this.copy.subarray(0, this.length);
  }

  /** Reads on to `to` in `buf` at least (an escape read there may end past it); the bytes read. */
  extend(to: number): number {
    const buf = this.buf;
    const from = this.readTo;
    const stop = Math.min(to, buf.length);
    let q = from;
    while (q < stop) {
      if (this.nextPercent >= 0 && this.nextPercent < q) this.nextPercent = buf.indexOf(PERCENT, q);
      if (this.nextBackslash >= 0 && this.nextBackslash < q) this.nextBackslash = buf.indexOf(BACKSLASH, q);
      if (this.nextAmpersand >= 0 && this.nextAmpersand < q) this.nextAmpersand = buf.indexOf(AMPERSAND, q);
      let next = stop;
      if (this.nextPercent >= 0 && this.nextPercent < next) next = this.nextPercent;
      if (this.nextBackslash >= 0 && this.nextBackslash < next) next = this.nextBackslash;
      if (this.nextAmpersand >= 0 && this.nextAmpersand < next) next = this.nextAmpersand;
      this.plain(q, next);
      q = next;
      if (q >= stop) break;
      // (one that starts within a character's longest spelling of the end may read otherwise,
      // or only, with the bytes that follow)
      if (this.cut < 0 && buf.length - q < LONGEST_CHAR) this.cut = this.length;
      if (!base64Escape(buf, q)) {
        this.plain(q, q + 1);
        q++;
        continue;
      }
      if (this.copy === null) {
        this.copy = Buffer.allocUnsafe(buf.length - this.start);
        buf.copy(this.copy, 0, this.start, this.start + this.length);
      }
      this.at.push(this.length);
      this.widths.push(escSecond < 0 ? 1 : 2);
      this.starts.push(q);
      this.ends.push(escEnd);
      this.depths.push(escDepth);
      this.copy[this.length++] = escChar;
      // (no escape is shorter than the two characters it reads: the reading never outgrows `copy`)
      if (escSecond >= 0) this.copy[this.length++] = escSecond;
      q = escEnd;
    }
    this.readTo = q;
    return q - from;
  }

  /** Bytes `from` to `to` of `buf`, each itself, onto the reading. */
  private plain(from: number, to: number): void {
    const copy = this.copy;
    if (copy !== null) {
      // (Buffer.copy is a call into C++ with argument checks: most runs between escapes are short)
      if (to - from > 64) this.buf.copy(copy, this.length, from, to);
      else for (let q = from, v = this.length; q < to; ) copy[v++] = this.buf[q++]!;
    }
    this.length += to - from;
  }

  /** Whether reading index `i` is one of the characters escape `j` reads. */
  private within(j: number, i: number): boolean {
    return j >= 0 && i < this.at[j]! + this.widths[j]!;
  }

  /** The escape read at or last before reading index `i`, or -1. */
  private escapeAt(i: number): number {
    const at = this.at;
    let lo = 0;
    let hi = at.length - 1;
    let found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (at[mid]! <= i) {
        found = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    return found;
  }

  /**
   * Where the byte at reading index `i` starts in `buf` (`readTo` for the index after the
   * reading): where its escape starts, for either character of a name of two.
   */
  startOf(i: number): number {
    const j = this.escapeAt(i);
    if (j < 0) return this.start + i;
    return this.within(j, i) ? this.starts[j]! : this.ends[j]! + (i - this.at[j]! - this.widths[j]!);
  }

  /** Where it ends (where its escape ends, for either character of a name of two). */
  endOf(i: number): number {
    const j = this.escapeAt(i);
    return this.within(j, i) ? this.ends[j]! : this.startOf(i) + 1;
  }

  /**
   * The characters of the reading that the escape holding index `i` reads before it (`f`, where
   * `i` is the `j` of `&fjlig;`), and after it: what must be written again beside a placeholder
   * that replaces the escape whole for a form that starts or ends inside it. Empty but there.
   */
  before(i: number): Buffer {
    const j = this.escapeAt(i);
    return this.within(j, i) ? this.view().subarray(this.at[j]!, i) : EMPTY;
  }

  after(i: number): Buffer {
    const j = this.escapeAt(i);
    return this.within(j, i) ? this.view().subarray(i + 1, this.at[j]! + this.widths[j]!) : EMPTY;
  }

  /** The deepest URL escape read from reading index `i` to `last`. */
  depthOf(i: number, last: number): number {
    let d = 0;
    for (let j = Math.max(0, this.escapeAt(i)); j < this.at.length && this.at[j]! <= last; j++)
      if (this.at[j]! + this.widths[j]! > i) d = Math.max(d, this.depths[j]!);
    return d;
  }

  /**
   * The reading index of place `p` of `buf` (read already), or -1 where `p` is inside an escape
   * read (after its first byte): the reading from there is not this one's rest.
   */
  indexOf(p: number): number {
    const starts = this.starts;
    let lo = 0;
    let hi = starts.length - 1;
    let j = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (starts[mid]! < p) {
        j = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    if (j < 0) return p - this.start;
    if (p < this.ends[j]!) return -1;
    return this.at[j]! + this.widths[j]! + (p - this.ends[j]!);
  }
}
