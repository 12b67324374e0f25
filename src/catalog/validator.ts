/**
 * Argument validation against the input schemas of one catalog revision (ajv; JSON Schema
 * 2020-12 unless the schema's `$schema` names draft-07). Each tool's schema is compiled on first
 * use and kept for the life of the validator. A schema that cannot be compiled denies the call;
 * nothing here throws.
 *
 * Every check runs in bounded time, whatever the server's schema and the client's arguments:
 * `pattern` and `patternProperties` go through a linear-time engine (linearRegex.ts; a pattern it
 * cannot take refuses the tool's calls), the `url` format, whose regex takes cubic time, only
 * checks strings of bounded length, `enum` and `uniqueItems` look values up in sets
 * (hashedKeywords.ts), error sentences are few and short whatever the enum or the call, and a
 * schema whose `$ref`s fan out past MAX_CHECKS_PER_VALUE subschemas per value refuses the tool
 * (checkCost.ts).
 */
import type { Ajv, ErrorObject, Format, Options, ValidateFunction } from "ajv";
import type { Ajv2020 } from "ajv/dist/2020.js";
import { type AjvModules, loadAjvModules } from "./ajvModules.js";
import { isBase64Lines } from "./byteFormat.js";
import { countingKeyword, endBudget, startBudget, withCounting } from "./checkBudget.js";
import { type CostOverrun, checkCostOverrun, MAX_CHECKS_PER_VALUE, pointerKey } from "./checkCost.js";
import { containsKeyword } from "./containsKeyword.js";
import { hashedKeywords, newCheck, standaloneRuntime } from "./hashedKeywords.js";
import { linearRegExp, shown, UncheckablePattern, withPatternBudget } from "./linearRegex.js";
import {
  type Dialect,
  fingerprintOf,
  META_ID,
  metaCheckSource,
  metaPatternRegExp,
  type ShippedMeta,
  sameSchemaId,
} from "./metaCheck.js";
import { multipleOfKeyword } from "./multipleOfKeyword.js";
import { snapshotOf } from "./snapshot.js";
import { clip, firstOf, jsonText } from "./text.js";
import type { CatalogSnapshot } from "./types.js";

/**
 * ajv and its formats take 15–40 ms to load (ajvModules.ts), and nothing needs them before the
 * first call is validated: they are loaded then (ajv is CommonJS, so a synchronous require keeps
 * validate() synchronous), or earlier, once the first catalog is being served, by the warm-up a
 * validator schedules when it is made.
 */
let engine: AjvModules | null = null;
let warming: NodeJS.Timeout | null = null;
/**
 * How long after the first catalog the warm-up waits: the client's own tools/list usually arrives
 * just after the gateway's catalog fetch, and a synchronous 20 ms load in between delayed its
 * answer (server-everything, measured in docs/performance-history.md, "Startup and memory, third
 * pass"). A call sooner than this loads ajv
 * itself, as it would without a warm-up.
 */
const WARM_AFTER_MS = 250;

function ajvEngine(): AjvModules {
  engine ??= loadAjvModules();
  return engine;
}

/** Loads ajv a little after the first catalog (once it and the client's list are served), unless loaded already. */
function warmEngine(): void {
  if (engine || warming) return;
  warming = setTimeout(() => ajvEngine(), WARM_AFTER_MS);
  warming.unref();
}

