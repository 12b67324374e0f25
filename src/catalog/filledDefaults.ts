import { canonicalJson } from "../util/canonical.js";
import { MAX_SCHEMA_DEPTH } from "./schemaKeywords.js";

/**
 * Where an input schema's defaults sit, and what each is (canonical JSON), by the schema's
 * location: the gateway fills each into a call that leaves its place out (ajv's useDefaults), so
 * together they decide what the server receives for a call the agent sends unchanged. Two schemas
 * that accept the same calls but fill different defaults (a property with a default dropped and
 * the object closed; a default added under `allOf`, `dependentSchemas`, `items`) make an approved
 * call reach the server as another: the diff takes any difference here as an expansion.
 * Every place a schema may sit is walked: the map keywords by name, the data keywords skipped, an
 * object or array under any other keyword walked as schemas too (an unknown keyword costs a
 * default it may not fill, never one missed). Past MAX_SCHEMA_DEPTH the rest is kept whole.
 */
export function filledDefaults(schema: unknown): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (s: unknown, at: string, depth: number): void => {
    if (Array.isArray(s)) {
      s.forEach((x, i) => {
        walk(x, `${at}/${i}`, depth + 1);
      });
      return;
    }
    if (typeof s !== "object" || s === null) return;
    if (depth > MAX_SCHEMA_DEPTH) {
      out.set(`${at} (deeper)`, canonicalJson(s));
      return;
    }
    const node = s as Record<string, unknown>;
    if (Object.hasOwn(node, "default")) out.set(at, canonicalJson(node.default));
    for (const [k, v] of Object.entries(node)) {
      if (DATA_KEYWORDS.has(k)) continue;
      const here = `${at}/${escaped(k)}`;
      if (MAP_KEYWORDS.has(k) && typeof v === "object" && v !== null && !Array.isArray(v)) {
        for (const [name, sub] of Object.entries(v)) walk(sub, `${here}/${escaped(name)}`, depth + 1);
      } else walk(v, here, depth + 1);
    }
  };
  walk(schema, "", 0);
  return out;
}

/** Whether two maps of filledDefaults differ, and the locations where they do (at most 5). */
export function defaultsDiffer(a: Map<string, string>, b: Map<string, string>): string[] {
  const at = new Set<string>();
  for (const [k, v] of a) if (b.get(k) !== v) at.add(k);
  for (const k of b.keys()) if (!a.has(k)) at.add(k);
  return [...at].sort().slice(0, 5);
}

/** Keywords whose value is data, not a schema: never walked for defaults. */
const DATA_KEYWORDS = new Set(["enum", "const", "default", "required", "examples", "dependentRequired"]);
/** Keywords whose value maps names to schemas. */
const MAP_KEYWORDS = new Set(["properties", "patternProperties", "$defs", "definitions", "dependentSchemas"]);

/** A JSON Pointer reference token (RFC 6901). */
function escaped(token: string): string {
  return token.replaceAll("~", "~0").replaceAll("/", "~1");
}
