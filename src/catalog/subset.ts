/**
 * The one question behind a schema change's class: can the new schema accept a value the old one
 * rejected? `provablySubset(old, new)` answers "no, provably" with a small set of rules that are
 * each obviously sound, and answers false (= "maybe", so the change `expands`) for everything
 * else: regular expressions compared as text, `oneOf` compared only when identical, `$ref` and
 * base-URI keywords only when the whole schema is identical, unknown keywords only when equal.
 *
 * Reading: sub(n, o) is true only when every JSON value n accepts, o accepts too, under JSON
 * Schema 2020-12 and draft-07 alike (a rule that would differ between them is not used).
 */
import { canonicalString, sameJson } from "../util/canonical.js";
import { setOwn } from "../util/setOwn.js";

type Obj = Record<string, unknown>;

const MAX_DEPTH = 48;
/** Comparisons allowed per proof: nested anyOf/allOf could otherwise make a hostile schema slow. */
const MAX_STEPS = 20_000;
let steps = 0;

function isObj(v: unknown): v is Obj {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function own(o: Obj, k: string): unknown {
  return Object.hasOwn(o, k) ? o[k] : undefined;
}

/** Keywords that never change which values a schema accepts (outside `$ref` targets). */
const ANNOTATIONS = new Set([
  "title",
  "description",
  "$comment",
  "examples",
  "default",
  "deprecated",
  "readOnly",
  "writeOnly",
]);

/** Keywords that change how `$ref` resolves or which dialect applies: whole-schema equality only. */
const REF_LIKE = new Set([
  "$ref",
  "$dynamicRef",
  "$recursiveRef",
  "$id",
  "$anchor",
  "$dynamicAnchor",
  "$recursiveAnchor",
  "$schema",
  "$vocabulary",
]);

/** Every keyword the rules below understand, or deliberately ignore. */
const KNOWN = new Set([
  ...ANNOTATIONS,
  "$defs",
  "definitions",
  "type",
  "enum",
  "const",
  "minimum",
  "maximum",
  "exclusiveMinimum",
  "exclusiveMaximum",
  "multipleOf",
  "minLength",
  "maxLength",
  "pattern",
  "format",
  "minItems",
  "maxItems",
  "uniqueItems",
  "items",
  "prefixItems",
  "additionalItems",
  "contains",
  "minContains",
  "maxContains",
  "minProperties",
  "maxProperties",
  "required",
  "properties",
  "patternProperties",
  "additionalProperties",
  "propertyNames",
  "dependentRequired",
  "dependentSchemas",
  "dependencies",
  "allOf",
  "anyOf",
  "oneOf",
  "not",
  "if",
  "then",
  "else",
]);

function keyOf(v: unknown): string {
  try {
    return canonicalString(v);
  } catch {
    return `\u0000${Math.random()}`; // never equal to anything
  }
}

/** Does a key from REF_LIKE appear anywhere below the root (data included: conservative)? */
function hasRefLike(v: unknown, root: boolean, depth = 0): boolean {
  if (depth > MAX_DEPTH) return true;
  if (Array.isArray(v)) return v.some((x) => hasRefLike(x, false, depth + 1));
  if (!isObj(v)) return false;
  for (const k of Object.keys(v)) {
    if (REF_LIKE.has(k) && !(root && k === "$schema")) return true;
    if (hasRefLike(v[k], false, depth + 1)) return true;
  }
  return false;
}

/**
 * True only when every value `next` accepts is accepted by `prev` (the old schema), i.e. the
 * change provably does not let anything new through.
 */
export function provablySubset(prev: unknown, next: unknown): boolean {
  if (sameJson(prev, next)) return true;
  if (next === false) return true;
  if (isObj(prev) && isObj(next) && !sameJson(own(prev, "$schema"), own(next, "$schema"))) return false;
  if (hasRefLike(prev, true) || hasRefLike(next, true)) return false;
  steps = 0;
  return sub(next, prev, 0);
}

/** Keywords `bare` drops: what a schema accepts does not depend on them at its own level. */
function dropped(k: string): boolean {
  return ANNOTATIONS.has(k) || k === "$defs" || k === "definitions" || k === "$schema";
}

/**
 * Schema with annotation keywords dropped at this level only. The schema itself when it has none
 * to drop (and no own key its enumerable ones leave out): the result is only read, and a copy of
 * each of the 300,000 property schemas of a 10,000-tool re-list, three times each, was a
 * tenth of its proof.
 */
function bare(s: Obj): Obj {
  const keys = Object.keys(s);
  let drops = false;
  for (const k of keys) if (dropped(k)) drops = true;
  if (!drops && Object.getOwnPropertyNames(s).length === keys.length) return s;
  const out: Obj = {};
  for (const k of keys) if (!dropped(k)) setOwn(out, k, s[k]);
  return out;
}

/** `bare(s)` has no key: s accepts every value (counted, not copied). */
function acceptsAll(s: unknown): boolean {
  if (s === true) return true;
  if (!isObj(s)) return false;
  for (const k of Object.keys(s)) if (!dropped(k)) return false;
  return true;
}

/** n ⊆ o, for two schemas found at the same place. */
function sub(n: unknown, o: unknown, depth: number): boolean {
  if (depth > MAX_DEPTH || ++steps > MAX_STEPS) return false; // out of budget: unproved
  if (n === false) return true;
  if (!isObj(n) && n !== true) return false; // junk: what it accepts is unknown
  if (acceptsAll(o)) return true;
  if (!isObj(o)) return false; // o is false or junk; n is not false
  if (n === true) return false;
  const nb = bare(n);
  const ob = bare(o);
  if (sameJson(nb, ob)) return true;
  // n's own combinators: n ⊆ one allOf branch, or every anyOf/oneOf branch ⊆ o.
  const nAll = own(nb, "allOf");
  if (Array.isArray(nAll) && nAll.some((c) => sub(c, o, depth + 1))) return true;
  for (const k of ["anyOf", "oneOf"]) {
    const br = own(nb, k);
    if (Array.isArray(br) && br.length > 0 && br.every((c) => sub(c, o, depth + 1))) return true;
  }
  return keywordsImplied(nb, ob, depth);
}

const UNEVALUATED = ["unevaluatedProperties", "unevaluatedItems"];

/** Each constraint of o is implied by n's keywords. */
function keywordsImplied(n: Obj, o: Obj, depth: number): boolean {
  // Keywords whose meaning depends on evaluation of the whole schema: identical or nothing.
  for (const k of UNEVALUATED) {
    if (Object.hasOwn(n, k) || Object.hasOwn(o, k)) return sameJson(n, o);
  }
  for (const k of Object.keys(o)) {
    if (!KNOWN.has(k) && !sameJson(o[k], own(n, k))) return false;
  }
  for (const k of Object.keys(n)) {
    if (!KNOWN.has(k) && !sameJson(n[k], own(o, k))) return false;
  }
  return (
    typeImplied(n, o) &&
    valuesImplied(n, o) &&
    numbersImplied(n, o) &&
    multipleOfImplied(n, o) &&
    equalIfPresent(n, o, "pattern") &&
    equalIfPresent(n, o, "format") &&
    countsImplied(n, o) &&
    (own(o, "uniqueItems") !== true || own(n, "uniqueItems") === true) &&
    requiredImplied(n, o) &&
    propertiesImplied(n, o, depth) &&
    optionalSub(n, o, "propertyNames", depth) &&
    dependentRequiredImplied(own(n, "dependentRequired"), own(o, "dependentRequired")) &&
    schemaMapImplied(own(n, "dependentSchemas"), own(o, "dependentSchemas"), depth) &&
    dependenciesImplied(own(n, "dependencies"), own(o, "dependencies"), depth) &&
    itemsImplied(n, o, depth) &&
    containsImplied(n, o) &&
    combinatorsImplied(n, o, depth) &&
    notImplied(n, o, depth) &&
    conditionalImplied(n, o, depth)
  );
}

function typeSet(t: unknown): Set<string> | null {
  if (typeof t === "string") return new Set([t]);
  if (Array.isArray(t) && t.every((x) => typeof x === "string")) return new Set(t as string[]);
  return null;
}

function typeImplied(n: Obj, o: Obj): boolean {
  if (!Object.hasOwn(o, "type")) return true;
  // one type on both sides, the same: what the sets below decide, without making them
  if (typeof o.type === "string" && own(n, "type") === o.type) return true;
  const ot = typeSet(o.type);
  const nt = typeSet(own(n, "type"));
  if (!ot || !nt) return sameJson(o.type, own(n, "type"));
  for (const t of nt) {
    if (!(ot.has(t) || (t === "integer" && ot.has("number")))) return false;
  }
  return true;
}

/** enum and const: n's allowed values (if listed) all lie in o's. */
function valuesImplied(n: Obj, o: Obj): boolean {
  const nVals: unknown[] | null = Object.hasOwn(n, "const")
    ? [n.const]
    : Array.isArray(own(n, "enum"))
      ? (n.enum as unknown[])
      : null;
  if (Object.hasOwn(n, "enum") && !Array.isArray(n.enum)) return sameJson(n.enum, own(o, "enum"));
  if (Object.hasOwn(o, "enum")) {
    if (!Array.isArray(o.enum) || nVals === null) return false;
    const allowed = new Set(o.enum.map(keyOf));
    if (!nVals.every((v) => allowed.has(keyOf(v)))) return false;
  }
  if (Object.hasOwn(o, "const")) {
    if (nVals === null) return false;
    const c = keyOf(o.const);
    if (!nVals.every((v) => keyOf(v) === c)) return false;
  }
  return true;
}

const finite = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v);

