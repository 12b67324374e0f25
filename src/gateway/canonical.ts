import canonicalize from "canonicalize";

/** Equality of two JSON values by their RFC 8785 canonical form (key order does not matter). */
export function canonicalEqual(a: unknown, b: unknown): boolean {
  return canonicalize(a ?? null) === canonicalize(b ?? null);
}
