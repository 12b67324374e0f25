/**
 * A schema without its prose (titles, descriptions, comments, examples), for rename detection:
 * a tool renamed with the same inputs is found by its schema's data. Apart from the diff: it
 * changes no schema, it only reads one for diff.ts's matching.
 */
import { setOwn } from "../util/setOwn.js";
import { MAX_SCHEMA_DEPTH, SCHEMA_MAPS } from "./schemaKeywords.js";
import { isObj, type Obj } from "./schemaPath.js";

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
