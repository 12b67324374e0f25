import { hash } from "node:crypto";
import { type HeaderLayout, scanHeader } from "./header.js";

/**
 * The audit record format, version 1 (docs/audit-format.md is the reference).
 *
 * A record is one byte string:   header || 0x0A || sealed
 *   header  the RFC 8785 (JCS) canonical JSON of AuditHeader. Every value is drawn
 *           from a small ASCII alphabet, so a header has exactly one spelling,
 *           read by scanHeader (header.ts), and never contains 0x0A
 *   sealed  ChaCha20-Poly1305 ciphertext || 16-byte tag of the event (seal.ts)
 * Its hash is the lowercase hex SHA-256 of those bytes; header.prev is the hash of
 * the record before (GENESIS_PREV for seq 1).
 */

export interface AuditHeader {
  v: 1;
  seq: number;
  prev: string;
  time: string;
  type: string;
  writer: string;
  pid: number;
  key: string;
  epk: string;
  nonce: string;
}

/** A record as the store holds it: header || 0x0A || sealed. */
export type StoredRecord = Uint8Array;

export const GENESIS_PREV = "0".repeat(64);
const LF = 0x0a;

/**
 * The header's canonical text. Written out field by field in JCS order (a test
 * checks it against canonicalize()); throws if a field is outside its alphabet.
 */
export function encodeHeader(h: AuditHeader): string {
  const text =
    `{"epk":"${h.epk}","key":"${h.key}","nonce":"${h.nonce}","pid":${h.pid},"prev":"${h.prev}",` +
    `"seq":${h.seq},"time":"${h.time}","type":"${h.type}","v":1,"writer":"${h.writer}"}`;
  if (
    !Number.isSafeInteger(h.seq) ||
    NOT_ASCII.test(text) ||
    !scanHeader(Buffer.from(text, "latin1"), text.length)
  )
    throw new Error(`audit header out of format: ${text}`);
  return text;
}

/** The fields of a header that stay the same for every record of one writer session. */
export type SessionFields = Pick<AuditHeader, "epk" | "key" | "writer" | "pid">;

const VARYING = {
  prev: /^[0-9a-f]{64}$/,
  time: /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/,
  type: /^[a-z][a-z_]{0,63}$/,
  nonce: /^[A-Za-z0-9_-]{16}$/,
};

/**
 * The headers of one writer session, written as encodeHeader writes them (the same bytes: a
 * property test compares the two and canonicalize()), for less: the session's fields are checked
 * once, by encodeHeader, when the writer is made, and each record's own fields (seq, prev, time,
 * type, nonce) by a test of its alphabet alone, instead of reading the whole text back byte by
 * byte. Throws, as encodeHeader does, when a field is outside its alphabet.
 */
export class HeaderWriter {
  private readonly opening: string;
  private readonly pid: string;
  private readonly closing: string;

  constructor(fixed: SessionFields) {
    encodeHeader({ ...fixed, v: 1, seq: 1, prev: GENESIS_PREV, time: EPOCH, type: "t", nonce: NONCE0 });
    this.opening = `{"epk":"${fixed.epk}","key":"${fixed.key}","nonce":"`;
    this.pid = `","pid":${fixed.pid},"prev":"`;
    this.closing = `","v":1,"writer":"${fixed.writer}"}`;
  }

  text(seq: number, prev: string, time: string, type: string, nonce: string): string {
    if (
      !(Number.isSafeInteger(seq) && seq >= 1) ||
      !VARYING.prev.test(prev) ||
      !VARYING.time.test(time) ||
      !VARYING.type.test(type) ||
      !VARYING.nonce.test(nonce)
    ) {
      throw new Error(`audit header out of format: seq ${seq}, prev ${prev}, time ${time}, type ${type}`);
    }
    return `${this.opening}${nonce}${this.pid}${prev}","seq":${seq},"time":"${time}","type":"${type}${this.closing}`;
  }
}
const EPOCH = "2000-01-01T00:00:00.000Z";
const NONCE0 = "AAAAAAAAAAAAAAAA";

/** Parses a v1 header in its one canonical spelling; null for anything else. */
export function parseHeader(text: string): AuditHeader | null {
  // The header is ASCII: a wider character must not pass for the byte latin1 would make of it.
  if (NOT_ASCII.test(text)) return null;
  const b = Buffer.from(text, "latin1");
  const l = scanHeader(b, b.length);
  if (!l) return null;
  const at = (start: number, end: number) => b.toString("latin1", start, end);
  return {
    v: 1,
    seq: l.seqValue,
    prev: at(l.prev, l.prev + 64),
    time: at(l.time, l.time + 24),
    type: at(l.type, l.typeEnd),
    writer: at(l.writer, l.writer + 26),
    pid: Number(at(l.pid, l.pidEnd)),
    key: at(l.key, l.key + 32),
    epk: at(l.epk, l.epk + 43),
    nonce: at(l.nonce, l.nonce + 16),
  };
}

const NOT_ASCII = /[^\x20-\x7e]/;

/**
 * The chain fields of a record, read in place (the verifier's hot path): the header's layout,
 * or null when the record has no canonical v1 header before its first 0x0A.
 */
export function chainFields(record: Uint8Array): HeaderLayout | null {
  return scanHeader(record, record.length, true);
}

/** header || 0x0A || sealed, in a new buffer. */
export function recordBytes(header: string, sealed: Uint8Array): Buffer {
  const out = newRecord(header, sealed.length);
  out.set(sealed, header.length + 1);
  return out;
}

