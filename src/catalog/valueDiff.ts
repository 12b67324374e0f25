/**
 * The value keywords' diff: `enum`, `const` and `default`, and how a value the schema gives is
 * shown and kept (shownValue: redacted under the property's name, or under a secret-like
 * property's that takes the schema by `$ref`). Apart from the walk: values, no subschemas.
 */
import { canonicalString, sameJson } from "../util/canonical.js";
import { redactSchemaValue, schemaOwner } from "../util/redact.js";
import { push } from "./fieldChange.js";
import { enumText, shortJson } from "./fieldSummary.js";
import { refOwners } from "./refOwners.js";
import { SCHEMA_MAPS } from "./schemaKeywords.js";
import { fieldName, type Obj, own, pathSegments } from "./schemaPath.js";
import { jsonText } from "./text.js";
import type { FieldChange } from "./types.js";

export function keyOf(v: unknown): string {
  try {
    return canonicalString(v);
  } catch {
    return `\u0000unserializable:${jsonText(v)}`;
  }
}

export function diffEnum(a: Obj, b: Obj, path: string, out: FieldChange[]): void {
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

export function diffConst(a: Obj, b: Obj, path: string, out: FieldChange[]): void {
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
export function shownValue(path: string, keyword: string, v: unknown, a: Obj, b: Obj): unknown {
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
  // (read by a loop: see lastSegment in schemaPath.ts)
  const segs = pathSegments(path).map((s) => s.name);
  let owner: string | null = null;
  for (let i = 0; i + 1 < segs.length; i++) {
    if (segs[i] === "properties") owner = schemaOwner(owner, segs[++i]!);
    else if (SCHEMA_MAPS.includes(segs[i]!)) i++;
  }
  return owner;
}

export function diffDefault(a: Obj, b: Obj, path: string, out: FieldChange[]): void {
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
