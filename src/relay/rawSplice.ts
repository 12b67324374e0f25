/**
 * Forwarding a relayed message as it was written, with only its top-level id
 * replaced, instead of `JSON.stringify` of the parsed message.
 *
 * The message has already been parsed and classified (that is the validation:
 * bad JSON, bad shapes and batches never get here). What this adds is the
 * guarantee that the bytes forwarded mean to the next parser what the parsed
 * value meant to the gateway, so a parser that reads duplicate keys first-wins,
 * or splits lines on `\r`, can never see another method or id than the gateway
 * did. `plainIdSpan` answers null (the caller falls back to re-serialising) when:
 *
 * - a top-level key is written with an escape (`"\u0069d"` is `id` to a parser
 *   but not to a byte scan) or appears twice (which one wins depends on the parser);
 * - the message has no top-level `"id"`, or its value is not a string or number token;
 * - a carriage return or a line feed stands between tokens (JSON whitespace, but a
 *   line reader ends a line there: a pretty-printed body from an HTTP upstream,
 *   spliced as written, would reach a stdio client as several broken lines).
 *
 * Nested duplicate keys are left as written: the gateway reads nothing below the
 * top level of a message it only relays.
 */
import { rawIdOf } from "./idScan.js";
import type { Id } from "./jsonrpc.js";

export interface IdSpan {
  /** offset of the id value's first character */
  start: number;
  /** offset just past its last character */
  end: number;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/** Where the sole top-level id value of a parsed, single-object message lies; null when it must be re-serialised. */
export function plainIdSpan(text: string): IdSpan | null {
  const n = text.length;
  let i = skipSpace(text, 0);
  if (i < 0 || text.charCodeAt(i) !== 0x7b /* { */) return null;
  i++;
  const keys: string[] = [];
  let span: IdSpan | null = null;
  for (;;) {
    i = skipSpace(text, i);
    if (i < 0) return null;
    if (text.charCodeAt(i) === 0x7d /* } */) break; // an empty object, or after a trailing member
    if (text.charCodeAt(i) !== QUOTE) return null;
    const keyEnd = text.indexOf('"', i + 1);
    if (keyEnd === -1) return null;
    const key = text.slice(i + 1, keyEnd);
    if (key.includes("\\") || keys.includes(key)) return null;
    keys.push(key);
    i = skipSpace(text, keyEnd + 1);
    if (i < 0 || text.charCodeAt(i) !== 0x3a /* : */) return null;
    i = skipSpace(text, i + 1);
    if (i < 0) return null;
    const valueEnd = endOfValue(text, i);
    if (valueEnd < 0) return null;
    if (key === "id") {
      const first = text.charCodeAt(i);
      if (first !== QUOTE && first !== 0x2d /* - */ && !(first >= 0x30 && first <= 0x39)) return null;
      span = { start: i, end: valueEnd };
    }
    i = skipSpace(text, valueEnd);
    if (i < 0) return null;
    const c = text.charCodeAt(i);
    if (c === 0x2c /* , */) {
      i++;
      continue;
    }
    if (c !== 0x7d) return null;
    break;
  }
  // nothing but plain whitespace after the object
  return skipSpace(text, i + 1) === n ? span : null;
}

/** The message with its id value replaced by `idText` (JSON text). */
export function spliceId(text: string, span: IdSpan, idText: string): string {
  return text.slice(0, span.start) + idText + text.slice(span.end);
}

/**
 * Index of the first non-space character from `i` (or `text.length` at the end); -1 when a
 * character other than space or tab stands outside a string (a carriage return,
 * which JSON allows as whitespace but some line readers take for the end of a line).
 */
function skipSpace(text: string, i: number): number {
  for (; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x20 || c === 0x09) continue;
    if (c < 0x20) return -1;
    return i;
  }
  return i;
}

/** Index just past the JSON value starting at `i` (already known to be valid JSON), or -1. */
function endOfValue(text: string, i: number): number {
  let depth = 0;
  for (; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      for (i++; i < text.length; i++) {
        const s = text.charCodeAt(i);
        if (s === BACKSLASH) i++;
        else if (s === QUOTE) break;
      }
      if (i >= text.length) return -1;
      if (depth === 0) return i + 1;
      continue;
    }
    if (c === 0x7b || c === 0x5b) {
      depth++;
      continue;
    }
    if (c === 0x7d || c === 0x5d) {
      if (depth === 0) return i; // the enclosing object's end: a scalar ended here
      depth--;
      if (depth === 0) return i + 1;
      continue;
    }
    if (c < 0x20 && c !== 0x09) return -1; // a carriage return between tokens: see skipSpace
    if (depth === 0 && (c === 0x2c || c === 0x20 || c === 0x09)) return i;
  }
  return depth === 0 ? i : -1;
}

/**
 * The top-level id of a parsed message as its sender wrote it (`9007199254740993`, `1e2`, `-0`,
 * `"\u0041"`, a string of any length), so an answer can carry it back byte for byte: the text of
 * its sole id when `plainIdSpan` finds it, else the id scanner's (which reads past line breaks
 * and escaped keys, up to 1 KiB of id), provided that text is of this very value (a message with
 * two ids is read by its last). Otherwise the id's serialised value.
 */
export function writtenIdOf(text: string, id: Id): string {
  const span = plainIdSpan(text);
  const raw = span ? text.slice(span.start, span.end) : rawIdOf(text);
  const plain = JSON.stringify(id);
  if (raw === null || raw === plain) return plain;
  try {
    return JSON.parse(raw) === id ? raw : plain;
  } catch {
    return plain;
  }
}

/**
 * `msg` serialised with `idText` (an id's JSON text, as `writtenIdOf` gives it) as its one
 * top-level id: the id is written first, then every other member as `JSON.stringify` writes it.
 */
export function serializeWithId(msg: object, idText: string): string {
  const { id: _id, ...rest } = msg as { id?: unknown };
  const body = JSON.stringify(rest);
  return body === "{}" ? `{"id":${idText}}` : `{"id":${idText},${body.slice(1)}`;
}