/** A record buffer holding header || 0x0A, with room for `sealedLength` bytes after it. */
export function newRecord(header: string, sealedLength: number): Buffer {
  const out = Buffer.allocUnsafe(header.length + 1 + sealedLength);
  out.write(header, 0, "latin1");
  out[header.length] = LF;
  return out;
}

/** The header text of a record (the bytes before its first 0x0A); null when there is none. */
export function headerOf(record: Uint8Array): string | null {
  const b = asBuffer(record);
  const at = b.indexOf(LF);
  return at < 0 ? null : b.toString("latin1", 0, at);
}

/** The header text and the sealed bytes of a record; null when there is no separator. */
export function splitRecord(record: Uint8Array): { header: string; sealed: Buffer } | null {
  const b = asBuffer(record);
  const at = b.indexOf(LF);
  if (at < 0) return null;
  return { header: b.toString("latin1", 0, at), sealed: b.subarray(at + 1) };
}

const asBuffer = (u: Uint8Array): Buffer =>
  Buffer.isBuffer(u) ? u : Buffer.from(u.buffer, u.byteOffset, u.byteLength);

/** Lowercase hex SHA-256 of the record's bytes. */
export function recordHash(record: Uint8Array): string {
  return hash("sha256", record, "hex");
}

/**
 * One export line (no trailing newline): the JCS canonical form of
 * {"hash": hex, "header": <header object>, "sealed": base64url}.
 */
export function exportLine(record: Uint8Array): string {
  const parts = splitRecord(record);
  if (!parts) throw new Error("a stored audit record has no header separator");
  return `{"hash":"${recordHash(record)}","header":${parts.header},"sealed":"${parts.sealed.toString("base64url")}"}`;
}

/**
 * The length of exportLine(record), in characters (one byte each: an export is ASCII), found
 * without making the line: a line longer than V8's longest string cannot be made at all, and a
 * caller must know before it writes anything (src/cli/audit.ts). Null when there is no header
 * separator (exportLine throws).
 */
export function exportLineLength(record: Uint8Array): number | null {
  const at = asBuffer(record).indexOf(LF);
  if (at < 0) return null;
  const sealed = record.length - at - 1;
  // base64url without padding: 4 characters for each 3 bytes, 2 or 3 for the 1 or 2 left over
  const encoded = Math.floor(sealed / 3) * 4 + [0, 2, 3][sealed % 3]!;
  return LINE_START.length + 64 + HEADER_KEY.length + at + SEALED_KEY.length + encoded + LINE_END.length;
}

// The line, in its one spelling: {"hash":"<64 hex>","header":{…},"sealed":"<base64url>"}
const LINE_START = '{"hash":"';
const HEADER_KEY = '","header":';
const SEALED_KEY = ',"sealed":"';
const LINE_END = '"}';
const HEADER_AT = LINE_START.length + 64 + HEADER_KEY.length;
/** A SHA-256 in lowercase hex: how record hashes are written. */
export const HEX64 = /^[0-9a-f]{64}$/;
const B64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/**
 * Parses an export line in its one canonical spelling into the record bytes and
 * the hash the line states; a string says what is wrong. Read by position rather than by one
 * regular expression: a verifier parses every line, and matching the whole line cost as much as
 * hashing the record.
 */
export function parseExportLine(line: string): { record: Buffer; hash: string } | string {
  const notCanonical = "the line is not a canonical export record";
  if (!line.startsWith(LINE_START) || !line.startsWith(HEADER_KEY, LINE_START.length + 64))
    return notCanonical;
  if (!line.endsWith(LINE_END)) return notCanonical;
  const hash = line.slice(LINE_START.length, LINE_START.length + 64);
  const sealedKey = line.indexOf(SEALED_KEY, HEADER_AT);
  const sealedAt = sealedKey + SEALED_KEY.length;
  // (the closing quote of the payload must not be the opening one: `"sealed":"}`)
  if (sealedKey < 0 || sealedAt > line.length - LINE_END.length || !HEX64.test(hash)) return notCanonical;
  // The header: one object without nested braces. The verifier reads it in full, like any stored
  // record's. It is ASCII; a wider character would be written back as the one byte latin1 makes
  // of it (U+0130 as "0"), so that a different line would stand for the same record.
  const header = line.slice(HEADER_AT, sealedKey);
  if (
    header.charCodeAt(0) !== 0x7b ||
    header.indexOf("{", 1) >= 0 ||
    header.indexOf("}") !== header.length - 1 ||
    NOT_ASCII.test(header)
  ) {
    return notCanonical;
  }
  const b64 = line.slice(sealedAt, line.length - LINE_END.length);
  // base64url in its one spelling: no length that leaves a lone character, no stray bits in the
  // last character, no "+" or "/" (which Node decodes as "-" and "_"). Node's decoder skips or
  // stops at any other character, which shows as fewer bytes than the length promises.
  const tail = b64.length % 4;
  const spare = tail === 2 ? 15 : tail === 3 ? 3 : 0;
  if (
    tail === 1 ||
    (spare && B64URL.indexOf(b64[b64.length - 1] as string) & spare) ||
    b64.includes("+") ||
    b64.includes("/")
  ) {
    return "the sealed payload is not canonical base64url";
  }
  const sealedLength = (b64.length >> 2) * 3 + (tail === 0 ? 0 : tail - 1);
  const record = newRecord(header, sealedLength);
  if (record.write(b64, header.length + 1, "base64url") !== sealedLength) {
    return "the sealed payload is not canonical base64url";
  }
  return { record, hash };
}