function dialectOf(schema: unknown): Dialect | { unsupported: string } {
  if (typeof schema !== "object" || schema === null || Array.isArray(schema)) return "2020-12";
  const s = Object.hasOwn(schema, "$schema") ? (schema as { $schema?: unknown }).$schema : undefined;
  if (s === undefined) return "2020-12";
  if (typeof s !== "string") return { unsupported: JSON.stringify(s) ?? String(s) };
  if (/^https?:\/\/json-schema\.org\/draft-07\/schema#?$/.test(s)) return "draft-07";
  if (/^https?:\/\/json-schema\.org\/draft\/2020-12\/schema#?$/.test(s)) return "2020-12";
  return { unsupported: s };
}

/**
 * ajv-formats' `url` regex backtracks in cubic time on strings such as "http://a.aa" followed by
 * "::" repeated (4,096 characters: 28 ms; 8,192: 60 ms). A URL longer than MAX_URL_CHARS fails
 * the format, and the `url` strings of one call are checked up to URL_CHARS_PER_CALL characters
 * in all (past that they fail too), so a call's format checks stay within about 60 ms.
 * docs/performance-history.md ("Formats") has the measurements. The other formats were measured
 * linear.
 */
export const MAX_URL_CHARS = 2048;
export const URL_CHARS_PER_CALL = 64 * 1024;
let urlBudget = URL_CHARS_PER_CALL;

function boundedUrl(full: Format): Format {
  const check = full instanceof RegExp ? (s: string) => full.test(s) : null;
  if (!check) return full;
  return {
    type: "string",
    validate: (s: string) => {
      if (s.length > MAX_URL_CHARS) return false;
      urlBudget -= s.length;
      return urlBudget >= 0 && check(s);
    },
  };
}

/** `source`: ajv keeps each check's code, for the build's standalone meta-schema checks (metaCheck.ts). */
function makeAjv(dialect: Dialect, useDefaults: boolean, source = false): Ajv | Ajv2020 {
  const opts: Options = {
    strict: false,
    allErrors: true,
    useDefaults,
    // several tools may carry the same $id: never register them in the shared instance
    addUsedSchema: false,
    logger: false,
    // linear time: a server's pattern never backtracks on a client's argument
    code: { regExp: linearRegExp, ...(source ? { source: true } : {}) },
    // `required`, `properties` and `dependentRequired` see the client's own fields only: without
    // this, a field named "constructor" or "__proto__" was found on Object.prototype, so
    // `required: ["constructor"]` was never enforced and `properties: {"toString": …}` checked a function
    ownProperties: true,
  };
  const e = ajvEngine();
  const ajv = dialect === "draft-07" ? new e.Ajv(opts) : new e.Ajv2020(opts);
  // looked up in sets, not compared value by value or pair by pair (hashedKeywords.ts)
  for (const keyword of hashedKeywords(e.codegen))
    ajv.removeKeyword(keyword.keyword as string).addKeyword(keyword);
  // an empty array no longer inherits the verdict of the array checked before it (containsKeyword.ts)
  ajv.removeKeyword("contains").addKeyword(containsKeyword(e.codegen));
  // a quotient of 1e21 or more is whole, not fractional as ajv's parseInt read it (multipleOfKeyword.ts)
  ajv.removeKeyword("multipleOf").addKeyword(multipleOfKeyword(e.codegen));
  // every subschema counts its checks against the call's budget (checkBudget.ts)
  ajv.addKeyword(countingKeyword(e.codegen));
  tupleLast(ajv, dialect);
  e.addFormats(ajv);
  ajv.addFormat("url", boundedUrl(e.addFormats.get("url")));
  // base64 of any length: ajv-formats' regex ran out of backtracking room at 8 MiB (byteFormat.ts)
  ajv.addFormat("byte", { type: "string", validate: isBase64Lines });
  return ajv;
}

/**
 * A tool's instance. Its check of a schema against the meta-schema (ajv's `validateSchema`, which
 * ajv calls where it always did: after reading the schema's `$id`s and before compiling it) is
 * the process's one, checkMeta: ajv's own would compile the meta-schema again in each instance.
 */
function toolAjv(dialect: Dialect, useDefaults: boolean): Ajv | Ajv2020 {
  const ajv = makeAjv(dialect, useDefaults);
  ajv.validateSchema = (schema, throwOrLogError) => checkMeta(ajv, dialect, schema, throwOrLogError);
  return ajv;
}

/** ajv's own meta-schema check, one instance per dialect for the whole process (made when first needed). */
const ownMetaCheck = new Map<Dialect, Ajv | Ajv2020>();
/** The build's meta-schema check per dialect, once looked at: null when absent or not of this ajv. */
const shippedMetaCheck = new Map<Dialect, ValidateFunction | null>();

/**
 * What ajv's `validateSchema` does (same verdict, same error thrown), without compiling the
 * meta-schema in each instance: the check the build shipped when it was generated by an
 * instance like `ajv` (metaCheck.ts), else ajv's own, on the process's instance for the dialect.
 */
function checkMeta(
  ajv: Ajv | Ajv2020,
  dialect: Dialect,
  schema: unknown,
  throwOrLogError?: boolean,
): boolean {
  if (typeof schema === "boolean") return true;
  const $schema = (schema as { $schema?: unknown }).$schema;
  if ($schema !== undefined && typeof $schema !== "string") throw new Error("$schema must be a string");
  // another spelling of the meta-schema's URI (or another meta-schema) is ajv's to resolve
  const shipped =
    $schema === undefined || sameSchemaId($schema, META_ID[dialect]) ? shippedCheck(ajv, dialect) : null;
  if (shipped === null) {
    let own = ownMetaCheck.get(dialect);
    if (!own) {
      own = makeAjv(dialect, false);
      ownMetaCheck.set(dialect, own);
    }
    return own.validateSchema(schema as object, throwOrLogError) as boolean;
  }
  const valid = shipped(schema);
  if (!valid && throwOrLogError) throw new Error(`schema is invalid: ${ajv.errorsText(shipped.errors)}`);
  return valid === true;
}

function shippedCheck(ajv: Ajv | Ajv2020, dialect: Dialect): ValidateFunction | null {
  let check = shippedMetaCheck.get(dialect);
  if (check !== undefined) return check;
  const e = ajvEngine();
  check = usableShipped(e.meta[dialect], ajv, e.version);
  shippedMetaCheck.set(dialect, check);
  return check;
}

/**
 * The shipped check, made, when an instance like `ajv` (of ajv `version`) generated it; null
 * otherwise: code generated by another ajv, other options or other keywords might accept a
 * schema ajv's own check refuses, so it is not used (ajv's own is).
 */
export function usableShipped(
  shipped: ShippedMeta | undefined,
  ajv: Ajv | Ajv2020,
  version: string,
): ValidateFunction | null {
  if (shipped === undefined || shipped.fingerprint !== fingerprintOf(ajv, version)) return null;
  return shipped.make(standaloneRuntime, metaPatternRegExp);
}

/** An instance made as the gateway's are, with ajv's own meta-schema check: for the tests. */
export function gatewayAjv(dialect: Dialect): Ajv | Ajv2020 {
  return makeAjv(dialect, false);
}

/**
 * For the build (scripts/bundle.mjs): each dialect's meta-schema check as ajv's standalone code,
 * generated by an instance made as the gateway's are, and that instance's fingerprint.
 */
export function metaCheckSources(): Record<Dialect, { fingerprint: string; body: string }> {
  const out = {} as Record<Dialect, { fingerprint: string; body: string }>;
  for (const dialect of ["2020-12", "draft-07"] as const) {
    const ajv = makeAjv(dialect, false, true);
    out[dialect] = {
      fingerprint: fingerprintOf(ajv, ajvEngine().version),
      body: metaCheckSource(ajv, dialect),
    };
  }
  return out;
}

/** Which meta-schema check a tool's instance of `dialect` uses in this process: for the tests. */
export function metaCheckInUse(dialect: Dialect): "shipped" | "ajv" {
  return shippedCheck(makeAjv(dialect, false), dialect) === null ? "ajv" : "shipped";
}

/**
 * Moves ajv's tuple keyword (`prefixItems`, or draft-07's `items`) after the other array
 * keywords, just before `unevaluatedItems` (which needs to know what it evaluated). Where a
 * failure ends a check early (the schema of a `not` or an `if`), ajv 8 puts the keywords that
 * follow the tuple under a variable it sets only once the array reaches the tuple's first entry
 * that checks something: on a shorter array they were skipped, so `if: {prefixItems: [{type:
 * "string"}], contains: {const: "go"}}, then: true, else: false` accepted `[]`, which the schema
 * rejects, and `not: {prefixItems: […], contains: {}}` refused it. Last, nothing of the array's
 * checks is left after it but `unevaluatedItems`, which finds no item past a short array; `items`
 * and `additionalItems` read the tuple's length from the schema, not from the order.
 */
function tupleLast(ajv: Ajv | Ajv2020, dialect: Dialect): void {
  const tuple = dialect === "draft-07" ? "items" : "prefixItems";
  const def = ajv.getKeyword(tuple);
  if (typeof def !== "object") return;
  const unevaluated = ajv.getKeyword("unevaluatedItems");
  if (typeof unevaluated === "object") {
    ajv.removeKeyword("unevaluatedItems").addKeyword({ ...unevaluated });
    ajv.removeKeyword(tuple).addKeyword({ ...def, before: "unevaluatedItems" });
  } else {
    ajv.removeKeyword(tuple).addKeyword({ ...def, before: undefined });
  }
}

/** Why a schema that ajv would not compile refuses the tool's calls. */
function compileRefusal(toolName: string, schema: object, err: unknown): string {
  if (err instanceof UncheckablePattern) {
    const where = patternLocation(schema, err.pattern);
    const at = where === null ? "" : ` at ${shown(where)}`;
    return (
      `Tool ${q(toolName)} is refused: the pattern ${shown(err.pattern)}${at} in its input schema uses ${err.reason}, ` +
      "a regular-expression feature portcullis cannot check in bounded time, so its calls are refused."
    );
  }
  const why = err instanceof Error ? err.message.split("\n")[0] : String(err);
  return `Tool ${q(toolName)} has an invalid input schema (${why}), so its calls are refused.`;
}

/** Why a schema whose check of one value may fan out past MAX_CHECKS_PER_VALUE refuses the tool's calls. */
function costRefusal(toolName: string, o: CostOverrun): string {
  const where = `the subschema at ${shown(o.at)} in its input schema`;
  const value =
    "depth" in o && o.depth > 0 ? `a value ${o.depth} levels below the one it checks` : "one value";
  const what =
    "checks" in o
      ? `checks ${value} against up to ${o.checks.toLocaleString("en-US")} subschemas ` +
        `(its $ref, anyOf, oneOf and allOf branches multiply; portcullis allows ${MAX_CHECKS_PER_VALUE.toLocaleString("en-US")} per value)`
      : "loop" in o
        ? "refers back to itself without going into the arguments (a check of one value that would never end)"
        : "has a $ref portcullis cannot follow to bound the work of a check";
  return `Tool ${q(toolName)} is refused: ${where} ${what}, so its calls are refused.`;
}

/** Values, not schemas: a `pattern` inside them is data. */
const DATA_KEYWORDS = new Set(["const", "enum", "default", "examples"]);

/**
 * Where in `schema` the pattern ajv refused sits (a JSON Pointer), for the refusal's message:
 * the first `pattern` keyword with that value, or `patternProperties` with that key.
 */
function patternLocation(schema: unknown, pattern: string, path = ""): string | null {
  if (typeof schema !== "object" || schema === null) return null;
  if (Array.isArray(schema)) {
    for (let i = 0; i < schema.length; i++) {
      const found = patternLocation(schema[i], pattern, `${path}/${i}`);
      if (found !== null) return found;
    }
    return null;
  }
  const record = schema as Record<string, unknown>;
  if (record.pattern === pattern) return `${path}/pattern`;
  const props = record.patternProperties;
  if (typeof props === "object" && props !== null && Object.hasOwn(props, pattern)) {
    return `${path}/patternProperties/${pointerSegment(pattern)}`;
  }
  for (const [key, value] of Object.entries(record)) {
    if (DATA_KEYWORDS.has(key)) continue;
    const found = patternLocation(value, pattern, `${path}/${pointerSegment(key)}`);
    if (found !== null) return found;
  }
  return null;
}

function pointerSegment(key: string): string {
  return key.replace(/~/g, "~0").replace(/\//g, "~1");
}

/** The key a JSON Pointer segment names (pointerSegment's inverse). */
function unescapeSegment(segment: string): string {
  return segment.replace(/~1/g, "/").replace(/~0/g, "~");
}

/**
 * The largest input schema compiled, in nodes (every object, array, key's value and array item
 * of the schema counts one) and in bytes (about the size of its JSON text). ajv's compile is
 * synchronous, on the gateway's one event loop: a tool of 40,000 properties took 8.6 s, during
 * which nothing else ran. At 2,000 nodes compiling took 28 to 100 ms on the development machine,
 * whatever the shape (docs/performance-history.md, "Input schema size"); bytes cost little to
 * compile (descriptions are not compiled), so their limit is wide. A tool over either limit has its
 * calls refused. The values of `enum`, `const`, `default` and `examples` are data, not schema: ajv
 * compiles an enum of 50,000 strings in about 50 ms, so they count one node each, and their bytes.
 */
export const MAX_SCHEMA_NODES = 2000;
export const MAX_SCHEMA_BYTES = 1024 * 1024;

/** Keywords whose value maps names to schemas, or lists schemas: its members are schemas. */
const SCHEMA_MAPS = new Set(["properties", "patternProperties", "$defs", "definitions", "dependentSchemas"]);
const SCHEMA_LISTS = new Set(["allOf", "anyOf", "oneOf", "prefixItems"]);

/**
 * How a value met in the walk is read: a schema (its keys are keywords), a map or list of
 * schemas, the value of a data keyword (one node), or inside such a value (bytes only).
 */
type Place = "schema" | "members" | "data" | "inData";

/**
 * Keys that refuse a tool wherever its schema has them (in `enum`, `const`, `default` or
 * `examples` they are data, and harmless):
 * - `$async` makes ajv compile an asynchronous check, which answers a Promise, not a verdict;
 *   read as one, every call passed, and the Promise's rejection ended the gateway;
 * - `__proto__` as a name (in `properties`, `patternProperties`, `dependentRequired`,
 *   `dependentSchemas`, `$defs` …) is skipped by ajv, so what the schema says of it would not be checked.
 */
const REFUSED_KEYS = new Map([
  ["$async", "which asks for an asynchronous check, one portcullis does not run"],
  ["__proto__", "a name the schema checker skips (what the schema says of that field would not be checked)"],
]);

/**
 * What the walk found that refuses the tool: too large, a refused key and where, or
 * `unevaluatedItems` beside `contains` (ajv cannot combine them: see the end of the walk).
 */
type Finding =
  | { over: string }
  | { key: string; at: string }
  | { unevaluatedItems: string; contains: string }
  | { refIntoData: string; ref: string; data: string };

/** One value met in the walk; `parent` and `key` give its place, made into a pointer only when needed. */
interface Step {
  value: unknown;
  place: Place;
  parent: Step | null;
  key: string;
}

function pointerOf(step: Step): string {
  const segments: string[] = [];
  for (let s: Step | null = step; s?.parent; s = s.parent) segments.push(pointerSegment(s.key));
  return segments.length === 0 ? "" : `/${segments.reverse().join("/")}`;
}

/**
 * Whether `schema` is over either limit, walked with an explicit stack (no recursion) and stopped
 * as soon as it is: the walk costs no more than the limits allow. A key is read as a keyword only
 * where a schema is: a property named `enum` is a schema, and its nodes count. The first refused
 * key found outside data is reported when the schema is within the limits.
 */
function inspectSchema(schema: object): Finding | null {
  let nodes = 0;
  let bytes = 0;
  let refused: Step | null = null;
  let contains: Step | null = null;
  let unevaluatedItems: Step | null = null;
  let refIntoData: { step: Step; ref: string; data: string } | null = null;
  const stack: Step[] = [{ value: schema, place: "schema", parent: null, key: "" }];
  while (stack.length > 0) {
    const step = stack.pop()!;
    const { value: v, place } = step;
    if (place !== "inData") nodes++;
    bytes += 1;
    if (typeof v === "string") bytes += v.length + 2;
    else if (typeof v === "number" || typeof v === "boolean") bytes += String(v).length;
    else if (typeof v === "object" && v !== null) {
      for (const [key, child] of Object.entries(v)) {
        bytes += key.length + 3;
        const next: Step = { value: child, place: placeOf(place, key), parent: step, key };
        if (refused === null && isRefusedKey(place, key)) refused = next;
        if (place === "schema" && key === "contains") contains ??= next;
        if (place === "schema" && key === "unevaluatedItems" && child !== true) unevaluatedItems ??= next;
        if (place === "schema" && (key === "$ref" || key === "$dynamicRef") && refIntoData === null) {
          const data = dataKeywordOnPath(child);
          if (data !== null) refIntoData = { step: next, ref: key, data };
        }
        stack.push(next);
      }
    }
    if (nodes > MAX_SCHEMA_NODES)
      return { over: `more than ${MAX_SCHEMA_NODES.toLocaleString("en-US")} schema nodes` };
    if (bytes > MAX_SCHEMA_BYTES) return { over: `more than ${MAX_SCHEMA_BYTES / 1024 / 1024} MiB` };
  }
  if (refused !== null) return { key: refused.key, at: pointerOf(refused) };
  // Both `unevaluatedItems` (other than `true`) and `contains`: JSON Schema counts as evaluated
  // only the items a `contains` found valid; ajv 8 counts every item of the array once a
  // `contains` passed (and none when `minContains` is 0), and its record of what was evaluated (a
  // count of leading items, or all) cannot say which items matched. So `{contains: {const: 1},
  // unevaluatedItems: false}` accepted `[1, 2]`, which the schema rejects. Refused wherever the
  // two sit in the schema, even apart: a tool's input schema rarely has either.
  if (contains !== null && unevaluatedItems !== null)
    return { unevaluatedItems: pointerOf(unevaluatedItems), contains: pointerOf(contains) };
  if (refIntoData !== null)
    return { refIntoData: pointerOf(refIntoData.step), ref: refIntoData.ref, data: refIntoData.data };
  return null;
}

/**
 * The data keyword (`enum`, `const`, `default`, `examples`) that a `$ref`'s JSON Pointer fragment
 * passes through, or null. ajv follows such a pointer and checks values against the data found
 * there as a schema, which the run-time budget does not count (checkBudget.ts puts its counter in
 * schemas, not in data): refused, since no honest schema points into its own data. The fragment is
 * read from a schema's place whatever resource it starts at (`#/…` of the document, or of a
 * subschema with an `$id`): the keys along it decide alike.
 */
function dataKeywordOnPath(ref: unknown): string | null {
  if (typeof ref !== "string") return null;
  const hash = ref.indexOf("#/");
  if (hash === -1) return null;
  let place: Place = "schema";
  for (const raw of ref.slice(hash + 2).split("/")) {
    const key = pointerKey(raw);
    if (key === null) return null; // not a pointer ajv can follow: its compile refuses the tool
    const next = placeOf(place, key);
    if (next === "data") return key;
    place = next;
  }
  return null;
}

/** `$async` where a keyword is; `__proto__` anywhere but in data. */
function isRefusedKey(place: Place, key: string): boolean {
  if (place === "data" || place === "inData") return false;
  return key === "__proto__" || (key === "$async" && place === "schema");
}

/** Where the member under `key` of a value in `place` is (an unknown keyword's value counts as schema). */
function placeOf(place: Place, key: string): Place {
  if (place === "data" || place === "inData") return "inData";
  if (place === "members") return "schema";
  if (DATA_KEYWORDS.has(key)) return "data";
  if (SCHEMA_MAPS.has(key) || SCHEMA_LISTS.has(key)) return "members";
  return "schema";
}

/** `withDefaults` is null when the schema declares no default anywhere (nothing to fill in). */
type Compiled = { check: ValidateFunction; withDefaults: ValidateFunction | null } | { invalid: string };

/**
 * The field an error's instance path names (`[0].name`). An index is found by `\d\d*`, not `\d+`:
 * a segment is a key of the arguments, as long as a message allows, and compiled unoptimized (a
 * process that has compiled much regular-expression code) `\d+` keeps a backtracking entry per
 * digit; a key of 8 MiB of digits threw RangeError and the call was refused as uncheckable instead
 * of for its error (test/gateway/unoptimized-regex.test.ts).
 */
function fieldOf(instancePath: string): string {
  if (instancePath === "") return "";
  return instancePath
    .split("/")
    .slice(1)
    .map(unescapeSegment)
    .map((seg, i) => (/^\d\d*$/.test(seg) ? `[${seg}]` : i === 0 ? seg : `.${seg}`))
    .join("");
}

function join(parent: string, child: string): string {
  return parent === "" ? child : `${parent}.${child}`;
}

function q(s: string): string {
  return JSON.stringify(s);
}

/**
 * How much of a server's values or a client's field names one sentence shows: an enum may hold
 * 50,000 values, and listing them all in each sentence made one bad item's refusal 489 KB.
 */
const ENUM_VALUES_SHOWN = 12;
const VALUE_CHARS = 80;
export const MAX_SENTENCE_CHARS = 1000;

/** One plain sentence per ajv error, naming the field, at most MAX_SENTENCE_CHARS long (and a count of the rest). */
export function errorSentence(e: ErrorObject): string {
  return clip(fullSentence(e), MAX_SENTENCE_CHARS);
}

function valueText(v: unknown): string {
  return clip(jsonText(v), VALUE_CHARS);
}

function fullSentence(e: ErrorObject): string {
  const field = fieldOf(e.instancePath);
  const subject = field === "" ? "The arguments" : `Field ${q(field)}`;
  const p = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case "required":
      return `Missing required field ${q(join(field, String(p.missingProperty)))}.`;
    case "additionalProperties":
    case "unevaluatedProperties":
      return `Field ${q(join(field, String(p.additionalProperty ?? p.unevaluatedProperty)))} is not accepted by this tool.`;
    case "type":
      return `${subject} must be of type ${String(p.type)}.`;
    case "enum":
      return `${subject} must be one of ${firstOf(Array.isArray(p.allowedValues) ? p.allowedValues : [], ENUM_VALUES_SHOWN, valueText)}.`;
    case "const":
      return `${subject} must equal ${valueText(p.allowedValue)}.`;
    default:
      return `${subject} ${e.message ?? "is invalid"}.`;
  }
}

const MAX_ERRORS = 20;

/**
 * At most MAX_ERRORS distinct sentences, then a count of the other errors. Sentences are made
 * only until that many are kept: a call with 100,000 bad items has 100,000 errors from ajv, and
 * the rest are only counted, by what tells them apart (place, keyword, field named).
 */
function sentences(errors: ErrorObject[]): string[] {
  const kept = new Set<string>();
  const keptKeys = new Set<string>();
  const rest = new Set<string>();
  for (const e of errors) {
    // an error like one already kept or counted makes no sentence: a value failing the same
    // keyword through many branches (anyOf over $refs) is one sentence, built once
    const key = errorKey(e);
    if (keptKeys.has(key) || rest.has(key)) continue;
    if (kept.size < MAX_ERRORS) {
      kept.add(errorSentence(e));
      keptKeys.add(key);
    } else rest.add(key);
  }
  const out = [...kept];
  if (out.length === 0) out.push("The arguments do not match the tool's input schema.");
  if (rest.size > 0) out.push(`${rest.size} more errors were not listed.`);
  return out;
}

function errorKey(e: ErrorObject): string {
  const p = e.params as Record<string, unknown>;
  const name = p.missingProperty ?? p.additionalProperty ?? p.unevaluatedProperty ?? "";
  return `${e.instancePath}\u0000${e.schemaPath}\u0000${String(name)}`;
}

/** A thenable's rejection is handled (ignored: the call is refused either way). */
function settle(result: unknown): void {
  const then = (result as { then?: unknown } | null)?.then;
  if (typeof then === "function") then.call(result, undefined, () => {});
}

export type ValidationResult =
  | { ok: true; effective: Record<string, unknown> }
  | { ok: false; errors: string[] };

/**
 * The validator that answers ArgumentValidator.refusalOf, made on first use, and made anew after
 * PROBE_ANSWERS answers: ajv also keeps some of what each compiled schema's code refers to (about
 * 6 KB a schema, measured), which only a new instance lets go.
 */
let probe: { validator: ArgumentValidator; answered: number } | null = null;
const PROBE_ANSWERS = 100;

export class ArgumentValidator {
  private readonly snap: CatalogSnapshot;
  private readonly compiled = new Map<string, Compiled>();
  private readonly instances = new Map<string, Ajv | Ajv2020>();

  constructor(snap: CatalogSnapshot) {
    this.snap = snap;
    warmEngine();
  }

  /**
   * Why every call of a tool with this input schema would be refused, or null when the schema
   * compiles. Asked by the classifier for each input schema a catalog change narrows (or leaves
   * equal), so each costs only the compile: one validator serves every question, and ajv forgets
   * each schema once it answered (a fresh validator per question took 15–45 ms, most of it making
   * ajv's instances, on the event loop, for each tool of the change).
   */
  static refusalOf(schema: unknown): string | null {
    if (probe === null || probe.answered >= PROBE_ANSWERS)
      probe = { validator: new ArgumentValidator(snapshotOf([], 0)), answered: 0 };
    probe.answered++;
    const c = probe.validator.compileSchema("tool", schema, true);
    return "invalid" in c ? c.invalid : null;
  }

  private ajv(dialect: Dialect, useDefaults: boolean): Ajv | Ajv2020 {
    const key = `${dialect}:${useDefaults}`;
    let a = this.instances.get(key);
    if (!a) {
      a = toolAjv(dialect, useDefaults);
      this.instances.set(key, a);
    }
    return a;
  }

  private compile(toolName: string): Compiled {
    const hit = this.compiled.get(toolName);
    if (hit) return hit;
    const entry = this.snap.byName.get(toolName);
    const schema = entry && Object.hasOwn(entry.tool, "inputSchema") ? entry.tool.inputSchema : undefined;
    const result = this.compileSchema(toolName, schema);
    this.compiled.set(toolName, result);
    return result;
  }

  /** `forget`: ajv drops what it compiled once the answer is made (refusalOf's questions). */
  private compileSchema(toolName: string, schema: unknown, forget = false): Compiled {
    if (schema === undefined || typeof schema !== "object" || schema === null || Array.isArray(schema)) {
      return { invalid: `Tool ${q(toolName)} has no valid input schema, so its calls are refused.` };
    }
    const dialect = dialectOf(schema);
    if (typeof dialect !== "string") {
      return {
        invalid: `Tool ${q(toolName)} declares an unsupported schema dialect (${dialect.unsupported}), so its calls are refused.`,
      };
    }
    // Before anything walks or compiles the schema whole.
    const found = inspectSchema(schema);
    if (found !== null && "key" in found) {
      return {
        invalid:
          `Tool ${q(toolName)} is refused: its input schema has ${q(found.key)} at ${shown(found.at)}, ` +
          `${REFUSED_KEYS.get(found.key)}, so its calls are refused.`,
      };
    }
    if (found !== null && "refIntoData" in found) {
      return {
        invalid:
          `Tool ${q(toolName)} is refused: its input schema has a ${found.ref} at ${shown(found.refIntoData)} that points into ` +
          `the value of ${q(found.data)} (data, not a schema), so its calls are refused.`,
      };
    }
    if (found !== null && "contains" in found) {
      return {
        invalid:
          `Tool ${q(toolName)} is refused: its input schema has "unevaluatedItems" at ${shown(found.unevaluatedItems)} ` +
          `and "contains" at ${shown(found.contains)}, which portcullis's checker cannot combine as JSON Schema does ` +
          "(it would count every item a contains looked at as evaluated), so its calls are refused.",
      };
    }
    if (found !== null) {
      return {
        invalid:
          `Tool ${q(toolName)} has an input schema of ${found.over}, over what portcullis compiles ` +
          `(${MAX_SCHEMA_NODES.toLocaleString("en-US")} nodes, ${MAX_SCHEMA_BYTES / 1024 / 1024} MiB), so its calls are refused.`,
      };
    }
    const counted = withCounting(schema) as object;
    if (!forget) return this.compileCounted(toolName, schema, dialect, counted);
    try {
      return this.compileCounted(toolName, schema, dialect, counted);
    } finally {
      // ajv keeps every schema it compiled (or failed to compile) in a cache keyed by the object
      for (const a of this.instances.values()) a.removeSchema(counted);
    }
  }

  private compileCounted(toolName: string, schema: object, dialect: Dialect, counted: object): Compiled {
    let check: ValidateFunction;
    try {
      check = withPatternBudget(() => this.ajv(dialect, false).compile(counted));
    } catch (err) {
      return { invalid: compileRefusal(toolName, schema, err) };
    }
    // After compiling: what ajv could not resolve is an invalid schema, said as such.
    const overrun = checkCostOverrun(schema, (uri) => this.knownSchema(dialect, uri));
    if (overrun !== null) return { invalid: costRefusal(toolName, overrun) };
    try {
      // Conservative: a property that happens to be named "default" also counts.
      const declaresDefaults = JSON.stringify(schema).includes('"default"');
      return {
        check,
        withDefaults: declaresDefaults
          ? withPatternBudget(() => this.ajv(dialect, true).compile(counted))
          : null,
      };
    } catch (err) {
      return { invalid: compileRefusal(toolName, schema, err) };
    }
  }

  /** A schema ajv holds under `uri` (only its meta-schemas: tools' schemas are never added). */
  private knownSchema(dialect: Dialect, uri: string): unknown {
    try {
      return this.ajv(dialect, false).getSchema(uri)?.schema;
    } catch {
      return undefined;
    }
  }

  /**
   * Validates `args` (the client's `arguments`; absent means `{}`). On success, `effective` is
   * a deep copy with schema defaults filled in, which is what is reviewed, recorded and forwarded
   * (checked again once filled in: a schema's defaults may break its own constraints). When the schema declares no default, `effective` is the
   * client's object itself (no copy is made): callers never modify it.
   */
  validate(toolName: string, args: unknown): ValidationResult {
    if (!this.snap.byName.has(toolName)) {
      return { ok: false, errors: [`Tool ${q(toolName)} is not in the current catalog.`] };
    }
    const value = args === undefined ? {} : args;
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      return { ok: false, errors: ["The arguments must be a JSON object."] };
    }
    const c = this.compile(toolName);
    if ("invalid" in c) return { ok: false, errors: [c.invalid] };
    urlBudget = URL_CHARS_PER_CALL;
    try {
      // Only `true` is valid. An asynchronous check (refused when compiling) would answer a
      // Promise, which is truthy: it must never pass, and its rejection must not go unhandled.
      newCheck();
      startBudget(value);
      const verdict: unknown = c.check(value);
      if (verdict !== true) {
        settle(verdict);
        return { ok: false, errors: sentences(verdict === false ? (c.check.errors ?? []) : []) };
      }
      if (c.withDefaults === null) return { ok: true, effective: value as Record<string, unknown> };
      const effective = structuredClone(value) as Record<string, unknown>;
      newCheck();
      startBudget(effective);
      settle(c.withDefaults(effective));
      // What is forwarded (and reviewed) is `effective`, not what the client sent: a default
      // outside its own enum, or one that makes another field required (dependentRequired,
      // if/then), gives the server arguments the schema the human approved refuses. Checked
      // again, without filling anything, before anyone sees them.
      newCheck();
      startBudget(effective);
      const again: unknown = c.check(effective);
      if (again !== true) {
        settle(again);
        const after = "(once the schema's defaults were filled in for the fields the call left out)";
        return {
          ok: false,
          errors: sentences(again === false ? (c.check.errors ?? []) : []).map((e) => `${e} ${after}`),
        };
      }
      return { ok: true, effective };
    } catch (err) {
      const why = err instanceof Error ? err.message.split("\n")[0] : String(err);
      return {
        ok: false,
        errors: [`The arguments could not be checked against the schema of ${q(toolName)} (${why}).`],
      };
    } finally {
      endBudget();
    }
  }
}