/** minimum / exclusiveMinimum / maximum / exclusiveMaximum (draft-04 booleans: equality only). */
function numbersImplied(n: Obj, o: Obj): boolean {
  for (const k of ["minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"]) {
    if (Object.hasOwn(o, k) && !finite(o[k])) return sameJson(o[k], own(n, k));
    if (Object.hasOwn(n, k) && !finite(n[k])) return false;
  }
  const nMin = own(n, "minimum") as number | undefined;
  const nXMin = own(n, "exclusiveMinimum") as number | undefined;
  const nMax = own(n, "maximum") as number | undefined;
  const nXMax = own(n, "exclusiveMaximum") as number | undefined;
  const oMin = own(o, "minimum") as number | undefined;
  if (oMin !== undefined && !((nMin !== undefined && nMin >= oMin) || (nXMin !== undefined && nXMin >= oMin)))
    return false;
  const oXMin = own(o, "exclusiveMinimum") as number | undefined;
  if (
    oXMin !== undefined &&
    !((nXMin !== undefined && nXMin >= oXMin) || (nMin !== undefined && nMin > oXMin))
  )
    return false;
  const oMax = own(o, "maximum") as number | undefined;
  if (oMax !== undefined && !((nMax !== undefined && nMax <= oMax) || (nXMax !== undefined && nXMax <= oMax)))
    return false;
  const oXMax = own(o, "exclusiveMaximum") as number | undefined;
  if (
    oXMax !== undefined &&
    !((nXMax !== undefined && nXMax <= oXMax) || (nMax !== undefined && nMax < oXMax))
  )
    return false;
  return true;
}

