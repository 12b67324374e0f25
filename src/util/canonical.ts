import { hash } from "node:crypto";
import canonicalize from "canonicalize";

/**
 * RFC 8785 (JSON Canonicalization Scheme) serialization.
 *
 * `canonicalJson` is the reference: it runs the `canonicalize` package, with one extension so
 * that a hostile or sloppy server cannot crash the gateway:
 *   - a string holding a lone UTF-16 surrogate (legal in JSON text, not in I-JSON) is written
 *     as its `\uXXXX` escape, exactly as `JSON.stringify` writes it, instead of throwing; the
 *     output stays injective, so two different tools never share a fingerprint;
 *   - everything else `canonicalize` refuses still throws. Cycles and NaN cannot come out of
 *     `JSON.parse`, but Infinity can: a number literal beyond double range is valid JSON text
 *     (`1e400`, `-1e400`) and parses to ±Infinity, which RFC 8785 cannot write. A tool holding
 *     one is dropped from the catalog ("cannot be fingerprinted (canonical JSON: non-finite
 *     number)", src/catalog/snapshot.ts), never served: the safe outcome, since a tool without a
 *     fingerprint could change unseen (test/gateway/bad-input.test.ts).
 *
 * `canonicalString` is the hot path used for fingerprints. It writes the same bytes as
 * `canonicalize` for every JSON value (property tests check this against the package), two to
 * three times faster: strings that need no escaping are copied, quoted keys are remembered, and
 * nesting is bounded by a depth counter instead of a set of visited objects.
 */
export function canonicalJson(v: unknown): string {
  try {
    const out = canonicalize(v);
    return out === undefined ? "null" : out;
  } catch (err) {
    if (err instanceof Error && /lone surrogate/i.test(err.message)) return canonicalString(v);
    throw err;
  }
}

interface WellFormed {
  isWellFormed?: () => boolean;
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** True when the string has no lone surrogate (String.prototype.isWellFormed where available). */
export function isWellFormedString(s: string): boolean {
  const f = (s as unknown as WellFormed).isWellFormed;
  return typeof f === "function" ? f.call(s) : !LONE_SURROGATE.test(s);
}

/** Nesting deeper than this is refused (JSON cannot be circular; a cycle ends here too). */
export const MAX_CANONICAL_DEPTH = 2000;

/**
 * Same output as `canonicalize` (RFC 8785) for any JSON value; lone surrogates are escaped
 * (JSON.stringify does that) rather than refused. Throws TypeError on values JSON cannot hold
 * and on nesting deeper than MAX_CANONICAL_DEPTH (which is also how a cycle ends).
 */
export function canonicalString(v: unknown): string {
  return write(v, 0);
}

/** Where a value holds a number RFC 8785 cannot write: the keys and indexes that lead to it, and the number. */
export interface NonFinite {
  path: (string | number)[];
  value: number;
}

/**
 * The first number in `v` that canonical JSON cannot write (±Infinity, which JSON.parse makes of a
 * literal beyond the double range such as `1e400`; NaN never comes out of JSON.parse), or null
 * when there is none. A client's values are checked with this before anything digests them, so
 * that such a request is refused with a reason instead of failing where its digest is taken.
 * Walks no deeper than MAX_CANONICAL_DEPTH (deeper values have no canonical form anyway, and
 * messages are held to far less when they are read). The path is built only for a hit.
 */
export function nonFiniteAt(v: unknown): NonFinite | null {
  const found = findNonFinite(v, 0);
  if (found !== null) found.path.reverse();
  return found;
}

function findNonFinite(v: unknown, depth: number): NonFinite | null {
  if (typeof v === "number") return Number.isFinite(v) ? null : { path: [], value: v };
  if (typeof v !== "object" || v === null || depth > MAX_CANONICAL_DEPTH) return null;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const found = findNonFinite(v[i], depth + 1);
      if (found !== null) {
        found.path.push(i);
        return found;
      }
    }
    return null;
  }
  const o = v as Record<string, unknown>;
  for (const k in o) {
    if (!Object.hasOwn(o, k)) continue;
    const found = findNonFinite(o[k], depth + 1);
    if (found !== null) {
      found.path.push(k);
      return found;
    }
  }
  return null;
}

/** Characters JSON.stringify would escape (or inspect: surrogates); anything else is copied. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what needs escaping
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;

/** The RFC 8785 form of a string: JSON.stringify's, which is skipped when nothing needs escaping. */
function quote(s: string): string {
  return NEEDS_ESCAPE.test(s) ? JSON.stringify(s) : '"' + s + '"';
}

/**
 * Object keys repeat across tools ("type", "description", …): remember each one's piece, with the
 * brace or comma before it and the colon after it, so that a member costs two string pieces (key
 * and value) instead of four. Fewer pieces is what makes the fingerprint of a large catalog fast:
 * both building the string and flattening it for the hash cost per piece.
 */
const firstKeys = new Map<string, string>();
const nextKeys = new Map<string, string>();
const MAX_REMEMBERED_KEYS = 4096;

function keyPiece(k: string, first: boolean): string {
  const memo = first ? firstKeys : nextKeys;
  let q = memo.get(k);
  if (q === undefined) {
    q = (first ? "{" : ",") + quote(k) + ":";
    if (memo.size < MAX_REMEMBERED_KEYS && k.length <= 64) memo.set(k, q);
  }
  return q;
}

