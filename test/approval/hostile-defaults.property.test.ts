/**
 * What test/catalog/soundness.test.ts misses: it checks that a change classified `narrows` or
 * `cosmetic` accepts no *value* the old schema rejected. But what reaches the server is the
 * effective arguments, the value with the schema's defaults filled in (docs/design.md, step 9):
 * a session grant that survives a revision must not let through a *forwarded* value that no call
 * under the approved definition could have forwarded.
 *
 * Property: for old → new classified narrows/cosmetic, for every value v the new schema accepts,
 * its effective arguments x = eff_new(v) are forwardable under the old schema: the old schema
 * accepts x and forwards x as it is (x is a fixed point of eff_old, so x = eff_old(x)).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ArgumentValidator, diffCatalogs, snapshotOf, type Tool } from "../../src/catalog/index.js";

const NAMES = ["a", "b"] as const;
const prop = fc.constantFrom<Record<string, unknown>>(
  {},
  { type: "boolean" },
  { type: "boolean", default: false },
  { const: true },
  { const: true, default: true },
  { enum: [true, false], default: true },
);
const base = fc.record(
  {
    type: fc.constant("object"),
    properties: fc.dictionary(fc.constantFrom(...NAMES), prop, { maxKeys: 2, noNullPrototype: true }),
    additionalProperties: fc.boolean(),
  },
  { requiredKeys: ["type", "properties"] },
);

type Schema = { type: string; properties: Record<string, unknown>; [k: string]: unknown };

/** Edits a server may make that the diff reads as narrowing or cosmetic, one or two at a time. */
const edit = fc.oneof(
  // drop an input and close the object
  fc.constantFrom(...NAMES).map((n) => (s: Schema): Schema => {
    const properties = { ...s.properties };
    delete properties[n];
    return { ...s, properties, additionalProperties: false };
  }),
  // a new allOf branch (which the diff reads as a new constraint) carrying a default
  fc.tuple(fc.constantFrom(...NAMES), fc.boolean()).map(
    ([n, d]) =>
      (s: Schema): Schema => ({
        ...s,
        allOf: [...((s.allOf as unknown[]) ?? []), { properties: { [n]: { default: d } } }],
      }),
  ),
  // an input's schema replaced by another one
  fc.tuple(fc.constantFrom(...NAMES), prop).map(
    ([n, p]) =>
      (s: Schema): Schema => ({
        ...s,
        properties: { ...s.properties, [n]: p },
      }),
  ),
  fc.constant((s: Schema): Schema => ({ ...s, additionalProperties: false })),
);
const pair = fc
  .tuple(base, fc.array(edit, { minLength: 1, maxLength: 2 }))
  .map(([before, edits]) => [before, edits.reduce((s, e) => e(s), before as Schema)] as const);

/** Every object over a, b, c with values absent / true / false / null. */
const VALUES: Record<string, unknown>[] = [];
{
  const choices: unknown[] = [undefined, true, false, null];
  for (const a of choices)
    for (const b of choices)
      for (const c of choices) {
        const v: Record<string, unknown> = {};
        if (a !== undefined) v.a = a;
        if (b !== undefined) v.b = b;
        if (c !== undefined) v.c = c;
        VALUES.push(v);
      }
}

const tool = (inputSchema: unknown): Tool => ({ name: "t", inputSchema }) as Tool;

describe("a change classified narrows or cosmetic forwards nothing the approved definition could not", () => {
  it("eff_new(v) is forwardable under the old schema for every v the new one accepts", () => {
    fc.assert(
      fc.property(pair, ([before, after]) => {
        const entry = diffCatalogs([tool(before)], [tool(after)]).entries[0];
        if (!entry || entry.classification === "expands") return;
        const oldV = new ArgumentValidator(snapshotOf([tool(before)], 1));
        const newV = new ArgumentValidator(snapshotOf([tool(after)], 1));
        for (const v of VALUES) {
          const n = newV.validate("t", v);
          if (!n.ok) continue;
          const x = n.effective;
          const o = oldV.validate("t", structuredClone(x));
          expect(
            o.ok &&
              JSON.stringify(Object.entries(o.effective).sort()) === JSON.stringify(Object.entries(x).sort()),
            `classified ${entry.classification}: ${JSON.stringify(v)} goes out as ${JSON.stringify(x)}, ` +
              `which the approved definition never forwards (${o.ok ? `it forwards ${JSON.stringify(o.effective)}` : "it refuses it"})`,
          ).toBe(true);
        }
      }),
      { numRuns: 500 },
    );
  });
});
