/**
 * The `type` keyword's diff: a set of types widened, narrowed, rewritten or changed (an integer
 * is a number). Apart from the walk: one keyword, no subschemas.
 */
import { sameJson } from "../util/canonical.js";
import { push } from "./fieldChange.js";
import { typeText } from "./fieldSummary.js";
import { fieldName, type Obj, own } from "./schemaPath.js";
import type { FieldChange } from "./types.js";

type TypeSet = { kind: "any" } | { kind: "set"; types: Set<string> } | { kind: "junk" };

function typeSet(t: unknown): TypeSet {
  if (t === undefined) return { kind: "any" };
  if (typeof t === "string") return { kind: "set", types: new Set([t]) };
  if (Array.isArray(t) && t.every((x) => typeof x === "string")) return { kind: "set", types: new Set(t) };
  return { kind: "junk" };
}

function covers(s: Set<string>, t: string): boolean {
  return s.has(t) || (t === "integer" && s.has("number"));
}

function covering(big: Set<string>, small: Set<string>): boolean {
  for (const t of small) if (!covers(big, t)) return false;
  return true;
}

export function diffType(a: Obj, b: Obj, path: string, out: FieldChange[]): void {
  const av = own(a, "type");
  const bv = own(b, "type");
  if (sameJson(av, bv)) return;
  const ta = typeSet(av);
  const tb = typeSet(bv);
  const name = fieldName(path);
  if (ta.kind === "junk" || tb.kind === "junk") {
    push(out, path, "type changed (unrecognized)", "expands", av, bv);
    return;
  }
  if (ta.kind === "any" && tb.kind === "set") {
    push(out, path, "type narrowed", "narrows", av, bv, { detail: `${name}: any type → ${typeText(bv)}` });
    return;
  }
  if (ta.kind === "set" && tb.kind === "any") {
    push(out, path, "type widened", "expands", av, bv, { detail: `${name}: ${typeText(av)} → any type` });
    return;
  }
  if (ta.kind === "set" && tb.kind === "set") {
    const detail = { detail: `${name}: ${typeText(av)} → ${typeText(bv)}` };
    const widened = covering(tb.types, ta.types);
    const narrowed = covering(ta.types, tb.types);
    if (widened && narrowed) {
      push(out, path, "type rewritten (same types)", "cosmetic", av, bv, detail);
    } else if (widened) push(out, path, "type widened", "expands", av, bv, detail);
    else if (narrowed) push(out, path, "type narrowed", "narrows", av, bv, detail);
    else push(out, path, "type changed", "expands", av, bv, detail);
  }
}