/** Only whole-number divisors are compared: float division cannot prove divisibility. */
function multipleOfImplied(n: Obj, o: Obj): boolean {
  if (!Object.hasOwn(o, "multipleOf")) return true;
  const om = o.multipleOf;
  const nm = own(n, "multipleOf");
  if (sameJson(om, nm)) return true;
  return (
    Number.isSafeInteger(om) &&
    Number.isSafeInteger(nm) &&
    (om as number) > 0 &&
    (nm as number) > 0 &&
    (nm as number) % (om as number) === 0
  );
}

function equalIfPresent(n: Obj, o: Obj, k: string): boolean {
  return !Object.hasOwn(o, k) || sameJson(o[k], own(n, k));
}

const LOWER = ["minLength", "minItems", "minProperties"];
const UPPER = ["maxLength", "maxItems", "maxProperties"];

const COUNTS = [...LOWER, ...UPPER];

function countsImplied(n: Obj, o: Obj): boolean {
  for (const k of COUNTS) {
    if (!Object.hasOwn(o, k)) continue;
    const ov = o[k];
    const nv = own(n, k);
    if (sameJson(ov, nv)) continue;
    if (!finite(ov) || !finite(nv)) return false;
    if (LOWER.includes(k) ? nv < ov : nv > ov) return false;
  }
  return true;
}

