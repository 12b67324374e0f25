/**
 * Field-level diff of two JSON Schemas (input or output), keyword by keyword.
 *
 * Classification follows one idea: does the new schema let more through (more fields, more
 * values, fewer constraints, a new default that changes what an omitted field means)? Then the
 * change `expands`. Does it provably let less through? Then it `narrows`. Text that only differs
 * in whitespace is `cosmetic`. The class of a whole schema change is settled by subset.ts. Anything this module does not understand,
 * cannot compare, or cannot prove is `expands`.
 *
 * Junk (non-object schemas, arrays as types, $ref, booleans, wrong value types) never throws.
 *
 * This file is the walk: each keyword one side has is handed to its diff (typeDiff.ts,
 * propertyChanges.ts, valueDiff.ts, constraintDiff.ts, textDiff.ts), and the keywords that hold
 * subschemas (properties, additionalProperties, items, the combinators, the maps) recurse here.
 */
import { sameJson } from "../util/canonical.js";
import { redactSchemaDefaults } from "../util/redact.js";
import { diffBound, diffMultipleOf, diffPatternOrFormat, diffUniqueItems } from "./constraintDiff.js";
import { push } from "./fieldChange.js";
import { describeField } from "./fieldSummary.js";
import { diffRequired, propertyAdded, requiredSet, shownProperty } from "./propertyChanges.js";
import { refOwners, withRefOwners } from "./refOwners.js";
import {
  LOWER_BOUNDS,
  MAX_SCHEMA_DEPTH,
  SCHEMA_MAPS,
  SUBSCHEMA_KEYWORDS,
  TEXT_KEYWORDS,
  UPPER_BOUNDS,
} from "./schemaKeywords.js";
import { childPath, isObj, type Obj, own } from "./schemaPath.js";
import { diffText } from "./textDiff.js";
import { diffType } from "./typeDiff.js";
import type { Classification, FieldChange } from "./types.js";
import { diffConst, diffDefault, diffEnum, keyOf, shownValue } from "./valueDiff.js";

/**
 * Diffs two schemas found at `path`. Both must be present (callers report presence changes);
 * `true` is read as `{}`, `false` as "accepts nothing".
 */
export function diffSchema(a: unknown, b: unknown, path: string, out: FieldChange[], depth = 0): void {
  if (sameJson(a, b)) return;
  if (depth === 0) {
    withRefOwners([a, b], () => diffSchemaAt(a, b, path, out, depth));
    return;
  }
  diffSchemaAt(a, b, path, out, depth);
}

function diffSchemaAt(a: unknown, b: unknown, path: string, out: FieldChange[], depth: number): void {
  if (depth > MAX_SCHEMA_DEPTH) {
    push(out, path, "schema changed deeper than the diff inspects", "expands");
    return;
  }
  const aOk = typeof a === "boolean" || isObj(a);
  const bOk = typeof b === "boolean" || isObj(b);
  if (!aOk || !bOk) {
    push(out, path, "schema changed (not a JSON Schema object or boolean)", "expands", a, b);
    return;
  }
  if (a === false) {
    push(out, path, "schema opened (was false: accepted nothing)", "expands", a, b);
    return;
  }
  if (b === false) {
    push(out, path, "schema closed (now false: accepts nothing)", "narrows", a, b);
    return;
  }
  diffKeywords(a === true ? {} : (a as Obj), b === true ? {} : (b as Obj), path, out, depth);
}

const HANDLED = new Set<string>([
  "type",
  "properties",
  "required",
  "enum",
  "const",
  "default",
  "multipleOf",
  "pattern",
  "format",
  "uniqueItems",
  "additionalProperties",
  "unevaluatedProperties",
  "prefixItems",
  "anyOf",
  "oneOf",
  "allOf",
  ...LOWER_BOUNDS,
  ...UPPER_BOUNDS,
  ...SUBSCHEMA_KEYWORDS,
  ...SCHEMA_MAPS,
  ...TEXT_KEYWORDS,
]);

