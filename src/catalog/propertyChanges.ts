/**
 * What a diff says of a property added (propertyAdded, shared with the description of an added
 * tool), the schema it keeps of one (shownProperty, defaults redacted), and the `required`
 * keyword's diff. Apart from the walk, which compares the properties both sides have.
 */
import { sameJson } from "../util/canonical.js";
import { redactSchemaDefaults } from "../util/redact.js";
import { push } from "./fieldChange.js";
import { describeField } from "./fieldSummary.js";
import { refOwners } from "./refOwners.js";
import { childPath, type Obj, own } from "./schemaPath.js";
import { sensitiveReasons } from "./text.js";
import type { FieldChange } from "./types.js";

export function requiredSet(s: Obj): Set<string> {
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

export function diffRequired(a: Obj, b: Obj, path: string, out: FieldChange[]): void {
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
