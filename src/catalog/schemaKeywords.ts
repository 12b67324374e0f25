/**
 * The JSON Schema keywords the diff knows, by family (bounds, subschemas, maps of subschemas,
 * text), and how deep it reads a schema. Apart so that the walk, the value diff (a map keyword's
 * name names no property) and withoutProse name the same families from one place.
 */
/** Deeper than this, two different subschemas are reported as one unexplained change. */
export const MAX_SCHEMA_DEPTH = 48;

export const LOWER_BOUNDS = [
  "minimum",
  "exclusiveMinimum",
  "minLength",
  "minItems",
  "minProperties",
  "minContains",
];
export const UPPER_BOUNDS = [
  "maximum",
  "exclusiveMaximum",
  "maxLength",
  "maxItems",
  "maxProperties",
  "maxContains",
];
/** subschema keywords whose absence means "no constraint" (same polarity as the parent) */
export const SUBSCHEMA_KEYWORDS = [
  "items",
  "additionalItems",
  "unevaluatedItems",
  "propertyNames",
  "contains",
];
/** keywords holding a map of name → subschema */
export const SCHEMA_MAPS = ["patternProperties", "$defs", "definitions", "dependentSchemas"];
export const TEXT_KEYWORDS = ["title", "description", "$comment"];
