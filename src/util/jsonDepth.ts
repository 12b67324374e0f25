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
 * is one level). Iterative, so that it cannot run out of stack on the values it exists to catch.
 */
export function nestsDeeperThan(value: unknown, limit: number): boolean {
  if (typeof value !== "object" || value === null) return false;
  const values: object[] = [value];
  const depths: number[] = [1];
  while (values.length > 0) {
    const v = values.pop() as object;
    const depth = depths.pop() as number;
    if (depth > limit) return true;
    const children: unknown[] = Array.isArray(v) ? v : Object.values(v);
    for (const child of children) {
      if (typeof child === "object" && child !== null) {
        values.push(child);
        depths.push(depth + 1);
      }
    }
  }
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
