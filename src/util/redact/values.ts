/** JSON values: what sits under a secret-named key, and every string in them as text. */

import { setOwn } from "../setOwn.js";
import { isSecretName, isSuspiciousName, looksRandom } from "./names.js";
import { REDACTED } from "./redacted.js";
import { redactText } from "./text.js";

export interface RedactOptions {
  /** what replaces a whole value under a secret-named key (default the string REDACTED) */
  marker?: unknown;
}

/**
 * A copy of a JSON value with every value under a secret-named key replaced (whatever its type:
 * an object under `auth` goes whole), every string redacted with redactText, and long random
 * strings under suspicious names (`key`, `access`, `refresh`, …) replaced. Other structure is
 * kept as it is.
 */
export function redactValue(value: unknown, opts: RedactOptions = {}): unknown {
  return redactValueUnder(null, value, opts);
}

/**
 * `value` redacted as if it sat under the key `key`: what a value given apart from its name needs
 * (a schema's default under its property's name, a top-level argument), so that the name decides
 * as it does for a value nested under it.
 */
export function redactValueUnder(key: string | null, value: unknown, opts: RedactOptions = {}): unknown {
  const marker = opts.marker ?? REDACTED;
  const walk = (v: unknown, key: string | null, seen: Set<object>): unknown => {
    if (
      key !== null &&
      isSecretName(key) &&
      v !== null &&
      v !== undefined &&
      v !== "" &&
      typeof v !== "boolean"
    ) {
      return isMarker(v, marker) ? v : marker;
    }
    if (typeof v === "string") {
      if (key !== null && isSuspiciousName(key) && looksRandom(v)) return marker;
      return redactText(v);
    }
    if (typeof v !== "object" || v === null) return v;
    if (seen.has(v)) return "[circular]";
    seen.add(v);
    try {
      if (Array.isArray(v)) return v.map((x) => walk(x, key, seen));
      const out: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v)) setOwn(out, k, walk(x, k, seen));
      return out;
    } finally {
      seen.delete(v);
    }
  };
  return walk(value, key, new Set());
}

/** A copy of a JSON value with every string redacted as text (redactText); keys decide nothing. */
export function redactStrings(value: unknown): unknown {
  if (typeof value === "string") return redactText(value);
  if (Array.isArray(value)) return value.map(redactStrings);
  if (typeof value !== "object" || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) setOwn(out, k, redactStrings(v));
  return out;
}

function isMarker(v: unknown, marker: unknown): boolean {
  if (v === marker || v === REDACTED) return true;
  return (
    typeof v === "object" &&
    v !== null &&
    typeof marker === "object" &&
    marker !== null &&
    JSON.stringify(v) === JSON.stringify(marker)
  );
}
