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
 */
import { canonicalString, sameJson } from "../util/canonical.js";
import {
  redactSchemaDefaults,
  redactSchemaValue,
  redactValueUnder,
  schemaOwner,
  secretRefTargets,
} from "../util/redact.js";
import { setOwn } from "../util/setOwn.js";
import { clip, firstOf, isCosmeticTextChange, jsonText, newEffectVerbs, sensitiveReasons } from "./text.js";
import type { Classification, FieldChange } from "./types.js";

/** Deeper than this, two different subschemas are reported as one unexplained change. */
export const MAX_SCHEMA_DEPTH = 48;

type Obj = Record<string, unknown>;

export function isObj(v: unknown): v is Obj {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Own property only: a key such as "__proto__" or "constructor" never reads the prototype. */
export function own(o: unknown, k: string): unknown {
  return isObj(o) && Object.hasOwn(o, k) ? o[k] : undefined;
}

/** Appends a property or keyword to a dotted path; odd names are JSON-quoted in brackets. */
export function childPath(path: string, key: string): string {
  const seg = /^[A-Za-z_$][A-Za-z0-9_$-]*$/.test(key) ? key : `[${JSON.stringify(key)}]`;
  if (path === "") return seg.startsWith("[") ? seg : seg;
  return seg.startsWith("[") ? `${path}${seg}` : `${path}.${seg}`;
}

/**
 * The name a path ends in: after its last `.` (when nothing after it is a `.`, `[` or `]`), or its
 * last `["…"]` key; else the path itself. Read by a loop (pathSegments), not by a regular
 * expression: a key is the server's, as long as a catalog allows (megabytes), and a regex's
 * `(?:[^"\\]|\\.)*` over it kept a backtracking entry per character and threw RangeError
 * ("Maximum call stack size exceeded") on 8 MiB, which made the catalog's diff, and the revision
 * it is recorded with, fail.
 */
function lastSegment(path: string): string {
  const dot = path.lastIndexOf(".");
  if (dot >= 0 && dot < path.length - 1 && !/[.[\]]/.test(path.slice(dot + 1))) return path.slice(dot + 1);
  if (!path.endsWith('"]')) return path;
  const last = pathSegments(path).at(-1);
  return last?.quoted && last.end === path.length ? last.name : path;
}

/** One segment of a path as childPath writes it: a name, a `["…"]` key (`quoted`), or an index (name ""). */
interface PathSegment {
  name: string;
  quoted: boolean;
  /** where it ends in the path */
  end: number;
}

/**
 * The segments of a path as childPath writes it (`a.b["odd key"].anyOf[0]`), read by a loop in
 * one pass (see lastSegment); what is none (a stray character) is skipped. A `["…"]` whose JSON
 * does not parse is named by its text.
 */
function pathSegments(path: string): PathSegment[] {
  const out: PathSegment[] = [];
  let i = 0;
  while (i < path.length) {
    const c = path[i]!;
    if (c === "[" && path[i + 1] === '"') {
      let j = i + 2;
      while (j < path.length && path[j] !== '"') j += path[j] === "\\" ? 2 : 1;
      if (j >= path.length || path[j + 1] !== "]") {
        i++;
        continue;
      }
      const text = path.slice(i + 1, j + 1);
      let name = text;
      try {
        name = JSON.parse(text) as string;
      } catch {}
      out.push({ name, quoted: true, end: j + 2 });
      i = j + 2;
    } else if (c === "[") {
      let j = i + 1;
      while (j < path.length && path.charCodeAt(j) >= 48 && path.charCodeAt(j) <= 57) j++;
      if (j > i + 1 && path[j] === "]") {
        out.push({ name: "", quoted: false, end: j + 1 }); // an index: a branch or a tuple item, no name
        i = j + 1;
      } else i++;
    } else if (c === "." || i === 0) {
      const start = c === "." ? i + 1 : i;
      let j = start;
      if (j < path.length && IDENT_START.test(path[j]!)) {
        j++;
        while (j < path.length && IDENT_PART.test(path[j]!)) j++;
        out.push({ name: path.slice(start, j), quoted: false, end: j });
        i = j;
      } else i++;
    } else i++;
  }
  return out;
}

const IDENT_START = /[A-Za-z_$]/;
const IDENT_PART = /[A-Za-z0-9_$-]/;

/** The property a path ends in, as a summary line names it (shortened: a key may be huge). */
export function fieldName(path: string): string {
  return clip(lastSegment(path), NAME_SHOWN);
}

function push(
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

// ---------------------------------------------------------------------------------------------
// Human summaries

function shortJson(v: unknown, max = 80): string {
  const s = jsonText(v);
  return s.length > max ? `${s.slice(0, max)}…` : s;
}

/** A server's word (an enum value, a format, a type): bare when short and plain, else short JSON. */
function shortWord(v: unknown, max = 40): string {
  return typeof v === "string" && v.length <= max && /^[\w.:/@-]+$/.test(v) ? v : shortJson(v, max);
}

/**
 * Enum values shown in one line; the rest are counted. A server may list thousands, and what a
 * human needs is that the set changed and by how much, not every value on one line.
 */
const ENUM_SHOWN = 12;

function enumText(values: unknown[]): string {
  return firstOf(values, ENUM_SHOWN, (v) => shortWord(v), "|");
}

/**
 * A property name inside a summary line: a server may make it as long as it likes. Above what
 * displayName gives for a long name, so a name it already shortened is not cut again.
 */
const NAME_SHOWN = 200;

function typeText(t: unknown): string | undefined {
  if (typeof t === "string") return shortWord(t, 20);
  if (Array.isArray(t) && t.every((x) => typeof x === "string"))
    return firstOf(t, 8, (x) => shortWord(x, 20), "|");
  return undefined;
}

/**
 * The formats the gateway's validator checks: those of ajv-formats (validator.ts) that have a
 * check (its `password` and `binary` accept every string). A schema may name any other
 * (`"format": "phone"`): JSON Schema makes an unknown format an annotation, and ajv, in the
 * non-strict mode the gateway runs it in, ignores it. The review showed `format phone` beside
 * `format email` as if both were enforced, so a human could approve a tool trusting a check that
 * never runs; a format outside this list is now shown `(not checked)`.
 * test/catalog/display.test.ts keeps the list equal to ajv-formats' own.
 */
export const CHECKED_FORMATS: ReadonlySet<string> = new Set([
  "date",
  "time",
  "date-time",
  "iso-time",
  "iso-date-time",
  "duration",
  "uri",
  "uri-reference",
  "uri-template",
  "url",
  "email",
  "hostname",
  "ipv4",
  "ipv6",
  "regex",
  "uuid",
  "json-pointer",
  "json-pointer-uri-fragment",
  "relative-json-pointer",
  "byte",
  "int32",
  "int64",
  "float",
  "double",
]);

/** ajv-formats' formats that check numbers; every other one checks strings only. */
const NUMBER_FORMATS = new Set(["int32", "int64", "float", "double"]);

/**
 * Whether the validator checks format `fmt` on a value this schema (`type`) accepts: a format it
 * knows, for the kind of value it applies to (`{"type": "string", "format": "int32"}` checks nothing).
 */
export function formatChecked(fmt: string, type: unknown): boolean {
  if (!CHECKED_FORMATS.has(fmt)) return false;
  const types = typeof type === "string" ? [type] : Array.isArray(type) ? type : null;
  if (types === null) return true;
  const kinds = NUMBER_FORMATS.has(fmt) ? ["number", "integer"] : ["string"];
  return types.some((t) => kinds.includes(t));
}

/** A format as the human reads it: marked when the gateway does not check it. */
function formatText(fmt: string, type: unknown): string {
  return `format ${shortWord(fmt, 60)}${formatChecked(fmt, type) ? "" : " (not checked)"}`;
}

/**
 * One line describing a (property) schema with its default and allowed values made visible,
 * e.g. `target: string, default "preview" (enum preview|production)`. `key` is the property's
 * own name (`name` is how it is shown): a default under a secret-like name is the secret the call
 * gets when the client leaves it out, a const the one it must send, so either is shown redacted
 * as the argument itself would be. The enum is shown (see SCHEMA_VALUES in src/util/redact.ts).
 * A schema that a secret-like property takes by `$ref` has that property's name instead, while
 * withRefOwners knows the whole schema.
 */
export function describeField(name: string, schema: unknown, required?: boolean, given = name): string {
  // a schema a secret-like property takes by `$ref` (`#/properties/NAME`) gives that one's values
  const key = (isObj(schema) ? refOwners().get(schema) : undefined) ?? given;
  const bits: string[] = [];
  if (schema === true || (isObj(schema) && Object.keys(schema).length === 0)) bits.push("any value");
  else if (schema === false) bits.push("no value accepted");
  else if (!isObj(schema)) bits.push(`unrecognized schema ${shortJson(schema, 40)}`);
  else {
    const t = typeText(own(schema, "type"));
    if (t) bits.push(t);
    if (own(schema, "$ref") !== undefined) bits.push(`$ref ${shortJson(own(schema, "$ref"), 60)}`);
    const fmt = own(schema, "format");
    if (typeof fmt === "string") bits.push(formatText(fmt, own(schema, "type")));
    if (Object.hasOwn(schema, "default"))
      bits.push(`default ${shortJson(redactValueUnder(key, schema.default))}`);
    if (Object.hasOwn(schema, "const")) bits.push(`const ${shortJson(redactValueUnder(key, schema.const))}`);
    const props = own(schema, "properties");
    if (isObj(props)) {
      const names = Object.keys(props);
      bits.push(`{${firstOf(names, 8, (n) => clip(String(n), 40), ", ")}}`);
    }
    const items = own(schema, "items");
    if (isObj(items)) {
      const it = typeText(own(items, "type"));
      if (it) bits.push(`items ${it}`);
    }
  }
  let line = `${clip(name, NAME_SHOWN)}: ${bits.join(", ") || "any value"}`;
  const en = own(schema, "enum");
  if (Array.isArray(en)) line += ` (enum ${enumText(en)})`;
  if (required) line += " (required)";
  return line;
}

// ---------------------------------------------------------------------------------------------
// Text keywords (description, title, $comment): cosmetic only when provably so

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

// ---------------------------------------------------------------------------------------------
// The schema walk

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

/**
 * The definitions that a secret-like property takes by `$ref` in the schemas being diffed (both
 * sides: secretRefTargets), whose values a diff shows redacted under that property's name as it
 * shows the property's own (shownValue, shownProperty, describeField). Set while a diff runs or a
 * schema's properties are described (withRefOwners); empty otherwise.
 */
let refOwnersNow: RefOwners | null = null;
const NO_REF_OWNERS: ReadonlyMap<object, string> = new Map();

/**
 * What withRefOwners knows, found when first asked: only a change that shows a value or a whole
 * schema asks (a default, a const, examples, a property added or removed), and a re-list that
 * tightened a bound on each of 300,000 properties asked nothing, yet scanned every tool's schemas
 * for it twice. The roots are not changed while a diff runs, so the answer is the one found at
 * the start would have been.
 */
class RefOwners {
  private found: Map<object, string> | null = null;
  constructor(
    private readonly outer: RefOwners | null,
    private readonly roots: unknown[],
  ) {}
  get(): ReadonlyMap<object, string> {
    if (this.found === null) {
      const next = new Map(this.outer?.get() ?? NO_REF_OWNERS);
      for (const r of this.roots) for (const [o, name] of secretRefTargets(r)) next.set(o, name);
      this.found = next;
    }
    return this.found;
  }
}

/** The definitions referenced from secret-like properties known now (empty outside withRefOwners). */
function refOwners(): ReadonlyMap<object, string> {
  return refOwnersNow?.get() ?? NO_REF_OWNERS;
}

/** Runs `f` with the definitions referenced from secret-like properties in `roots` known (refOwners). */
export function withRefOwners<T>(roots: unknown[], f: () => T): T {
  const saved = refOwnersNow;
  refOwnersNow = new RefOwners(saved, roots);
  try {
    return f();
  } finally {
    refOwnersNow = saved;
  }
}

/** The definitions referenced from secret-like properties while a diff runs (withRefOwners). */
export function currentRefOwners(): ReadonlyMap<object, string> {
  return refOwners();
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

const LOWER_BOUNDS = ["minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties", "minContains"];
const UPPER_BOUNDS = ["maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties", "maxContains"];
/** subschema keywords whose absence means "no constraint" (same polarity as the parent) */
const SUBSCHEMA_KEYWORDS = ["items", "additionalItems", "unevaluatedItems", "propertyNames", "contains"];
/** keywords holding a map of name → subschema */
const SCHEMA_MAPS = ["patternProperties", "$defs", "definitions", "dependentSchemas"];
const TEXT_KEYWORDS = ["title", "description", "$comment"];

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

// --- type ------------------------------------------------------------------------------------

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

function diffType(a: Obj, b: Obj, path: string, out: FieldChange[]): void {
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

// --- properties ------------------------------------------------------------------------------

function requiredSet(s: Obj): Set<string> {
  const r = own(s, "required");
  return new Set(Array.isArray(r) ? r.filter((x): x is string => typeof x === "string") : []);
}

/**
 * A property's schema as a diff keeps it (shown by `catalog diff`, kept in catalog_revised): its
 * default, and its own properties' defaults, redacted under their names (redactSchemaDefaults).
 */
export function shownProperty(name: string, schema: unknown): unknown {
  const wrapped = redactSchemaDefaults({ properties: { [name]: schema } }, { refOwners: refOwners() }) as {
    properties: Obj;
  };
  return own(wrapped.properties, name);
}

/** The change for one newly declared property (shared with the description of an added tool). */
export function propertyAdded(path: string, name: string, schema: unknown, required: boolean): FieldChange {
  const sensitive = sensitiveReasons(name, own(schema, "format"));
  const c: FieldChange = {
    path,
    change: "property added",
    after: shownProperty(name, schema),
    classification: "expands",
    detail: describeField(name, schema, required),
  };
  if (sensitive.length > 0) c.sensitive = sensitive;
  return c;
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

function diffRequired(a: Obj, b: Obj, path: string, out: FieldChange[]): void {
  const ra = own(a, "required");
  const rb = own(b, "required");
  if (sameJson(ra, rb)) return;
  const okA = ra === undefined || (Array.isArray(ra) && ra.every((x) => typeof x === "string"));
  const okB = rb === undefined || (Array.isArray(rb) && rb.every((x) => typeof x === "string"));
  if (!okA || !okB) {
    push(out, path, "required changed (unrecognized)", "expands", ra, rb);
    return;
  }
  const sa = requiredSet(a);
  const sb = requiredSet(b);
  for (const n of [...sa].sort()) {
    if (!sb.has(n)) {
      push(out, childPath(childPath(path, "properties"), n), "required loosened", "expands", true, false, {
        detail: `${n} no longer required`,
      });
    }
  }
  for (const n of [...sb].sort()) {
    if (!sa.has(n)) {
      push(out, childPath(childPath(path, "properties"), n), "required tightened", "narrows", false, true, {
        detail: `${n} now required`,
      });
    }
  }
}

// --- values ----------------------------------------------------------------------------------

function keyOf(v: unknown): string {
  try {
    return canonicalString(v);
  } catch {
    return `\u0000unserializable:${jsonText(v)}`;
  }
}

function diffEnum(a: Obj, b: Obj, path: string, out: FieldChange[]): void {
  const ea = own(a, "enum");
  const eb = own(b, "enum");
  if (sameJson(ea, eb)) return;
  const name = fieldName(path);
  if ((ea !== undefined && !Array.isArray(ea)) || (eb !== undefined && !Array.isArray(eb))) {
    push(out, path, "enum changed (unrecognized)", "expands", ea, eb);
    return;
  }
  if (ea === undefined && Array.isArray(eb)) {
    push(out, path, "enum added", "narrows", undefined, eb, {
      detail: `${name}: now one of ${enumText(eb)}`,
    });
    return;
  }
  if (Array.isArray(ea) && eb === undefined) {
    push(out, path, "enum removed", "expands", ea, undefined, {
      detail: `${name}: no longer limited to ${enumText(ea)}`,
    });
    return;
  }
  const la = ea as unknown[];
  const lb = eb as unknown[];
  const ka = new Set(la.map(keyOf));
  const kb = new Set(lb.map(keyOf));
  const added = lb.filter((v) => !ka.has(keyOf(v)));
  const removed = la.filter((v) => !kb.has(keyOf(v)));
  if (added.length > 0) {
    push(out, path, "enum widened", "expands", la, lb, {
      detail: `${name}: enum adds ${enumText(added)} (now ${enumText(lb)})`,
    });
  }
  if (removed.length > 0) {
    push(out, path, "enum narrowed", "narrows", la, lb, {
      detail: `${name}: enum drops ${enumText(removed)} (now ${enumText(lb)})`,
    });
  }
  if (added.length === 0 && removed.length === 0) {
    push(out, path, "enum reordered", "cosmetic", la, lb);
  }
}

function diffConst(a: Obj, b: Obj, path: string, out: FieldChange[]): void {
  const has = (o: Obj) => Object.hasOwn(o, "const");
  if (!has(a) && !has(b)) return;
  // compared as given, shown redacted under the property's name (as a default is: diffDefault)
  const shown = (v: unknown) => shownValue(path, "const", v, a, b);
  if (has(a) && has(b)) {
    if (!sameJson(a.const, b.const))
      push(out, path, "const changed", "expands", shown(a.const), shown(b.const));
  } else if (has(b)) push(out, path, "const added", "narrows", undefined, shown(b.const));
  else push(out, path, "const removed", "expands", shown(a.const), undefined);
}

/**
 * A value the schema at `path` (`a` before, `b` after) gives under `keyword` (`default`, `const`,
 * `examples`) as a diff shows and keeps it: redacted under the property's name (redactSchemaValue),
 * or under that of a secret-like property that takes either schema by `$ref` (refOwners): both
 * sides, so that a definition no longer referenced from one still hides its old value.
 */
function shownValue(path: string, keyword: string, v: unknown, a: Obj, b: Obj): unknown {
  if (v === undefined) return v;
  const owners = refOwners();
  return redactSchemaValue(owners.get(a) ?? owners.get(b) ?? ownerOf(path), keyword, v);
}

/**
 * The property whose values the schema at `path` gives, as redactSchemaDefaults decides it: the
 * name after the last `properties` keyword on the path (`inputSchema.properties.token.anyOf[0]`
 * and `….api_keys.items` are `token`'s and `api_keys`'s), a secret-like one holding for the
 * properties below it (schemaOwner); null when the path crosses no `properties`. The name after a
 * map keyword (`$defs`, `patternProperties`, …) names a definition or a pattern, not a property.
 */
function ownerOf(path: string): string | null {
  // (read by a loop: see lastSegment)
  const segs = pathSegments(path).map((s) => s.name);
  let owner: string | null = null;
  for (let i = 0; i + 1 < segs.length; i++) {
    if (segs[i] === "properties") owner = schemaOwner(owner, segs[++i]!);
    else if (SCHEMA_MAPS.includes(segs[i]!)) i++;
  }
  return owner;
}

function diffDefault(a: Obj, b: Obj, path: string, out: FieldChange[]): void {
  const hasA = Object.hasOwn(a, "default");
  const hasB = Object.hasOwn(b, "default");
  if (!hasA && !hasB) return;
  const name = fieldName(path);
  const en = own(b, "enum");
  const enumNote = Array.isArray(en) ? ` (enum ${enumText(en)})` : "";
  // Compared as given (a changed secret default is still a change), shown and kept (the diff goes
  // into catalog_revised and `catalog diff --json`) redacted under the property's name.
  const shown = (v: unknown) => shownValue(path, "default", v, a, b);
  if (hasA && hasB) {
    if (sameJson(a.default, b.default)) return;
    push(out, path, "default changed", "expands", shown(a.default), shown(b.default), {
      detail: `${name}: default ${shortJson(shown(a.default))} → ${shortJson(shown(b.default))}${enumNote}`,
    });
  } else if (hasB) {
    push(out, path, "default added", "expands", undefined, shown(b.default), {
      detail: `${name}: default ${shortJson(shown(b.default))}${enumNote}`,
    });
  } else {
    // What an omitted field now means is up to the server: unprovable, so it expands.
    push(out, path, "default removed", "expands", shown(a.default), undefined, {
      detail: `${name}: default ${shortJson(shown(a.default))} removed; an omitted value now means whatever the server decides`,
    });
  }
}

// --- bounds ----------------------------------------------------------------------------------

function diffBound(
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

function diffMultipleOf(a: Obj, b: Obj, path: string, out: FieldChange[]): void {
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

function diffPatternOrFormat(
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

function diffUniqueItems(a: Obj, b: Obj, path: string, out: FieldChange[]): void {
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

// ---------------------------------------------------------------------------------------------
// For rename detection: the schema without its prose

const PROSE = new Set(["title", "description", "$comment", "examples"]);
const MAP_KEYWORDS = new Set(["properties", ...SCHEMA_MAPS]);
const DATA_KEYWORDS = new Set(["enum", "const", "default", "required", "examples", "dependentRequired"]);

/** Drops titles, descriptions, comments and examples wherever a schema sits; data stays. */
export function withoutProse(s: unknown, depth = 0): unknown {
  if (depth > MAX_SCHEMA_DEPTH) return s;
  if (Array.isArray(s)) return s.map((x) => withoutProse(x, depth + 1));
  if (!isObj(s)) return s;
  const out: Obj = {};
  for (const k of Object.keys(s)) {
    if (PROSE.has(k)) continue;
    const v = s[k];
    let w: unknown;
    if (DATA_KEYWORDS.has(k)) w = v;
    else if (MAP_KEYWORDS.has(k) && isObj(v)) {
      const m: Obj = {};
      for (const n of Object.keys(v)) setOwn(m, n, withoutProse(v[n], depth + 1));
      w = m;
    } else w = withoutProse(v, depth + 1);
    setOwn(out, k, w);
  }
  return out;
}
