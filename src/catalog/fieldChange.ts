/**
 * The one way a schema diff appends a FieldChange (before and after only when there is one).
 * Apart so that every keyword's diff (textDiff.ts, typeDiff.ts, valueDiff.ts, …) writes its
 * changes alike without importing the walk.
 */
import type { Classification, FieldChange } from "./types.js";

export function push(
  out: FieldChange[],
  path: string,
  change: string,
  classification: Classification,
  before?: unknown,
  after?: unknown,
  extra: Partial<FieldChange> = {},
): void {
  const c: FieldChange = { path, change, classification };
  if (before !== undefined) c.before = before;
  if (after !== undefined) c.after = after;
  Object.assign(c, extra);
  out.push(c);
}
