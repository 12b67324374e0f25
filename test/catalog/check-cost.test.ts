// The bound on how many subschemas one value of a call is checked against (src/catalog/checkCost.ts):
// whatever schema is generated, either it is refused or ajv's real check of each value of the
// arguments stays within the bound, counted by a keyword added to every subschema (never by time); schemas that repeat nothing
// are never refused; and the tools of real servers are all accepted.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { Ajv2020 } from "ajv/dist/2020.js";
import fc from "fast-check";
import { afterAll, describe, expect, it } from "vitest";
import { checkCostOverrun } from "../../src/catalog/checkCost.js";
import { ArgumentValidator, snapshotOf, type Tool } from "../../src/catalog/index.js";
import { removeDir, tempDir } from "../helpers/files.js";
import { EVERYTHING, FILESYSTEM, MEMORY, NODE } from "../helpers/paths.js";

type Schema = Record<string, unknown> | boolean;

const DEFS = 12;
const NAMES = ["a", "b", "c"];

/** A subschema of definition i: a leaf, or a keyword whose subschemas refer to definitions. */
function defArb(i: number): fc.Arbitrary<Schema> {
  // in place, only later definitions (no loop without a step into the arguments); one level
  // down, any definition (recursion through the arguments)
  const later =
    i + 1 < DEFS
      ? fc.oneof(fc.constant(i + 1), fc.integer({ min: i + 1, max: DEFS - 1 })).map(ref)
      : fc.constant<Schema>({ type: "string" });
  const any = fc.integer({ min: 0, max: DEFS - 1 }).map(ref);
  const leaf = fc.constantFrom<Schema>({ type: "string" }, { minimum: 0 }, { const: 1 }, true, {
    required: ["a"],
  });
  const branches = fc.array(later, { minLength: 1, maxLength: 3 });
  const name = fc.constantFrom(...NAMES);
  return fc.oneof(
    leaf,
    branches.map((b) => ({ anyOf: b })),
    branches.map((b) => ({ allOf: b })),
    branches.map((b) => ({ oneOf: b })),
    later.map((s) => ({ not: s })),
    // biome-ignore lint/suspicious/noThenProperty: "then" is a JSON Schema keyword here, not a thenable
    fc.tuple(later, later, later).map(([c, t, e]) => ({ if: c, then: t, else: e })),
    fc.tuple(name, later).map(([n, s]) => ({ dependentSchemas: { [n]: s } })),
    fc
      .array(fc.tuple(name, any), { minLength: 1, maxLength: 3 })
      .map((ps) => ({ properties: Object.fromEntries(ps) })),
    fc.tuple(any, any).map(([p, a]) => ({ properties: { a: p }, additionalProperties: a })),
    any.map((s) => ({ patternProperties: { "^[ab]": s } })),
    any.map((s) => ({ items: s })),
    fc.tuple(any, any).map(([p, s]) => ({ prefixItems: [p], items: s, contains: p })),
    // ajv calls the function it is compiling (this definition, if it is a $ref target) whatever the fragment
    fc
      .tuple(name, fc.constantFrom("$dynamicRef", "$recursiveRef"), fc.constantFrom("#", "#/$defs/d0"))
      .filter(([, k, f]) => k === "$dynamicRef" || f === "#")
      .map(([n, k, f]) => ({ properties: { [n]: { anyOf: [{ [k]: f }, { [k]: f }] } } })),
  );
}

function ref(i: number): Schema {
  return { $ref: `#/$defs/d${i}` };
}

const schemaArb = fc
  .tuple(...Array.from({ length: DEFS }, (_, i) => defArb(i)))
  .map((defs) => ({ $defs: Object.fromEntries(defs.map((d, i) => [`d${i}`, d])), $ref: "#/$defs/d0" }));

const valueArb = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: "small", maxDepth: 6 },
    fc.constantFrom<unknown>(1, -1, "s", null, true),
    fc.array(tie("value"), { maxLength: 3 }),
    fc.dictionary(fc.constantFrom(...NAMES, "z"), tie("value"), { maxKeys: 3 }),
  ),
})).value;

/** A copy of the schema with a counting keyword in every subschema object, where ajv finds subschemas. */
function counted(s: unknown): unknown {
  if (Array.isArray(s)) return s.map(counted);
  if (typeof s !== "object" || s === null) return s;
  const out: Record<string, unknown> = { "x-count": true };
  for (const [k, v] of Object.entries(s)) {
    if (k === "const" || k === "required") out[k] = v;
    else if (["$defs", "properties", "patternProperties", "dependentSchemas"].includes(k))
      out[k] = Object.fromEntries(Object.entries(v as object).map(([n, x]) => [n, counted(x)]));
    else out[k] = counted(v);
  }
  return out;
}