function stringSet(v: unknown): Set<string> | null {
  if (v === undefined) return new Set();
  if (Array.isArray(v) && v.every((x) => typeof x === "string")) return new Set(v as string[]);
  return null;
}

function requiredImplied(n: Obj, o: Obj): boolean {
  const or = stringSet(own(o, "required"));
  const nr = stringSet(own(n, "required"));
  if (!or || !nr) return sameJson(own(o, "required"), own(n, "required"));
  for (const r of or) if (!nr.has(r)) return false;
  return true;
}

function optionalSub(n: Obj, o: Obj, k: string, depth: number): boolean {
  if (!Object.hasOwn(o, k)) return true;
  return Object.hasOwn(n, k) && sub(n[k], o[k], depth + 1);
}

/**
 * properties / patternProperties / additionalProperties, per property name. Patterns are never
 * compared by what they match: o's patterns must reappear in n by the same text.
 */
function propertiesImplied(n: Obj, o: Obj, depth: number): boolean {
  const oP = own(o, "properties") ?? {};
  const nP = own(n, "properties") ?? {};
  const oPP = own(o, "patternProperties") ?? {};
  const nPP = own(n, "patternProperties") ?? {};
  const oAP = own(o, "additionalProperties") ?? true;
  const nAP = own(n, "additionalProperties") ?? true;
  if (!isObj(oP) || !isObj(nP) || !isObj(oPP) || !isObj(nPP)) {
    return ["properties", "patternProperties", "additionalProperties"].every((k) =>
      sameJson(own(o, k), own(n, k)),
    );
  }
  for (const r of Object.keys(oPP)) {
    if (!Object.hasOwn(nPP, r) || !sub(nPP[r], oPP[r], depth + 1)) return false;
  }
  const nHasPatterns = Object.keys(nPP).length > 0;
  for (const k of Object.keys(oP)) {
    if (Object.hasOwn(nP, k)) {
      if (!sub(nP[k], oP[k], depth + 1)) return false;
    } else if (!acceptsAll(oP[k])) {
      // n no longer names k: only n's additionalProperties (if no pattern can apply) constrains it.
      if (nHasPatterns || !sub(nAP, oP[k], depth + 1)) return false;
    }
  }
  if (acceptsAll(oAP)) return true;
  // o constrains names it does not list: so must n, everywhere o's additionalProperties applies.
  if (!sub(nAP, oAP, depth + 1)) return false;
  for (const k of Object.keys(nP)) {
    if (!Object.hasOwn(oP, k) && !sub(nP[k], oAP, depth + 1)) return false;
  }
  for (const r of Object.keys(nPP)) {
    if (!Object.hasOwn(oPP, r) && !sub(nPP[r], oAP, depth + 1)) return false;
  }
  return true;
}

function dependentRequiredImplied(nv: unknown, ov: unknown): boolean {
  if (ov === undefined) return true;
  if (!isObj(ov) || !isObj(nv)) return sameJson(ov, nv);
  for (const p of Object.keys(ov)) {
    const os = stringSet(ov[p]);
    const ns = Object.hasOwn(nv, p) ? stringSet(nv[p]) : null;
    if (!os || !ns) return false;
    for (const r of os) if (!ns.has(r)) return false;
  }
  return true;
}

function schemaMapImplied(nv: unknown, ov: unknown, depth: number): boolean {
  if (ov === undefined) return true;
  if (!isObj(ov) || !isObj(nv)) return sameJson(ov, nv);
  for (const p of Object.keys(ov)) {
    if (!Object.hasOwn(nv, p) || !sub(nv[p], ov[p], depth + 1)) return false;
  }
  return true;
}

