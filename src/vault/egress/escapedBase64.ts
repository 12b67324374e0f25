/**
 * The egress echo check's reading of base64 with any of its characters escaped, letters and
 * digits too (`\u0041`, `%41`, `&#65;`, `%26%2365%3B`): EscapedBase64, one of the spellings
 * echo.ts's spellingsOf makes, given each base64 form of a released value. The answer's escapes
 * that stand for base64 characters are read once, and the forms looked for in that reading.
 */

import { eachNestedReference, NAMED, REFERENCE_READINGS } from "../htmlReferences.js";
import {
  AMPERSAND,
  BACKSLASH,
  ESCAPE_STARTS,
  eachUrlEscapedReading,
  hexDigit,
  hexPairAt,
  isAmpName,
  LONGEST_CHAR,
  type Match,
  PERCENT,
  type Spelling,
  URL_DEPTH,
  urlEscaped,
} from "./echoSpelling.js";

/** 1 for each byte of base64's alphabets, standard and URL-safe, `=` included. */
const BASE64_BYTE = new Uint8Array(256);
for (const c of "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=-_")
  BASE64_BYTE[c.charCodeAt(0)] = 1;

/** The names HTML gives base64 characters (`plus`, `sol`, `equals`, `lowbar`…), as bytes. */
const BASE64_NAMES: readonly Buffer[] = [...NAMED]
  .filter(([c]) => BASE64_BYTE[c.charCodeAt(0)] === 1)
  .flatMap(([, names]) => names.map((n) => Buffer.from(n, "latin1")));

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
 * (`%26%2365%3B`); `depth` the times a URL escape read was escaped (0: none).
 */
function base64Escape(buf: Buffer, p: number): boolean {
  const b = buf[p];
  escChar = -1;
  escEnd = -1;
  escDepth = 0;
  if (b === PERCENT) {
    let d = 1;
    while (d < URL_DEPTH && buf[p + 2 * d - 1] === 0x32 && buf[p + 2 * d] === 0x35) d++;
    const h = hexPairAt(buf, p + 2 * d - 1);
    if (h >= 0) takeEscape(h, p + 1 + 2 * d, d);
    // (an escaped `&` may start a URL-escaped reference)
    if (h === AMPERSAND) eachUrlEscapedReading(buf, p, takeEscape);
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
    if (ampersandMayStartBase64(buf, p)) eachNestedReference(buf, p, takeReference);
    if (buf[p + 1] === PERCENT) eachUrlEscapedReading(buf, p, takeEscape);
  }
  return escEnd >= 0;
}

/** The reading base64Escape keeps: the longest of a base64 character (no closure per call: it is asked at every escape). */
let escChar = -1;
let escEnd = -1;
let escDepth = 0;
function takeEscape(char: number, end: number, depth: number): void {
  if (char < 256 && BASE64_BYTE[char] === 1 && end > escEnd) {
    escChar = char;
    escEnd = end;
    escDepth = depth;
  }
}
const takeReference = (char: number, end: number) => takeEscape(char, end, 0);

/**
 * Where an occurrence may start in an escaped form's first window, past `from` (the window is read
 * that far and an occurrence's longest beyond it; then twice as long, until one is found).
 */
const WINDOW = 1024;

/**
 * The base64 forms of the released values (whole, and the characters a value alone determines
 * inside longer base64), with any of their characters escaped, letters and digits too (`\u0041`,
 * `%41`, `&#65;`, `%26%2365%3B`: an encoder that escapes more than it must, or an upstream that
 * hides an echo so). The bytes are read once with every escape that stands for a base64 character
 * read (base64Escape; the longest reading at each place, every other byte as itself), and the
 * forms looked for in that reading by indexOf: one pass, however many forms. Looked for only in
 * bytes that hold an escape's first byte. A form in which a URL escape was read is replaced by
 * the placeholder's form with `+`, `/`, `=` URL-escaped as deep.
 */
export class EscapedBase64 implements Spelling {
  readonly longest: number;
  readonly needsOneOf = ESCAPE_STARTS;
  private readonly forms: { from: Buffer; to: string }[] = [];

  constructor() {
    this.longest = 0;
  }

  add(from: string, to: string): void {
    if (this.forms.some((f) => f.from.toString("latin1") === from)) return;
    this.forms.push({ from: Buffer.from(from, "latin1"), to });
    (this as { longest: number }).longest = Math.max(this.longest, LONGEST_CHAR * from.length);
  }

  get empty(): boolean {
    return this.forms.length === 0;
  }