/** The most subschemas ajv (with portcullis's options) really checks one value of `value` against. */
function mostChecksOfOneValue(schema: unknown, value: unknown): number {
  const checks = new Map<string, number>();
  const ajv = new Ajv2020({
    strict: false,
    allErrors: true,
    addUsedSchema: false,
    logger: false,
    ownProperties: true,
  });
  ajv.addKeyword({
    keyword: "x-count",
    validate: (_s: unknown, _data: unknown, _parent: unknown, cxt?: { instancePath: string }) => {
      const at = cxt?.instancePath ?? "";
      checks.set(at, (checks.get(at) ?? 0) + 1);
      return true;
    },
  });
  ajv.compile(counted(schema) as object)(value);
  return Math.max(0, ...checks.values());
}

const noLookup = () => undefined;

describe("the bound on subschemas checked per value", () => {
  it("a generated schema is refused, or ajv checks each value of generated arguments against at most the bound", () => {
    let refused = 0;
    let checked = 0;
    // a small limit makes the bound tight enough to be tested on small schemas and arguments
    const limit = fc.integer({ min: 1, max: 64 });
    fc.assert(
      fc.property(
        schemaArb,
        limit,
        fc.array(valueArb, { minLength: 1, maxLength: 4 }),
        (schema, max, values) => {
          if (checkCostOverrun(schema, noLookup, max) !== null) {
            refused++;
            return;
          }
          checked++;
          for (const value of values) expect(mostChecksOfOneValue(schema, value)).toBeLessThanOrEqual(max);
        },
      ),
      { numRuns: 150, seed: 20261201 },
    );
    // both sides of the classifier were exercised
    expect(refused).toBeGreaterThan(10);
    expect(checked).toBeGreaterThan(10);
  });

  it("a schema that repeats nothing (no $ref) is never refused, whatever its combinators", () => {
    const tree = fc.letrec<{ s: Schema }>((tie) => ({
      s: fc.oneof(
        { depthSize: "small", maxDepth: 5 },
        fc.constantFrom<Schema>({ type: "string" }, true, { minimum: 1 }),
        fc.array(tie("s"), { minLength: 1, maxLength: 4 }).map((b) => ({ anyOf: b, allOf: b })),
        fc
          .dictionary(fc.constantFrom(...NAMES), tie("s"), { maxKeys: 3 })
          .map((p) => ({ properties: p, patternProperties: p })),
        tie("s").map((s) => ({ items: s, contains: s, not: s })),
      ),
    })).s;
    fc.assert(
      fc.property(tree, (s) => checkCostOverrun(s, noLookup) === null),
      { numRuns: 300, seed: 20261202 },
    );
  });

  it("exponential shapes are refused at the place where the count passes the bound", () => {
    const defs: Record<string, unknown> = { d30: { type: "string" } };
    for (let i = 0; i < 30; i++)
      defs[`d${i}`] = { oneOf: [{ $ref: `#/$defs/d${i + 1}` }, { $ref: `#/$defs/d${i + 1}` }] };
    expect(checkCostOverrun({ $defs: defs, $ref: "#/$defs/d0" }, noLookup)).toEqual({
      at: "/$defs/d21",
      checks: 2045,
      depth: 0,
    });
    // a loop of in-place references: ajv would recurse without end
    const loop = { $defs: { a: { anyOf: [{ type: "string" }, { $ref: "#/$defs/a" }] } }, $ref: "#/$defs/a" };
    expect(checkCostOverrun(loop, noLookup)).toEqual({ at: "/$defs/a", loop: true });
    // an unused definition costs nothing
    expect(checkCostOverrun({ $defs: defs, type: "object" }, noLookup)).toBeNull();
  });

  it("references are counted where ajv goes, not where their URI points", () => {
    const nest = (key: string, depth: number, leaf: unknown = 1): unknown =>
      depth === 0 ? leaf : { [key]: nest(key, depth - 1, leaf) };
    const twice = (r: Record<string, unknown>) => ({ anyOf: [r, r] });
    // $dynamicRef and $recursiveRef call the function being compiled (here `d`), whatever the
    // fragment says, unless a dynamic anchor of that name was met: not the root, not a pointer
    const dynamic = (r: Record<string, unknown>) => ({
      type: "object",
      properties: { b: { $ref: "#/$defs/d" } },
      $defs: { leaf: {}, d: { type: "object", properties: { a: twice(r) } } },
    });
    // one function per level a long way down, so that the root's own path doubles too rarely to count
    let far: Record<string, unknown> = { $ref: "#/$defs/d" };
    for (let i = 0; i < 100; i++) far = { type: "object", properties: { p: far } };
    // a pointer through an `$id` (here under a keyword no one checks) moves the base of what it reaches
    const chain: Record<string, unknown> = { e14: { type: "string" } };
    for (let i = 0; i < 14; i++) chain[`e${i}`] = twice({ $ref: `#/$defs/e${i + 1}` });
    const cases: [string, unknown, unknown][] = [
      ["$recursiveRef", dynamic({ $recursiveRef: "#" }), { b: nest("a", 14) }],
      ["$dynamicRef to a pointer", dynamic({ $dynamicRef: "#/$defs/leaf" }), { b: nest("a", 14) }],
      [
        "$dynamicRef to the root, far down",
        { ...far, $defs: dynamic({ $dynamicRef: "#" }).$defs },
        nest("p", 100, nest("a", 14)),
      ],
      [
        "a pointer through an $id",
        {
          $ref: "#/x/y",
          $defs: { e0: {} },
          x: { $id: "https://e.example/o.json", $defs: chain, y: { $ref: "#/$defs/e0" } },
        },
        1,
      ],
    ];
    // two resources to ajv (no base: `a/b` and `/a/b`), one URI under any base: never guessed
    const cheap = Object.fromEntries(Array.from({ length: 15 }, (_, i) => [`e${i}`, {}]));
    cases.push([
      "two $ids that are one URI under a base",
      {
        $defs: {
          cheap: { $id: "/a/b", $defs: cheap },
          dear: { $id: "a/b", $defs: chain, $ref: "#/$defs/e0" },
        },
        $ref: "a/b",
      },
      1,
    ]);
    // a pointer is split into segments before they are percent-decoded: `%2F` is a `/` inside the
    // name "a/b" (the fan-out), not a step from "a" into "b" (nothing)
    cases.push([
      "a %2F inside a name",
      { $defs: { ...chain, "a/b": { $ref: "#/$defs/e0" }, a: { b: {} } }, $ref: "#/$defs/a%2Fb" },
      1,
    ]);
    for (const [name, schema, value] of cases) {
      // each is a real fan-out past the bound ...
      expect([name, mostChecksOfOneValue(schema, value) > 2000]).toEqual([name, true]);
      // ... and refused
      expect([name, checkCostOverrun(schema, noLookup)]).not.toEqual([name, null]);
    }
  });

  it("recursive schemas of everyday shapes are accepted: a JSON value, a filter tree, the meta-schema", () => {
    const filter = {
      $defs: {
        f: {
          anyOf: [
            { type: "object", properties: { and: { type: "array", items: { $ref: "#/$defs/f" } } } },
            { type: "object", properties: { or: { type: "array", items: { $ref: "#/$defs/f" } } } },
            { type: "object", properties: { not: { $ref: "#/$defs/f" } } },
            { type: "object", properties: { field: { type: "string" }, equals: {} } },
          ],
        },
      },
      type: "object",
      properties: { where: { $ref: "#/$defs/f" } },
    };
    const v = new ArgumentValidator(
      snapshotOf(
        [
          { name: "filter", inputSchema: filter } as Tool,
          {
            name: "define",
            inputSchema: {
              type: "object",
              properties: { schema: { $ref: "https://json-schema.org/draft/2020-12/schema" } },
            },
          } as Tool,
        ],
        1,
      ),
    );
    expect(v.validate("filter", { where: { and: [{ not: { field: "a", equals: 1 } }] } })).toMatchObject({
      ok: true,
    });
    expect(
      v.validate("define", { schema: { type: "object", properties: { a: { anyOf: [] } } } }),
    ).toMatchObject({
      ok: false,
    });
    expect(v.validate("define", { schema: { type: "object" } })).toMatchObject({ ok: true });
  });

  it("a pointer to a name holding a / (spelled %2F or ~1) is followed, not refused as unfollowable", () => {
    for (const spelling of ["a%2Fb", "a~1b"]) {
      const schema = {
        type: "object",
        properties: { v: { $ref: `#/$defs/${spelling}` } },
        $defs: { "a/b": { type: "string" } },
      };
      expect([spelling, checkCostOverrun(schema, noLookup)]).toEqual([spelling, null]);
      const v = new ArgumentValidator(snapshotOf([{ name: "t", inputSchema: schema } as Tool], 1));
      expect(v.validate("t", { v: "x" })).toMatchObject({ ok: true });
      expect(v.validate("t", { v: 1 })).toMatchObject({ ok: false });
    }
  });
});