/**
 * Sorts in place by UTF-16 code units (the RFC 8785 order). Objects in tool schemas have a handful
 * of keys, where an insertion sort beats Array.prototype.sort's call overhead; wide objects use
 * the built-in sort, whose default order is the same.
 */
function sortKeys(keys: string[]): void {
  const n = keys.length;
  if (n > 16) {
    keys.sort();
    return;
  }
  for (let i = 1; i < n; i++) {
    const k = keys[i] as string;
    let j = i - 1;
    while (j >= 0 && (keys[j] as string) > k) {
      keys[j + 1] = keys[j] as string;
      j--;
    }
    keys[j + 1] = k;
  }
}

// Written for speed: plain `+=` on strings (no template literals, no arrays to join), because the
// number of string pieces is what the fingerprint of a large catalog costs.
function write(v: unknown, depth: number): string {
  if (typeof v === "string") return quote(v);
  if (typeof v !== "object") {
    if (typeof v === "number") {
      if (!Number.isFinite(v)) throw new TypeError("canonical JSON: non-finite number");
      // ECMAScript Number::toString is the RFC 8785 number form (and -0 becomes 0).
      return String(v);
    }
    if (typeof v === "boolean") return v ? "true" : "false";
    if (v === undefined) return "null";
    throw new TypeError(`canonical JSON: cannot serialize a ${typeof v}`);
  }
  if (v === null) return "null";
  if (depth > MAX_CANONICAL_DEPTH) throw new TypeError("canonical JSON: nested too deep (or circular)");
  if (Array.isArray(v)) {
    const n = v.length;
    if (n === 0) return "[]";
    let out = "[";
    for (let i = 0; i < n; i++) {
      if (i > 0) out += ",";
      const x: unknown = v[i];
      out += x === undefined || typeof x === "symbol" ? "null" : write(x, depth + 1);
    }
    return out + "]";
  }
  const obj = v as Record<string, unknown> & { toJSON?: unknown };
  if (typeof obj.toJSON === "function") return write((obj.toJSON as () => unknown)(), depth + 1);
  const keys = Object.keys(obj);
  sortKeys(keys);
  let out = "";
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i] as string;
    const x = obj[k];
    if (x === undefined || typeof x === "symbol") continue;
    out += keyPiece(k, out === "");
    out += write(x, depth + 1);
  }
  return out === "" ? "{}" : out + "}";
}

/** Hex SHA-256 of a string's UTF-8 bytes, or of bytes. */
export function sha256Hex(data: string | Uint8Array): string {
  return hash("sha256", data, "hex");
}

/** Hex SHA-256 prefixed the way every digest in portcullis is written: "sha256:<hex>". */
export function sha256Tag(s: string): string {
  return `sha256:${sha256Hex(s)}`;
}

/**
 * Equality of two JSON values as RFC 8785 sees it (key order ignored, members whose value is
 * undefined skipped), without serializing them. Values nested deeper than MAX_CANONICAL_DEPTH are
 * never equal.
 */
export function sameJson(a: unknown, b: unknown): boolean {
  return equal(a, b, 0);
}

function equal(a: unknown, b: unknown, depth: number): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (depth > MAX_CANONICAL_DEPTH) return false;
  const arrA = Array.isArray(a);
  if (arrA !== Array.isArray(b)) return false;
  if (arrA) {
    const x = a as unknown[];
    const y = b as unknown[];
    if (x.length !== y.length) return false;
    for (let i = 0; i < x.length; i++) {
      const u = x[i];
      const w = y[i];
      if (u === w) continue;
      if (
        !equal(
          u === undefined || typeof u === "symbol" ? null : u,
          w === undefined || typeof w === "symbol" ? null : w,
          depth + 1,
        )
      )
        return false;
    }
    return true;
  }
  if (
    typeof (a as { toJSON?: unknown }).toJSON === "function" ||
    typeof (b as { toJSON?: unknown }).toJSON === "function"
  ) {
    try {
      return canonicalString(a) === canonicalString(b);
    } catch {
      return false;
    }
  }
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  const keysX = Object.keys(x);
  // Fast path, the shape JSON.parse produces (no member undefined, a symbol or a function): equal
  // objects then have as many keys, and every key of one is an own key of the other. Reading
  // y[k] without an own-property check is safe: a key y lacks reads undefined, or one of
  // Object.prototype's functions (never equal to a JSON value), except `__proto__`, which is
  // left to the general path.
  if (keysX.length === Object.keys(y).length) {
    let plain = true;
    for (let i = 0; i < keysX.length; i++) {
      const k = keysX[i] as string;
      const u = x[k];
      const w = y[k];
      if (
        u === undefined ||
        w === undefined ||
        typeof u === "symbol" ||
        typeof u === "function" ||
        k === "__proto__"
      ) {
        plain = false;
        break;
      }
      if (u !== w && !equal(u, w, depth + 1)) return false;
    }
    if (plain) return true;
  }
  // General path: members whose value is undefined (or a symbol) do not count.
  let count = 0;
  for (const k of keysX) {
    const u = x[k];
    if (u === undefined || typeof u === "symbol") continue;
    count++;
    if (!Object.hasOwn(y, k) || !equal(u, y[k], depth + 1)) return false;
  }
  for (const k of Object.keys(y)) {
    const w = y[k];
    if (w === undefined || typeof w === "symbol") continue;
    count--;
  }
  return count === 0;
}
