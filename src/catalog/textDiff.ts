/**
 * The text keywords of a schema (description, title, $comment) and a tool's own description:
 * cosmetic only when provably so (whitespace), and an `expands` change that names the new
 * effects a new text claims. Apart from the schema walk: diff.ts compares tool descriptions with
 * it too.
 */
import { push } from "./fieldChange.js";
import { isCosmeticTextChange, newEffectVerbs } from "./text.js";
import type { FieldChange } from "./types.js";

export function diffText(
  out: FieldChange[],
  path: string,
  label: string,
  before: unknown,
  after: unknown,
): void {
  if (before === after) return;
  if (typeof before === "string" && typeof after === "string") {
    if (isCosmeticTextChange(before, after)) {
      push(out, path, `${label} changed (whitespace only)`, "cosmetic", before, after);
      return;
    }
    const effects = newEffectVerbs(before, after);
    const change = effects.length > 0 ? `${label} changed: names new effects` : `${label} changed`;
    push(out, path, change, "expands", before, after, effects.length > 0 ? { newEffects: effects } : {});
    return;
  }
  if (before === undefined && typeof after === "string") {
    const effects = newEffectVerbs("", after);
    const extra = effects.length > 0 ? { newEffects: effects } : {};
    push(out, path, `${label} added`, "expands", undefined, after, extra);
    return;
  }
  if (typeof before === "string" && after === undefined) {
    push(out, path, `${label} removed`, "expands", before, undefined);
    return;
  }
  push(out, path, `${label} changed (not a string)`, "expands", before, after);
}