describe("the tools of real servers", () => {
  const dir = tempDir("check-cost-");
  afterAll(() => removeDir(dir));
  const servers = {
    everything: { args: EVERYTHING.args(), env: {} },
    filesystem: { args: FILESYSTEM.args(dir), env: {} },
    memory: { args: MEMORY.args(), env: MEMORY.env(`${dir}/memory.json`) },
  };
  for (const [name, s] of Object.entries(servers)) {
    it(`${name}: every tool's input schema is within the bound and compiles`, async () => {
      const client = new Client({ name: "check-cost", version: "1" });
      await client.connect(
        new StdioClientTransport({
          command: NODE,
          args: s.args,
          env: { ...process.env, ...s.env } as Record<string, string>,
          stderr: "ignore",
        }),
      );
      try {
        const { tools } = await client.listTools();
        expect(tools.length).toBeGreaterThan(5);
        const v = new ArgumentValidator(snapshotOf(tools as Tool[], 1));
        for (const t of tools) {
          expect([t.name, checkCostOverrun(t.inputSchema, noLookup)]).toEqual([t.name, null]);
          const r = v.validate(t.name, {});
          const sentences = r.ok ? [] : r.errors;
          expect([t.name, sentences.filter((e) => /is refused|invalid input schema/.test(e))]).toEqual([
            t.name,
            [],
          ]);
        }
      } finally {
        await client.close();
      }
    });
  }
});
