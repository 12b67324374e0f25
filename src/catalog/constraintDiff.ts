/**
 * The diff of the constraints on a value that hold no subschema: lower and upper bounds,
 * multipleOf, pattern and format (a format the validator does not check said so), uniqueItems.
 * Apart from the walk: each is a tightened, loosened or unprovable change of one keyword.
 */
import { sameJson } from "../util/canonical.js";
import { push } from "./fieldChange.js";
import { formatChecked, shortJson } from "./fieldSummary.js";
import { fieldName, type Obj, own } from "./schemaPath.js";
import type { FieldChange } from "./types.js";

export function diffBound(
  a: Obj,
  b: Obj,
  k: string,
  side: "lower" | "upper",
  path: string,
  out: FieldChange[],
): void {
  const av = own(a, k);
  const bv = own(b, k);
  if (sameJson(av, bv)) return;
  const okA = av === undefined || (typeof av === "number" && Number.isFinite(av));
  const okB = bv === undefined || (typeof bv === "number" && Number.isFinite(bv));
  const detail = { detail: `${fieldName(path)}: ${k} ${shortJson(av)} → ${shortJson(bv)}` };
  if (!okA || !okB) {
    push(out, path, `${k} changed (unrecognized)`, "expands", av, bv, detail);
    return;
  }
  let loosened: boolean;
  if (av === undefined)
    loosened = false; // a bound appears
  else if (bv === undefined)
    loosened = true; // a bound disappears
  else loosened = side === "lower" ? (bv as number) < (av as number) : (bv as number) > (av as number);
  if (loosened) push(out, path, `${k} loosened`, "expands", av, bv, detail);
  else push(out, path, `${k} tightened`, "narrows", av, bv, detail);
}

export function diffMultipleOf(a: Obj, b: Obj, path: string, out: FieldChange[]): void {
  const av = own(a, "multipleOf");
  const bv = own(b, "multipleOf");
  if (sameJson(av, bv)) return;
  const num = (v: unknown) => typeof v === "number" && Number.isFinite(v) && v > 0;
  if ((av !== undefined && !num(av)) || (bv !== undefined && !num(bv))) {
    push(out, path, "multipleOf changed (unrecognized)", "expands", av, bv);
  } else if (av === undefined) push(out, path, "multipleOf tightened", "narrows", av, bv);
  else if (bv === undefined) push(out, path, "multipleOf loosened", "expands", av, bv);
  else if (Number.isInteger((bv as number) / (av as number))) {
    push(out, path, "multipleOf tightened", "narrows", av, bv);
  } else if (Number.isInteger((av as number) / (bv as number))) {
    push(out, path, "multipleOf loosened", "expands", av, bv);
  } else push(out, path, "multipleOf changed", "expands", av, bv);
}

export function diffPatternOrFormat(
  a: Obj,
  b: Obj,
  k: "pattern" | "format",
  path: string,
  out: FieldChange[],
): void {
  const av = own(a, k);
  const bv = own(b, k);
  if (sameJson(av, bv)) return;
  // A format the validator does not check is no check at all: "tightened" must not read as one.
  const unchecked =
    k === "format" && typeof bv === "string" && !formatChecked(bv, own(b, "type")) ? " (not checked)" : "";
  const shown = (v: unknown) => (v === undefined ? "(absent)" : shortJson(v)); // not "undefined"
  const detail = { detail: `${fieldName(path)}: ${k} ${shown(av)} → ${shown(bv)}${unchecked}` };
  if ((av !== undefined && typeof av !== "string") || (bv !== undefined && typeof bv !== "string")) {
    push(out, path, `${k} changed (unrecognized)`, "expands", av, bv, detail);
  } else if (av === undefined) push(out, path, `${k} tightened (added)`, "narrows", av, bv, detail);
  else if (bv === undefined) push(out, path, `${k} loosened (removed)`, "expands", av, bv, detail);
  // Two different regular expressions (or formats) cannot be compared: unprovable.
  else push(out, path, `${k} changed`, "expands", av, bv, detail);
}

export function diffUniqueItems(a: Obj, b: Obj, path: string, out: FieldChange[]): void {
  const av = own(a, "uniqueItems");
  const bv = own(b, "uniqueItems");
  if (sameJson(av, bv)) return;
  const okA = av === undefined || typeof av === "boolean";
  const okB = bv === undefined || typeof bv === "boolean";
  if (!okA || !okB) push(out, path, "uniqueItems changed (unrecognized)", "expands", av, bv);
  else if ((av ?? false) === (bv ?? false)) push(out, path, "uniqueItems made explicit", "cosmetic", av, bv);
  else if (bv === true) push(out, path, "uniqueItems tightened", "narrows", av, bv);
  else push(out, path, "uniqueItems loosened", "expands", av, bv);
}
