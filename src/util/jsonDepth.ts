/**
 * How deep a message may nest. JSON.parse takes any depth, but what the gateway then does with
 * a value walks it recursively: JSON.stringify (≈ 5,000 levels before it throws), the canonical
 * form that digests arguments, the schema compiler (a few hundred levels of schema), redaction,
 * scrubbing. A peer that nests deeper than any of them can follow must get an error, not crash
 * the gateway; so every message is held to one limit when it is read, far above anything an MCP
 * message needs and far below what the deepest of those walks can take.
 */
export const MAX_MESSAGE_DEPTH = 512;

/**
 * Whether `value` nests arrays and objects more than `limit` levels deep (a bare object or array
 * is one level). Recursive, but it never goes more than `limit` + 1 calls deep: it stops where the
 * limit is passed, so the values it exists to catch cannot exhaust its stack.
 */
export function nestsDeeperThan(value: unknown, limit: number): boolean {
  return exceeds(value, limit);
}

/** Whether `v` is more than `budget` levels deep; no allocation, for the messages of every call. */
function exceeds(v: unknown, budget: number): boolean {
  if (typeof v !== "object" || v === null) return false;
  if (budget === 0) return true;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) if (exceeds(v[i], budget - 1)) return true;
    return false;
  }
  const o = v as Record<string, unknown>;
  for (const k in o) if (exceeds(o[k], budget - 1)) return true;
  return false;
}

/**
 * Whether the value parsed from `text` nests more than `limit` levels deep. Each level costs at
 * least two characters of text (its opening and closing bracket), so a text of 2 × limit
 * characters or fewer cannot: the walk is paid only by long messages.
 */
export function parsedNestsDeeperThan(text: string, value: unknown, limit = MAX_MESSAGE_DEPTH): boolean {
  return text.length > 2 * limit && nestsDeeperThan(value, limit);
}