  /**
   * `buf` from `from` read with its escapes of base64 characters read (`view`), and the escapes
   * read, in order: where each is in the reading (`at`), where it starts and ends in `buf`, how
   * deep a URL escape in it was; and where an escape that the end of `buf` may cut, or that may
   * read otherwise with the bytes that follow, begins in the reading (`cut`, or -1). Every other
   * byte is itself: most text holds no such escape, and its reading is `buf` itself.
   */
  private read(buf: Buffer, from: number) {
    const at: number[] = [];
    const chars: number[] = [];
    const starts: number[] = [];
    const ends: number[] = [];
    const depths: number[] = [];
    let cut = -1;
    let k = 0; // the reading's length so far
    // the next `%`, `\\` and `&` (found by indexOf: most bytes are none of them)
    let nextPercent = buf.indexOf(PERCENT, from);
    let nextBackslash = buf.indexOf(BACKSLASH, from);
    let nextAmpersand = buf.indexOf(AMPERSAND, from);
    for (let q = from; q < buf.length; ) {
      if (nextPercent >= 0 && nextPercent < q) nextPercent = buf.indexOf(PERCENT, q);
      if (nextBackslash >= 0 && nextBackslash < q) nextBackslash = buf.indexOf(BACKSLASH, q);
      if (nextAmpersand >= 0 && nextAmpersand < q) nextAmpersand = buf.indexOf(AMPERSAND, q);
      let next = buf.length;
      if (nextPercent >= 0 && nextPercent < next) next = nextPercent;
      if (nextBackslash >= 0 && nextBackslash < next) next = nextBackslash;
      if (nextAmpersand >= 0 && nextAmpersand < next) next = nextAmpersand;
      if (next === buf.length) {
        k += buf.length - q;
        break;
      }
      k += next - q;
      q = next;
      // (one that starts within a character's longest spelling of the end may read otherwise,
      // or only, with the bytes that follow)
      if (cut < 0 && buf.length - q < LONGEST_CHAR) cut = k;
      if (!base64Escape(buf, q)) {
        q++;
        k++;
        continue;
      }
      at.push(k);
      chars.push(escChar);
      starts.push(q);
      ends.push(escEnd);
      depths.push(escDepth);
      q = escEnd;
      k++;
    }
    let view: Buffer = buf.subarray(from);
    if (at.length > 0) {
      view = Buffer.allocUnsafe(k);
      let q = from;
      let v = 0;
      for (let j = 0; j < at.length; j++) {
        v += buf.copy(view, v, q, starts[j]);
        view[v++] = chars[j]!;
        q = ends[j]!;
      }
      buf.copy(view, v, q);
    }
    /** the escape read at or last before reading index `i`, or -1 */
    const escapeAt = (i: number) => {
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
    };
    /** where the byte at reading index `i` starts in `buf` */
    const startOf = (i: number) => {
      const j = escapeAt(i);
      if (j < 0) return from + i;
      return at[j] === i ? starts[j]! : ends[j]! + (i - at[j]! - 1);
    };
    /** where it ends */
    const endOf = (i: number) => {
      const j = escapeAt(i);
      return j >= 0 && at[j] === i ? ends[j]! : startOf(i) + 1;
    };
    /** the deepest URL escape read from reading index `i` to `last` */
    const depthOf = (i: number, last: number) => {
      let d = 0;
      for (let j = Math.max(0, escapeAt(i)); j < at.length && at[j]! <= last; j++)
        if (at[j]! >= i) d = Math.max(d, depths[j]!);
      return d;
    };
    return { view, decoded: at.length > 0, cut, startOf, endOf, depthOf };
  }

  private placeholder(to: string, depth: number): Buffer {
    if (depth === 0) return Buffer.from(to, "latin1");
    let out = urlEscaped(true, /[+/=]/g)(to);
    for (let d = 1; d < depth; d++) out = out.replaceAll("%", "%25");
    return Buffer.from(out, "latin1");
  }

  /**
   * The first occurrence from `from`, read in a window that doubles until it holds one or reaches
   * `before`: read to the end of `buf` at each call, an answer of k escaped echoes was read k times
   * whole (8,000 in 584 KB held the event loop 90 s). A window's reading is the whole buffer's up
   * to the last LONGEST_CHAR bytes, where an escape may be cut: an occurrence starting at least
   * `longest` before that is whole in it, and so is any that starts before it.
   */
  first(buf: Buffer, from: number, before: number): Match | null {
    if (from >= buf.length) return null;
    for (let span = this.longest + LONGEST_CHAR + WINDOW; ; span *= 2) {
      const end = from + span;
      if (end >= buf.length) return this.firstIn(buf, from, before);
      const safe = end - this.longest - LONGEST_CHAR;
      const m = this.firstIn(buf.subarray(0, end), from, Math.min(before, safe + 1));
      if (m !== null) return m;
      if (before <= safe + 1) return null;
    }
  }

  private firstIn(buf: Buffer, from: number, before: number): Match | null {
    const r = this.read(buf, from);
    // (read as written, the forms are Literal spellings of their own)
    if (!r.decoded) return null;
    let best: { i: number; f: { from: Buffer; to: string } } | null = null;
    for (const f of this.forms) {
      const i = r.view.indexOf(f.from);
      if (i < 0 || r.startOf(i) >= before) continue;
      if (best === null || i < best.i || (i === best.i && f.from.length > best.f.from.length))
        best = { i, f };
    }
    if (best === null) return null;
    const last = best.i + best.f.from.length - 1;
    return {
      at: r.startOf(best.i),
      end: r.endOf(last),
      to: this.placeholder(best.f.to, r.depthOf(best.i, last)),
    };
  }

  unfinished(buf: Buffer, from: number, before: number, work: { left: number }): number {
    const start = Math.max(from, buf.length - this.longest + 1);
    if (start >= before) return -1;
    work.left -= buf.length - start;
    if (work.left < 0) return from;
    const r = this.read(buf, start);
    // (read as written to the end, the forms' Literal spellings keep what they may start)
    if (!r.decoded && r.cut < 0) return -1;
    // the reading to where an escape the end may cut begins: an occurrence may go on there
    const whole = r.cut < 0 ? r.view.length : r.cut;
    let earliest = r.cut < 0 ? -1 : r.startOf(r.cut);
    for (const f of this.forms) {
      for (let i = Math.max(0, whole - f.from.length + 1); i < whole; i++) {
        const at = r.startOf(i);
        if (at >= before || (earliest >= 0 && at >= earliest)) break;
        work.left -= whole - i;
        if (work.left < 0) return from;
        if (f.from.compare(r.view, i, whole, 0, whole - i) === 0) {
          earliest = at;
          break;
        }
      }
    }
    return earliest >= 0 && earliest < before ? earliest : -1;
  }
}