function diffKeywords(a: Obj, b: Obj, path: string, out: FieldChange[], depth: number): void {
  // Each keyword's diff below says nothing when neither side has its keyword (own() is undefined
  // on both: the same), so it is asked only about keywords one side has: a schema names a few of
  // the forty, and asking each about every one was most of a 10,000-tool re-list's schema walk
  // (300,000 property schemas). Own names, enumerable or not, as own() reads them.
  const has = ownNames(a, b);
  if (has.has("type")) diffType(a, b, path, out);
  if (has.has("properties")) diffProperties(a, b, path, out, depth);
  if (has.has("required")) diffRequired(a, b, path, out);
  if (has.has("enum")) diffEnum(a, b, path, out);
  if (has.has("const")) diffConst(a, b, path, out);
  if (has.has("default")) diffDefault(a, b, path, out);
  for (const k of LOWER_BOUNDS) if (has.has(k)) diffBound(a, b, k, "lower", path, out);
  for (const k of UPPER_BOUNDS) if (has.has(k)) diffBound(a, b, k, "upper", path, out);
  if (has.has("multipleOf")) diffMultipleOf(a, b, path, out);
  if (has.has("pattern")) diffPatternOrFormat(a, b, "pattern", path, out);
  if (has.has("format")) diffPatternOrFormat(a, b, "format", path, out);
  if (has.has("uniqueItems")) diffUniqueItems(a, b, path, out);
  if (has.has("additionalProperties")) diffOpenness(a, b, "additionalProperties", path, out, depth);
  if (has.has("unevaluatedProperties")) diffOpenness(a, b, "unevaluatedProperties", path, out, depth);
  for (const k of SUBSCHEMA_KEYWORDS) if (has.has(k)) diffSubschema(a, b, k, path, out, depth);
  if (has.has("prefixItems")) diffPrefixItems(a, b, path, out, depth);
  if (has.has("anyOf")) diffCombinator(a, b, "anyOf", path, out, depth);
  if (has.has("oneOf")) diffCombinator(a, b, "oneOf", path, out, depth);
  if (has.has("allOf")) diffCombinator(a, b, "allOf", path, out, depth);
  for (const k of SCHEMA_MAPS) if (has.has(k)) diffSchemaMap(a, b, k, path, out, depth);
  for (const k of TEXT_KEYWORDS) {
    if (!has.has(k)) continue;
    const av = own(a, k);
    const bv = own(b, k);
    if (av !== bv) diffText(out, path, k === "$comment" ? "$comment" : k, av, bv);
  }
  // Everything else ($ref, $schema, $id, not, if/then/else, dependentRequired, examples, …):
  // not understood well enough to prove a narrowing.
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  for (const k of [...keys].sort()) {
    if (HANDLED.has(k)) continue;
    const av = own(a, k);
    const bv = own(b, k);
    if (sameJson(av, bv)) continue;
    const what = av === undefined ? "added" : bv === undefined ? "removed" : "changed";
    // `examples` are values of the property: shown as its default is (shownValue)
    if (k === "examples")
      push(
        out,
        path,
        `${k} ${what}`,
        "expands",
        shownValue(path, k, av, a, b),
        shownValue(path, k, bv, a, b),
      );
    else push(out, path, `${k} ${what}`, "expands", av, bv);
  }
}

/** The own property names of two objects (Object.hasOwn's: enumerable or not). */
function ownNames(a: Obj, b: Obj): Set<string> {
  const names = new Set(Object.getOwnPropertyNames(a));
  for (const k of Object.getOwnPropertyNames(b)) names.add(k);
  return names;
}

