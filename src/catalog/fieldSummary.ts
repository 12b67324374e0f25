/**
 * What a human reads of a field: one line describing a (property) schema, its type, format
 * (marked when the gateway does not check it), default, const and enum made visible, secret-like
 * values redacted (describeField), and the short forms the diff's details use. Apart from the
 * diff: the review (src/approval/review.ts) and render.ts describe fields with it too.
 */
import { redactValueUnder } from "../util/redact.js";
import { refOwners } from "./refOwners.js";
import { isObj, NAME_SHOWN, own } from "./schemaPath.js";
import { clip, firstOf, jsonText } from "./text.js";

export function shortJson(v: unknown, max = 80): string {
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

export function enumText(values: unknown[]): string {
  return firstOf(values, ENUM_SHOWN, (v) => shortWord(v), "|");
}

export function typeText(t: unknown): string | undefined {
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
