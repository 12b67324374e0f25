import * as nodeCrypto from "node:crypto";
import { createHash } from "node:crypto";
import canonicalize from "canonicalize";

/**
 * RFC 8785 (JSON Canonicalization Scheme) serialization.
 *
 * `canonicalJson` is the reference: it runs the `canonicalize` package. Two extensions keep a
 * hostile or sloppy server from crashing the gateway:
 *   - a string holding a lone UTF-16 surrogate (legal in JSON text, not in I-JSON) is written
 *     as its `\uXXXX` escape, exactly as `JSON.stringify` writes it, instead of throwing; the
 *     output stays injective, so two different tools never share a fingerprint;
 *   - everything else `canonicalize` refuses (NaN, Infinity, cycles) still throws: those values
 *     cannot come out of `JSON.parse`.
 *
 * `canonicalString` is the hot path used for fingerprints. It writes the same bytes as
 * `canonicalize` for every JSON value (property tests check this against the package), about
 * twice as fast, and applies the lone-surrogate extension directly.
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

/**
 * Same output as `canonicalize` (RFC 8785) for any JSON value; lone surrogates are escaped
 * (JSON.stringify does that) rather than refused. Throws TypeError on values JSON cannot hold.
 */
export function canonicalString(v: unknown): string {
  return write(v, new Set());
}

function write(v: unknown, seen: Set<object>): string {
  switch (typeof v) {
    case "string":
      return JSON.stringify(v);
    case "number":
      if (!Number.isFinite(v)) throw new TypeError("canonical JSON: non-finite number");
      // ECMAScript Number::toString is the RFC 8785 number form (and -0 becomes 0).
      return JSON.stringify(v);
    case "boolean":
      return v ? "true" : "false";
    case "object":
      break;
    case "undefined":
      return "null";
    default:
      throw new TypeError(`canonical JSON: cannot serialize a ${typeof v}`);
  }
  if (v === null) return "null";
  const obj = v as Record<string, unknown> & { toJSON?: unknown };
  if (typeof obj.toJSON === "function") {
    if (seen.has(obj)) throw new TypeError("canonical JSON: circular reference");
    seen.add(obj);
    const r = write((obj.toJSON as () => unknown)(), seen);
    seen.delete(obj);
    return r;
  }
  if (seen.has(obj)) throw new TypeError("canonical JSON: circular reference");
  seen.add(obj);
  let out: string;
  if (Array.isArray(obj)) {
    out = "[";
    for (let i = 0; i < obj.length; i++) {
      if (i > 0) out += ",";
      const x: unknown = obj[i];
      out += x === undefined || typeof x === "symbol" ? "null" : write(x, seen);
    }
    out += "]";
  } else {
    // Array.prototype.sort without a comparator orders by UTF-16 code units: the RFC 8785 order.
    const keys = Object.keys(obj).sort();
    out = "{";
    let first = true;
    for (const k of keys) {
      const x = obj[k];
      if (x === undefined || typeof x === "symbol") continue;
      if (!first) out += ",";
      first = false;
      out += JSON.stringify(k) + ":" + write(x, seen);
    }
    out += "}";
  }
  seen.delete(obj);
  return out;
}

type OneShotHash = (algorithm: string, data: string, encoding: "hex") => string;
const oneShot: OneShotHash | undefined = (nodeCrypto as unknown as { hash?: OneShotHash }).hash;

/** Hex SHA-256 of the UTF-8 bytes of a string. */
export function sha256Hex(s: string): string {
  if (oneShot) return oneShot("sha256", s, "hex");
  return createHash("sha256").update(s, "utf8").digest("hex");
}

/** Hex SHA-256 prefixed the way every digest in portcullis is written: "sha256:<hex>". */
export function sha256Tag(s: string): string {
  return `sha256:${sha256Hex(s)}`;
}

/** Canonical equality of two JSON values; values that cannot be serialized are never equal. */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  try {
    return canonicalString(a) === canonicalString(b);
  } catch {
    return false;
  }
}