function diffProperties(a: Obj, b: Obj, path: string, out: FieldChange[], depth: number): void {
  const pa = own(a, "properties");
  const pb = own(b, "properties");
  if (sameJson(pa, pb)) return;
  const base = childPath(path, "properties");
  if ((pa !== undefined && !isObj(pa)) || (pb !== undefined && !isObj(pb))) {
    // a map of properties shown whole: each one's default, const and examples under its name
    const shown = (v: unknown) =>
      isObj(v) ? own(redactSchemaDefaults({ properties: v }, { refOwners: refOwners() }), "properties") : v;
    push(out, base, "properties changed (unrecognized)", "expands", shown(pa), shown(pb));
    return;
  }
  const ma: Obj = isObj(pa) ? pa : {};
  const mb: Obj = isObj(pb) ? pb : {};
  const reqB = requiredSet(b);
  const names = [...new Set([...Object.keys(ma), ...Object.keys(mb)])].sort();
  for (const n of names) {
    const inA = Object.hasOwn(ma, n);
    const inB = Object.hasOwn(mb, n);
    const p = childPath(base, n);
    if (inA && !inB) {
      // The old schema constrained this name; now only additionalProperties may, if anything.
      const closed = own(b, "patternProperties") === undefined && own(b, "additionalProperties") === false;
      const cls: Classification = closed ? "narrows" : "expands";
      const what = closed ? "property removed (no longer accepted)" : "property removed (now unconstrained)";
      push(out, p, what, cls, shownProperty(n, ma[n]), undefined, { detail: describeField(n, ma[n]) });
    } else if (!inA && inB) {
      out.push(propertyAdded(p, n, mb[n], reqB.has(n)));
    } else diffSchema(ma[n], mb[n], p, out, depth + 1);
  }
}

// --- openness --------------------------------------------------------------------------------

function diffOpenness(
  a: Obj,
  b: Obj,
  k: "additionalProperties" | "unevaluatedProperties",
  path: string,
  out: FieldChange[],
  depth: number,
): void {
  const av = own(a, k);
  const bv = own(b, k);
  if (sameJson(av, bv)) return;
  const state = (v: unknown) =>
    v === undefined || v === true ? "open" : v === false ? "closed" : isObj(v) ? "schema" : "junk";
  const sa = state(av);
  const sb = state(bv);
  const p = childPath(path, k);
  const label = k === "additionalProperties" ? "additionalProperties" : "unevaluatedProperties";
  if (sa === "junk" || sb === "junk") {
    push(out, p, `${label} changed (unrecognized)`, "expands", av, bv);
  } else if (sa === sb && sa === "open") {
    push(out, p, `${label} made explicit`, "cosmetic", av, bv);
  } else if (sa === "schema" && sb === "schema") {
    diffSchema(av, bv, p, out, depth + 1);
  } else if (sb === "open" || (sa === "closed" && sb === "schema")) {
    push(out, p, `${label} opened`, "expands", av, bv);
  } else {
    // open → closed, open → schema, schema → closed
    push(out, p, `${label} closed`, "narrows", av, bv);
  }
}

// --- nested schemas --------------------------------------------------------------------------

function diffSubschema(a: Obj, b: Obj, k: string, path: string, out: FieldChange[], depth: number): void {
  const av = own(a, k);
  const bv = own(b, k);
  if (sameJson(av, bv)) return;
  const p = childPath(path, k);
  if (k === "items" && (Array.isArray(av) || Array.isArray(bv))) {
    // draft-07 tuple form
    if (Array.isArray(av) && Array.isArray(bv)) diffSchemaList(av, bv, p, out, depth, "items");
    else push(out, p, "items changed (tuple form)", "expands", av, bv);
    return;
  }
  if (av === undefined) {
    push(out, p, `${k} added (constrains)`, "narrows", undefined, bv);
    return;
  }
  if (bv === undefined) {
    push(out, p, `${k} removed (no longer constrains)`, "expands", av, undefined);
    return;
  }
  diffSchema(av, bv, p, out, depth + 1);
}

