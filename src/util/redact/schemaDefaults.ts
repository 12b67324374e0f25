/** Tool definitions and input schemas with the values they give for secret-named properties redacted. */

import { setOwn } from "../setOwn.js";
import { secretRefTargets } from "./schemaRefs.js";
import { isSchemaValue, redactSchemaValue, schemaOwner } from "./schemaValues.js";
import type { RedactOptions } from "./values.js";

/**
 * A copy of a JSON value (tool definitions, input schemas) in which the values a schema gives for
 * a property (SCHEMA_VALUES: `default`, `const`, `examples`) are redacted under the property's
 * name (redactSchemaValue): `{"api_key": {"default": S}}` holds S under the key `default`, so
 * redactValue, which goes by keys, never read it as the api_key's value; a server's default is
 * the value the call gets when the client leaves it out. The name is that of the property the
 * schema describes, through its subschemas (`{"token": {"anyOf": [{"default": S}]}}`,
 * `{"api_keys": {"items": {"const": S}}}`: schemaOwner), and a secret-like name holds for every
 * property below it too, as redactValue replaces everything under such a key. Such values outside
 * any property (an input schema's own `examples` or `default`, whole argument objects) are
 * redacted as redactValue would, by their keys. Everything else is kept as it is (the caller
 * redacts the rest as it did).
 */
export function redactSchemaDefaults(
  value: unknown,
  opts: RedactOptions & { refOwners?: ReadonlyMap<object, string> } = {},
): unknown {
  const owners = secretRefTargets(value);
  const walk = (v: unknown, outer: string | null): unknown => {
    if (typeof v !== "object" || v === null) return v;
    if (Array.isArray(v)) return v.map((x) => walk(x, outer));
    // a definition a secret-like property takes by `$ref` is that property's (secretRefTargets)
    const owner = owners.get(v) ?? opts.refOwners?.get(v) ?? outer;
    const out: Record<string, unknown> = {};
    // (each value read by its key, as Object.entries reads it, without a pair array per key)
    const obj = v as Record<string, unknown>;
    for (const k of Object.keys(obj)) {
      const x = obj[k];
      let copy: unknown;
      // (outside any property, a schema's own values, `examples: [{"session": S}]` of a whole
      // input, are redacted by their keys: redactValueUnder with no name)
      if (isSchemaValue(k)) copy = redactSchemaValue(owner, k, x, opts);
      else if (k === "enum")
        copy = walk(x, null); // values, shown (SCHEMA_VALUES)
      else if (k === "properties" && typeof x === "object" && x !== null && !Array.isArray(x)) {
        const props: Record<string, unknown> = {};
        const named = x as Record<string, unknown>;
        for (const name of Object.keys(named))
          setOwn(props, name, walk(named[name], schemaOwner(owner, name)));
        copy = props;
      } else copy = walk(x, owner);
      setOwn(out, k, copy);
    }
    return out;
  };
  return walk(value, null);
}