/** draft-07 `dependencies`: each entry a list of names or a schema. */
function dependenciesImplied(nv: unknown, ov: unknown, depth: number): boolean {
  if (ov === undefined) return true;
  if (!isObj(ov) || !isObj(nv)) return sameJson(ov, nv);
  for (const p of Object.keys(ov)) {
    if (!Object.hasOwn(nv, p)) return false;
    if (Array.isArray(ov[p])) {
      if (!dependentRequiredImplied({ [p]: nv[p] }, { [p]: ov[p] })) return false;
    } else if (Array.isArray(nv[p]) || !sub(nv[p], ov[p], depth + 1)) return false;
  }
  return true;
}

/** items as one schema is compared; tuple forms (which differ between dialects) only when equal. */
function itemsImplied(n: Obj, o: Obj, depth: number): boolean {
  const tuple = (s: Obj) =>
    Object.hasOwn(s, "prefixItems") || Object.hasOwn(s, "additionalItems") || Array.isArray(own(s, "items"));
  if (tuple(n) || tuple(o)) {
    return ["items", "prefixItems", "additionalItems"].every((k) => sameJson(own(o, k), own(n, k)));
  }
  return optionalSub(n, o, "items", depth);
}

/** contains with min/maxContains: the same contains schema, counts no looser. */
function containsImplied(n: Obj, o: Obj): boolean {
  const keys = ["contains", "minContains", "maxContains"];
  if (!keys.some((k) => Object.hasOwn(o, k))) return true;
  if (!Object.hasOwn(o, "contains"))
    return !Object.hasOwn(n, "contains") || keys.every((k) => sameJson(own(o, k), own(n, k)));
  if (!sameJson(o.contains, own(n, "contains"))) return false;
  const oMin = own(o, "minContains") ?? 1;
  const nMin = own(n, "minContains") ?? 1;
  const oMax = own(o, "maxContains") ?? Number.POSITIVE_INFINITY;
  const nMax = own(n, "maxContains") ?? Number.POSITIVE_INFINITY;
  if (
    typeof oMin !== "number" ||
    typeof nMin !== "number" ||
    typeof oMax !== "number" ||
    typeof nMax !== "number"
  )
    return keys.every((k) => sameJson(own(o, k), own(n, k)));
  return nMin >= oMin && nMax <= oMax;
}

function combinatorsImplied(n: Obj, o: Obj, depth: number): boolean {
  const oAll = own(o, "allOf");
  if (oAll !== undefined) {
    if (!Array.isArray(oAll) || !oAll.every((b) => sub(n, b, depth + 1))) return false;
  }
  const oAny = own(o, "anyOf");
  if (oAny !== undefined) {
    if (!Array.isArray(oAny)) return false;
    const inSome = (c: unknown) => oAny.some((b) => sub(c, b, depth + 1));
    const nAny = own(n, "anyOf") ?? own(n, "oneOf");
    const viaBranches = Array.isArray(nAny) && nAny.length > 0 && nAny.every(inSome);
    if (!inSome(n) && !viaBranches) return false;
  }
  // oneOf: dropping a branch can admit a value two branches used to match. Identical only.
  if (Object.hasOwn(o, "oneOf") && !sameJson(o.oneOf, own(n, "oneOf"))) return false;
  return true;
}

/** not: n must exclude at least what o excludes (o.not ⊆ n.not). */
function notImplied(n: Obj, o: Obj, depth: number): boolean {
  if (!Object.hasOwn(o, "not")) return true;
  return Object.hasOwn(n, "not") && sub(o.not, n.not, depth + 1);
}

/** if/then/else: the same `if`, with then and else no looser. */
function conditionalImplied(n: Obj, o: Obj, depth: number): boolean {
  if (!Object.hasOwn(o, "if")) return true;
  if (!Object.hasOwn(n, "if") || !sameJson(o.if, n.if)) return false;
  return (
    sub(own(n, "then") ?? true, own(o, "then") ?? true, depth + 1) &&
    sub(own(n, "else") ?? true, own(o, "else") ?? true, depth + 1)
  );
}
