/**
 * The v1 record header's one spelling, read byte by byte (docs/audit-format.md, "Records"):
 *
 *   {"epk":"<43 base64url, last in [AEIMQUYcgkosw048]>","key":"<32 hex>","nonce":"<16 base64url>",
 *    "pid":<1-10 digits, no leading 0>,"prev":"<64 hex>","seq":<1-16 digits, no leading 0>,
 *    "time":"<YYYY-MM-DDTHH:MM:SS.mmmZ>","type":"<[a-z][a-z_]{0,63}>","v":1,
 *    "writer":"<ULID: [0-7] then 25 of Crockford base32>"}
 *
 * (without the line breaks; hex is lowercase). Why not a regular expression: verifying a chain
 * reads every header, and matching this one with a regular expression cost as much as hashing
 * the record. A test checks this reader against the regular expression of the format.
 */

const B64URL = 1;
const HEX = 2;
const DIGIT = 4;
const TYPE = 8;
const CROCKFORD = 16;
/** The last character of 32 bytes in base64url: its low 4 bits are zero. */
const EPK_LAST = 32;
const OCTAL = 64;

const CLASS = (() => {
  const c = new Uint8Array(256);
  const add = (chars: string, bit: number) => {
    for (let i = 0; i < chars.length; i++) (c[chars.charCodeAt(i)] as number) |= bit;
  };
  const upper = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
  const lower = "abcdefghijklmnopqrstuvwxyz";
  const digits = "0123456789";
  add(upper + lower + digits + "-_", B64URL);
  add(`${digits}abcdef`, HEX);
  add(digits, DIGIT);
  add(`${lower}_`, TYPE);
  add(digits + upper.replace(/[ILOU]/g, ""), CROCKFORD);
  add("AEIMQUYcgkosw048", EPK_LAST);
  add("01234567", OCTAL);
  return c;
})();

const lit = (s: string) => Uint8Array.from(s, (ch) => ch.charCodeAt(0));
const OPEN_EPK = lit('{"epk":"');
const KEY = lit('","key":"');
const NONCE = lit('","nonce":"');
const PID = lit('","pid":');
const PREV = lit(',"prev":"');
const SEQ = lit('","seq":');
const TIME = lit(',"time":"');
const TYPE_ = lit('","type":"');
const V_WRITER = lit('","v":1,"writer":"');
const CLOSE = lit('"}');
const TIME_SHAPE = "dddd-dd-ddTdd:dd:dd.dddZ";

/** Where each field of a header lies in its bytes (start offsets; lengths are fixed or given). */
export interface HeaderLayout {
  epk: number;
  key: number;
  nonce: number;
  pid: number;
  pidEnd: number;
  prev: number;
  seq: number;
  seqEnd: number;
  time: number;
  type: number;
  typeEnd: number;
  writer: number;
  /** the seq value (a safe integer) */
  seqValue: number;
}

/**
 * Reads the header in b[0, end) (end = the offset of the record's first 0x0A). Returns where its
 * fields are, or null when those bytes are not a canonical v1 header. With `lineEnd`, the header
 * may end anywhere before `end` but must be followed by 0x0A (how the verifier reads a whole record
 * without searching for the separator first: no header byte can be 0x0A).
 */
export function scanHeader(b: Uint8Array, end: number, lineEnd = false): HeaderLayout | null {
  let at = expect(b, 0, end, OPEN_EPK);
  const epk = at;
  at = run(b, at, end, B64URL, 42, 42);
  if (at < 0 || at >= end || !((CLASS[b[at] as number] as number) & EPK_LAST)) return null;
  at = expect(b, at + 1, end, KEY);
  const key = at;
  at = expect(b, run(b, at, end, HEX, 32, 32), end, NONCE);
  const nonce = at;
  at = expect(b, run(b, at, end, B64URL, 16, 16), end, PID);
  const pid = at;
  const pidEnd = number(b, at, end, 10);
  at = expect(b, pidEnd, end, PREV);
  const prev = at;
  at = expect(b, run(b, at, end, HEX, 64, 64), end, SEQ);
  const seq = at;
  const seqEnd = number(b, at, end, 16);
  at = expect(b, seqEnd, end, TIME);
  const time = at;
  if (at < 0 || at + TIME_SHAPE.length > end) return null;
  for (let i = 0; i < TIME_SHAPE.length; i++) {
    const want = TIME_SHAPE.charCodeAt(i);
    const got = b[at + i] as number;
    if (want === 0x64 /* d */ ? !((CLASS[got] as number) & DIGIT) : got !== want) return null;
  }
  at = expect(b, at + TIME_SHAPE.length, end, TYPE_);
  const type = at;
  if (at < 0 || at >= end || (b[at] as number) === 0x5f /* _ */) return null;
  const typeEnd = run(b, at, end, TYPE, 1, 64);
  at = expect(b, typeEnd, end, V_WRITER);
  const writer = at;
  if (at < 0 || at >= end || !((CLASS[b[at] as number] as number) & OCTAL)) return null;
  at = expect(b, run(b, at + 1, end, CROCKFORD, 25, 25), end, CLOSE);
  if (lineEnd ? at < 0 || at >= end || b[at] !== 0x0a : at !== end) return null;
  let seqValue = 0;
  for (let i = seq; i < seqEnd; i++) seqValue = seqValue * 10 + ((b[i] as number) - 0x30);
  if (!Number.isSafeInteger(seqValue)) return null;
  return { epk, key, nonce, pid, pidEnd, prev, seq, seqEnd, time, type, typeEnd, writer, seqValue };
}

/** Offset after `s` when b[at…] starts with it; -1 otherwise (and for at = -1). */
function expect(b: Uint8Array, at: number, end: number, s: Uint8Array): number {
  if (at < 0 || at + s.length > end) return -1;
  for (let i = 0; i < s.length; i++) if (b[at + i] !== s[i]) return -1;
  return at + s.length;
}

/** Offset after a run of min…max bytes of class `cls` (the longest); -1 if shorter than min. */
function run(b: Uint8Array, at: number, end: number, cls: number, min: number, max: number): number {
  if (at < 0) return -1;
  let i = at;
  const stop = Math.min(end, at + max);
  while (i < stop && (CLASS[b[i] as number] as number) & cls) i++;
  return i - at >= min ? i : -1;
}

/** Offset after a decimal of 1…maxDigits digits without a leading zero; -1 otherwise. */
function number(b: Uint8Array, at: number, end: number, maxDigits: number): number {
  if (at < 0 || at >= end || (b[at] as number) === 0x30) return -1;
  return run(b, at, end, DIGIT, 1, maxDigits);
}
