/**
 * The values a JSON Schema gives for a property (`default`, `const`, `examples`), and the name
 * they are redacted under.
 */

import { isSecretName } from "./names.js";
import { type RedactOptions, redactValueUnder } from "./values.js";

/**
 * The name whose values a property's schema gives: the property's own, unless it sits under one
 * named like a secret, whose name then holds (everything under a secret-like key is a secret).
 */
export function schemaOwner(outer: string | null, name: string): string {
  return outer !== null && isSecretName(outer) ? outer : name;
}

export function isSchemaValue(k: string): k is (typeof SCHEMA_VALUES)[number] {
  return (SCHEMA_VALUES as readonly string[]).includes(k);
}

/**
 * The keywords whose value a schema gives as a property's value: `default` (what the call gets
 * when the client leaves it out), `const` (the one value it may take) and `examples` (values it
 * might take: a server pastes its own key there as readily as into a default). Not `enum`: it
 * lists the choices every caller is offered (`auth_mode: oauth|basic|none`), which the human
 * must see to judge what a call may do, and a narrowed or widened enum is an authority change
 * the diff reports; its strings are still redacted as text wherever they are shown.
 */
export const SCHEMA_VALUES = ["default", "const", "examples"] as const;

/**
 * A value a schema gives for the property `name` under `keyword` (SCHEMA_VALUES), redacted as the
 * property's own value would be (redactValueUnder): each of `examples` on its own, so that the
 * human still sees how many there are and which are empty or null.
 */
export function redactSchemaValue(
  name: string | null,
  keyword: string,
  v: unknown,
  opts: RedactOptions = {},
): unknown {
  if (keyword === "examples" && Array.isArray(v)) return v.map((x) => redactValueUnder(name, x, opts));
  return redactValueUnder(name, v, opts);
}
