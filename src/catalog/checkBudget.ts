/**
 * A budget on the work of one check of a call's arguments, counted while ajv runs, so that the
 * static bound (checkCost.ts) is not the only thing between a server's schema and the gateway's
 * event loop.
 *
 * checkCost.ts proves, from the schema alone, that no value of the arguments is checked against
 * more than MAX_CHECKS_PER_VALUE subschemas, and refuses the tool otherwise. That proof mirrors
 * how ajv resolves references, by hand; a way ajv resolves them that the mirror misses (three were
 * found after it was written) would let a schema check one value millions of times. So every
 * subschema of the schema ajv compiles carries one more keyword, whose code counts, and a check
 * that counts past MAX_CHECKS_PER_VALUE per value of the arguments stops with CheckOverBudget:
 * the call is refused, the gateway goes on. Within a sound static bound it never fires.
 * A check holds no reference to the arguments after it ends: the next startBudget replaces it,
 * and validator.ts clears it (endBudget).
 */
import type { CodeKeywordDefinition } from "ajv";
import { setOwn } from "../util/setOwn.js";
import { MAX_CHECKS_PER_VALUE } from "./checkCost.js";
import type { CodeTemplates } from "./hashedKeywords.js";

/** The keyword added to each subschema (a name no schema uses: it is ours, in a copy). */
const COUNTING_KEYWORD = "x-portcullis-counted";

/** Thrown from inside ajv's check when the budget is spent. */
export class CheckOverBudget extends Error {
  constructor(readonly budget: number) {
    super(`checking them took more than ${budget.toLocaleString("en-US")} subschema checks`);
  }
}

/**
 * The budget a check starts with, before the arguments' values are counted: enough for any call
 * of up to 64 values, and for most larger ones (a check uses about as many subschemas as the call
 * has values). Counting values costs about 10 ns each, more than ajv's own check of a simple
 * array item, so it is done only when a check has spent this much (a millisecond or two of work).
 */
const UPFRONT = MAX_CHECKS_PER_VALUE * 64;

/** What the inlined code decrements; read and reset here. */
const budget = { left: 0 };
let granted = 0;
let counted = false;
let args: unknown;

/** Before each check of `value` (a call's arguments). */
export function startBudget(value: unknown): void {
  args = value;
  granted = UPFRONT;
  budget.left = UPFRONT;
  counted = false;
}

/** After each check: the arguments are not kept alive by the budget. */
export function endBudget(): void {
  args = undefined;
}

/** Called by the inlined code when `budget.left` goes below zero: grow once, or stop the check. */
function overrun(): void {
  if (!counted) {
    counted = true;
    const full = MAX_CHECKS_PER_VALUE * (valueCount(args) + 1);
    if (full > granted) {
      budget.left += full - granted;
      granted = full;
      if (budget.left >= 0) return;
    }
  }
  throw new CheckOverBudget(granted);
}

/** JSON values in `v` (itself, and every member and item, at any depth). */
export function valueCount(v: unknown): number {
  let n = 0;
  const stack: unknown[] = [v];
  while (stack.length > 0) {
    const x = stack.pop();
    n++;
    if (Array.isArray(x)) for (const item of x) stack.push(item);
    else if (typeof x === "object" && x !== null)
      for (const k in x) stack.push((x as Record<string, unknown>)[k]);
  }
  return n;
}

/** The counting keyword, as code ajv inlines at the top of each subschema that carries it. */
export function countingKeyword({ _ }: CodeTemplates): CodeKeywordDefinition {
  return {
    keyword: COUNTING_KEYWORD,
    schemaType: "boolean",
    code(cxt) {
      // a decrement inlined; a call only when the budget is spent
      const left = cxt.gen.scopeValue("obj", { ref: budget });
      const spent = cxt.gen.scopeValue("func", { ref: overrun });
      cxt.gen.code(_`if (--${left}.left < 0) ${spent}();`);
    },
  };
}

/** Keywords whose value is one schema, a list of schemas, or a map of names to schemas. */
const ONE = new Set([
  "additionalProperties",
  "additionalItems",
  "unevaluatedProperties",
  "unevaluatedItems",
  "propertyNames",
  "contains",
  "not",
  "if",
  "then",
  "else",
  "items",
  "contentSchema",
]);
const LISTS = new Set(["allOf", "anyOf", "oneOf"]);
const MAPS = new Set([
  "properties",
  "patternProperties",
  "$defs",
  "definitions",
  "dependentSchemas",
  "dependencies",
]);
/** Values that are data, or maps of data: never schemas, so never given the keyword. */
const NOT_SCHEMA = new Set([
  "const",
  "enum",
  "default",
  "examples",
  "dependentRequired",
  "$vocabulary",
  "required",
  "type",
]);

/**
 * A copy of `schema` with the counting keyword in every object that ajv may check a value
 * against: the subschemas of the keywords above, and the values of unknown keywords too (a `$ref`
 * may point into one, and ajv then checks against it; elsewhere ajv ignores them).
 */
export function withCounting(schema: unknown): unknown {
  return copy(schema);
}

function copy(s: unknown, counted = true): unknown {
  if (typeof s !== "object" || s === null || Array.isArray(s)) return s;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(s)) {
    // defineProperty: a key such as "__proto__" stays a key (the validator refuses it anyway)
    setOwn(out, k, member(k, v));
  }
  if (counted) out[COUNTING_KEYWORD] = true;
  return out;
}

/**
 * A tuple's entries (`prefixItems`, draft-07's array `items`) are not counted themselves, only
 * what is below them: ajv 8 skips an entry with nothing to check, and a counted one is checked,
 * which changed where an ajv bug (worked around in validator.ts, tupleLast) put the keywords
 * after the tuple. An entry is checked once per item of the array: the count stays linear.
 */
function tupleEntry(s: unknown): unknown {
  return copy(s, false);
}

function member(k: string, v: unknown): unknown {
  if (NOT_SCHEMA.has(k) || typeof v !== "object" || v === null) return v;
  if (Array.isArray(v)) {
    if (k === "prefixItems" || k === "items") return v.map(tupleEntry);
    return LISTS.has(k) ? v.map((x) => copy(x)) : v;
  }
  if (MAPS.has(k)) {
    const out: Record<string, unknown> = {};
    for (const [name, sub] of Object.entries(v)) {
      setOwn(out, name, copy(sub));
    }
    return out;
  }
  return ONE.has(k) || !k.startsWith("$") ? copy(v) : v;
}