function diffSchemaList(
  la: unknown[],
  lb: unknown[],
  p: string,
  out: FieldChange[],
  depth: number,
  k: string,
): void {
  const n = Math.min(la.length, lb.length);
  for (let i = 0; i < n; i++) diffSchema(la[i], lb[i], `${p}[${i}]`, out, depth + 1);
  if (la.length !== lb.length) push(out, p, `${k} length changed`, "expands", la.length, lb.length);
}

function diffPrefixItems(a: Obj, b: Obj, path: string, out: FieldChange[], depth: number): void {
  const av = own(a, "prefixItems");
  const bv = own(b, "prefixItems");
  if (sameJson(av, bv)) return;
  const p = childPath(path, "prefixItems");
  if (Array.isArray(av) && Array.isArray(bv)) diffSchemaList(av, bv, p, out, depth, "prefixItems");
  else push(out, p, "prefixItems changed", "expands", av, bv);
}

function diffCombinator(
  a: Obj,
  b: Obj,
  k: "anyOf" | "oneOf" | "allOf",
  path: string,
  out: FieldChange[],
  depth: number,
) {
  const av = own(a, k);
  const bv = own(b, k);
  if (sameJson(av, bv)) return;
  const p = childPath(path, k);
  // allOf: every branch must hold, so a new branch constrains; anyOf/oneOf: a new branch admits.
  const addMeans: Classification = k === "allOf" ? "narrows" : "expands";
  const removeMeans: Classification = k === "allOf" ? "expands" : "narrows";
  if ((av !== undefined && !Array.isArray(av)) || (bv !== undefined && !Array.isArray(bv))) {
    push(out, p, `${k} changed (unrecognized)`, "expands", av, bv);
    return;
  }
  if (av === undefined) {
    push(out, p, `${k} added`, "narrows", undefined, bv);
    return;
  }
  if (bv === undefined) {
    push(out, p, `${k} removed`, "expands", av, undefined);
    return;
  }
  const la = av as unknown[];
  const lb = bv as unknown[];
  if (la.length === lb.length) {
    for (let i = 0; i < la.length; i++) diffSchema(la[i], lb[i], `${p}[${i}]`, out, depth + 1);
    return;
  }
  const ka = new Set(la.map(keyOf));
  const kb = new Set(lb.map(keyOf));
  lb.forEach((s, i) => {
    if (!ka.has(keyOf(s))) push(out, `${p}[${i}]`, `${k} branch added`, addMeans, undefined, s);
  });
  la.forEach((s, i) => {
    if (!kb.has(keyOf(s))) push(out, `${p}[${i}]`, `${k} branch removed`, removeMeans, s, undefined);
  });
}

function diffSchemaMap(a: Obj, b: Obj, k: string, path: string, out: FieldChange[], depth: number): void {
  const av = own(a, k);
  const bv = own(b, k);
  if (sameJson(av, bv)) return;
  const base = childPath(path, k);
  if ((av !== undefined && !isObj(av)) || (bv !== undefined && !isObj(bv))) {
    push(out, base, `${k} changed (unrecognized)`, "expands", av, bv);
    return;
  }
  const ma: Obj = isObj(av) ? av : {};
  const mb: Obj = isObj(bv) ? bv : {};
  for (const n of [...new Set([...Object.keys(ma), ...Object.keys(mb)])].sort()) {
    const p = childPath(base, n);
    const inA = Object.hasOwn(ma, n);
    const inB = Object.hasOwn(mb, n);
    if (inA && inB) diffSchema(ma[n], mb[n], p, out, depth + 1);
    else {
      // patternProperties / dependentSchemas entries constrain: removing one loosens. $defs
      // entries matter only through $ref, which is never proved: either way expands.
      const constrains = k === "patternProperties" || k === "dependentSchemas";
      if (inB) push(out, p, `${k} entry added`, constrains ? "narrows" : "expands", undefined, mb[n]);
      else push(out, p, `${k} entry removed`, "expands", ma[n], undefined);
    }
  }
}
