// The gateway's argument check against another JSON Schema implementation: @cfworker/json-schema,
// an interpreter written apart from ajv (which compiles each schema to JavaScript). Wherever the
// gateway compiles a schema, both must give every value the same verdict; a schema the gateway
// refuses (every call refused, said in a sentence) is left out. The two ajv bugs this comparison
// found are pinned below with their counterexamples, and so is the reference's own (if/then/else,
// which the reference is given rewritten). `$dynamicRef` is not generated: the other
// implementation does not know it (it has 2019-09's `$recursiveRef` only).
import { Validator } from "@cfworker/json-schema";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ArgumentValidator, snapshotOf, type Tool } from "../../src/catalog/index.js";

type Dialect = "2020-12" | "7";

/** The schema under test sits at `v` of the tool's input schema (arguments are always an object). */
function inputSchema(s: unknown, dialect: Dialect): Record<string, unknown> {
  const root: Record<string, unknown> = { type: "object", properties: { v: s }, required: ["v"] };
  if (dialect === "7") root.$schema = "http://json-schema.org/draft-07/schema#";
  return root;
}

function gateway(s: unknown, dialect: Dialect = "2020-12") {
  const v = new ArgumentValidator(
    snapshotOf([{ name: "t", inputSchema: inputSchema(s, dialect) } as Tool], 1),
  );
  return (x: unknown) => v.validate("t", { v: x });
}

function reference(s: unknown, dialect: Dialect = "2020-12") {
  const v = new Validator(inputSchema(dialect === "7" ? s : withoutIfThenElse(s), dialect), dialect, false);
  return (x: unknown) => v.validate({ v: x }).valid;
}

/**
 * The same schema with each `if`/`then`/`else` written as the `anyOf` it means: `[{allOf: [if,
 * then]}, {allOf: [{not: if}, else]}]`, added to the object's `allOf`, so the annotations the
 * object's own `unevaluated*` sees are the same. Given to the reference only: it lets the names
 * the `if` evaluated count as evaluated inside `then` and `else`, which JSON Schema does not (a
 * subschema sees its own keywords' annotations, not a sibling's; pinned below).
 */
function withoutIfThenElse(s: unknown): unknown {
  if (Array.isArray(s)) return s.map(withoutIfThenElse);
  if (s === null || typeof s !== "object") return s;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(s)) {
    // values compared against, not schemas
    out[key] = key === "const" || key === "enum" ? value : withoutIfThenElse(value);
  }
  if (!("if" in out)) {
    delete out.then;
    delete out.else;
    return out;
  }
  const { if: condition, then: onPass = true, else: onFail = true, ...rest } = out;
  const branches = { anyOf: [{ allOf: [condition, onPass] }, { allOf: [{ not: condition }, onFail] }] };
  rest.allOf = [...((rest.allOf as unknown[] | undefined) ?? []), branches];
  return rest;
}

/** The gateway refused the schema itself (every call refused), rather than this value. */
const REFUSED_SCHEMA =
  /is refused|could not be checked|has no valid input schema|has an invalid input schema|unsupported schema dialect|has an input schema of more/;

const NAMES = ["a", "b"];

/** Schemas of one dialect: applicators, array and object keywords, in-place `$ref`s, combined at random. */
function schemas(dialect: Dialect) {
  return fc.letrec((tie) => ({
    schema: fc.oneof(
      { maxDepth: 3, depthIdentifier: "s" },
      fc.constantFrom<unknown>(
        true,
        false,
        {},
        { type: "string" },
        { type: "integer" },
        { type: "array" },
        { type: "object" },
        { type: ["string", "null"] },
        { minimum: 1 },
        { exclusiveMaximum: 2 },
        { multipleOf: 2 },
        { maxLength: 1 },
        { minItems: 1 },
        { maxItems: 1 },
        { uniqueItems: true },
        { minProperties: 1 },
        { maxProperties: 1 },
        { pattern: "^a" },
        { pattern: "b$" },
        { pattern: "^(a|b)*$" },
        { pattern: "[^a]" },
        { type: "string", pattern: "^.{2}$" },
        // the gateway's patterns run on a linear-time engine of their own, not JavaScript's RegExp
        { pattern: "^.$" },
        { pattern: "^\\w+$" },
        { pattern: "^\\S*$" },
        { pattern: "^[a-z]{1,2}$" },
        { pattern: "a$" },
      ),
      fc.record({ enum: fc.constant([{ a: 1 }, [1], "s", null, 1]) }),
      fc.record({ const: fc.constantFrom<unknown>({ a: 1 }, { b: {} }, [{ a: 1 }], 1, "s", [], {}) }),
      fc.record<Record<string, unknown>>(
        {
          type: fc.constant("object"),
          properties: fc.dictionary(fc.constantFrom(...NAMES), tie("schema"), { maxKeys: 2 }),
          patternProperties: fc.dictionary(fc.constantFrom("^a", "^b", "a"), tie("schema"), { maxKeys: 1 }),
          additionalProperties: tie("schema"),
          required: fc.constantFrom(["a"], [], ["b"]),
          propertyNames: tie("schema"),
          ...(dialect === "7"
            ? {
                dependencies: fc.dictionary(
                  fc.constantFrom(...NAMES),
                  fc.oneof(tie("schema"), fc.constant(["b"])),
                  { maxKeys: 1 },
                ),
              }
            : {
                dependentRequired: fc.constant({ a: ["b"] }),
                dependentSchemas: fc.dictionary(fc.constantFrom(...NAMES), tie("schema"), { maxKeys: 1 }),
                unevaluatedProperties: tie("schema"),
              }),
        },
        { requiredKeys: [] },
      ),
      dialect === "7"
        ? fc.record(
            {
              items: fc.oneof(tie("schema"), fc.array(tie("schema"), { maxLength: 2 })),
              additionalItems: tie("schema"),
              contains: tie("schema"),
              uniqueItems: fc.boolean(),
            },
            { requiredKeys: [] },
          )
        : fc.record(
            {
              prefixItems: fc.array(tie("schema"), { maxLength: 2 }),
              items: tie("schema"),
              contains: tie("schema"),
              minContains: fc.constantFrom(0, 1, 2),
              maxContains: fc.constantFrom(0, 1, 2),
              unevaluatedItems: tie("schema"),
              uniqueItems: fc.boolean(),
            },
            { requiredKeys: [] },
          ),
      fc.array(tie("schema"), { minLength: 1, maxLength: 3 }).map((b) => ({ anyOf: b })),
      fc.array(tie("schema"), { minLength: 1, maxLength: 3 }).map((b) => ({ oneOf: b })),
      fc.array(tie("schema"), { minLength: 1, maxLength: 3 }).map((b) => ({ allOf: b })),
      // biome-ignore lint/suspicious/noThenProperty: "then" is a JSON Schema keyword here, not a thenable
      fc.record({ if: tie("schema"), then: tie("schema"), else: tie("schema") }, { requiredKeys: [] }),
      tie("schema").map((n) => ({ not: n })),
      // a $ref to a plain-name fragment, resolved wherever the schema sits in the tool's
      fc
        .tuple(tie("schema"), fc.nat())
        .map(([d, n]) =>
          dialect === "7"
            ? { allOf: [{ $ref: `#d${n}` }], definitions: { d: { $id: `#d${n}`, allOf: [d] } } }
            : { $ref: `#d${n}`, $defs: { d: { $anchor: `d${n}`, allOf: [d] } } },
        ),
      // two schemas' keywords in one object
      fc
        .tuple(tie("schema"), tie("schema"))
        .map(([a, b]) => ({ ...(typeof a === "object" ? a : {}), ...(typeof b === "object" ? b : {}) })),
    ),
  })).schema;
}

const values = fc.letrec((tie) => ({
  v: fc.oneof(
    { maxDepth: 3, depthIdentifier: "v" },
    fc.constantFrom<unknown>(
      0,
      1,
      2,
      2.5,
      "",
      "s",
      "a",
      "ab",
      "ba",
      "aab",
      "a\n",
      "é",
      "😀",
      "A1",
      null,
      true,
    ),
    fc.array(tie("v"), { maxLength: 3 }),
    fc.dictionary(fc.constantFrom(...NAMES, "c"), tie("v"), { maxKeys: 3, noNullPrototype: true }),
  ),
})).v;

describe("the gateway's verdicts agree with another JSON Schema implementation", () => {
  for (const dialect of ["2020-12", "7"] as const) {
    it(`on generated ${dialect === "7" ? "draft-07" : "2020-12"} schemas and values, wherever the gateway compiles the schema`, () => {
      let compared = 0;
      fc.assert(
        fc.property(schemas(dialect), fc.array(values, { minLength: 1, maxLength: 6 }), (s, xs) => {
          const check = gateway(s, dialect);
          const first = check(xs[0]);
          if (!first.ok && REFUSED_SCHEMA.test(first.errors[0] ?? "")) return;
          const expected = reference(s, dialect);
          for (const x of xs) {
            expect({ schema: s, value: x, ok: check(x).ok }).toEqual({
              schema: s,
              value: x,
              ok: expected(x),
            });
            compared++;
          }
        }),
        { numRuns: 500 },
      );
      expect(compared).toBeGreaterThan(700); // most generated schemas were compiled and compared
    });
  }
});

describe("ajv 8's contains carried a verdict from one array to the next", () => {
  // ajv declared its verdict with `var` and set it only inside the loop over the items: an empty
  // array kept the verdict of the array checked before it
  it("an empty array after one that passed is refused, in every loop over values and in both dialects", () => {
    for (const dialect of ["2020-12", "7"] as const) {
      const items = gateway({ items: { contains: { const: 1 } } }, dialect);
      expect(items([[1], []])).toEqual({
        ok: false,
        errors: ['Field "v[1]" must contain at least 1 valid item(s).'],
      });
      expect(items([[1], [2, 1]]).ok).toBe(true);
      const additional = gateway({ additionalProperties: { contains: { const: 1 } } }, dialect);
      expect(additional({ b: [1], c: [] }).ok).toBe(false);
      expect(additional({ c: [], b: [1] }).ok).toBe(false);
      expect(additional({ b: [1], c: [0, 1] }).ok).toBe(true);
      const patterned = gateway({ patternProperties: { "^x": { contains: { type: "string" } } } }, dialect);
      expect(patterned({ x1: ["s"], x2: [] }).ok).toBe(false);
    }
  });

  it("minContains and maxContains bound the count of matching items, per array", () => {
    const bounded = gateway({ items: { contains: { const: 1 }, minContains: 2, maxContains: 2 } });
    expect(bounded([[1, 2, 1]]).ok).toBe(true);
    expect(bounded([[1, 1], []])).toEqual({
      ok: false,
      errors: ['Field "v[1]" must contain at least 2 and no more than 2 valid item(s).'],
    });
    expect(
      bounded([
        [1, 1],
        [1, 1, 1],
      ]).ok,
    ).toBe(false);
    expect(bounded([[1]]).ok).toBe(false);
    const atMostOne = gateway({ items: { contains: { const: 1 }, minContains: 0, maxContains: 1 } });
    expect(atMostOne([[], [2], [1, 2]]).ok).toBe(true);
    expect(atMostOne([[1], [1, 1]]).ok).toBe(false);
    expect(gateway({ contains: { const: 1 }, minContains: 2, maxContains: 1 })([1, 1]).ok).toBe(false);
    // draft-07 has no bounds: at least one, whatever the 2019-09 keywords say
    const draft7 = gateway({ contains: { const: 1 }, minContains: 2 }, "7");
    expect(draft7([1]).ok).toBe(true);
    expect(draft7([]).ok).toBe(false);
  });
});

describe("unevaluatedItems beside contains", () => {
  it("is refused with a sentence naming both places: ajv counted every item as evaluated once contains passed", () => {
    // JSON Schema: 2 is not among the items contains found valid, so unevaluatedItems rejects it
    expect(reference({ contains: { const: 1 }, unevaluatedItems: false })([1, 2])).toBe(false);
    const check = gateway({ items: true, allOf: [{ contains: { const: 1 } }, { unevaluatedItems: false }] });
    for (const value of [[1], [1, 2], []]) {
      expect(check(value)).toEqual({
        ok: false,
        errors: [
          'Tool "t" is refused: its input schema has "unevaluatedItems" at "/properties/v/allOf/1/unevaluatedItems" ' +
            'and "contains" at "/properties/v/allOf/0/contains", which portcullis\'s checker cannot combine as JSON ' +
            "Schema does (it would count every item a contains looked at as evaluated), so its calls are refused.",
        ],
      });
    }
  });

  it("is not refused for unevaluatedItems: true, nor for the words as data or as property names", () => {
    expect(gateway({ contains: { const: 1 }, unevaluatedItems: true })([1, 2]).ok).toBe(true);
    const named = gateway({
      type: "object",
      properties: { contains: { type: "string" }, unevaluatedItems: { const: { contains: 1 } } },
    });
    expect(named({ contains: "x" }).ok).toBe(true);
    expect(gateway({ unevaluatedItems: false, enum: [{ contains: [] }, []] })([]).ok).toBe(true);
  });
});

describe("then and else do not see what the if evaluated (the reference's own mistake)", () => {
  // Found by the comparison (seed 543127498): @cfworker/json-schema counts the names a passing `if`
  // evaluated as evaluated inside `then`, so `then`'s unevaluatedProperties let "a" through. JSON
  // Schema gives a subschema its own keywords' annotations only; the gateway (ajv) does so.
  // biome-ignore lint/suspicious/noThenProperty: "then" is a JSON Schema keyword here, not a thenable
  const schema = { if: { properties: { a: true } }, then: { unevaluatedProperties: { pattern: "^.$" } } };
  // biome-ignore lint/suspicious/noThenProperty: "then" is a JSON Schema keyword here, not a thenable
  const items = { if: { prefixItems: [true] }, then: { unevaluatedItems: false } };

  it("the gateway refuses what then's unevaluated keywords refuse; the reference, as given to the comparison, agrees", () => {
    expect(gateway(schema)({ a: "aab" }).ok).toBe(false);
    expect(gateway(schema)({ a: "b" }).ok).toBe(true);
    expect(gateway(items)([1]).ok).toBe(false);
    expect(reference(schema)({ a: "aab" })).toBe(false);
    expect(reference(items)([1])).toBe(false);
  });

  it("the reference alone lets them through (if this starts failing, the rewrite can go)", () => {
    const raw = (s: unknown) => (x: unknown) =>
      new Validator(s as object, "2020-12", false).validate(x).valid;
    expect(raw(schema)({ a: "aab" })).toBe(true);
    expect(raw(items)([1])).toBe(true);
  });

  it("the rewrite keeps what the if and then evaluated for the object's own unevaluatedProperties", () => {
    // "a" is evaluated by the passing if, "b" by then: both count for the outer keyword
    const outer = {
      if: { properties: { a: true } },
      // biome-ignore lint/suspicious/noThenProperty: "then" is a JSON Schema keyword here, not a thenable
      then: { properties: { b: true } },
      else: { properties: { c: true } },
      unevaluatedProperties: false,
    };
    for (const value of [{ a: 1, b: 2 }, { a: 1, c: 2 }, { b: 1 }, { c: 1 }, {}]) {
      expect({ value, ok: reference(outer)(value) }).toEqual({ value, ok: gateway(outer)(value).ok });
    }
    expect(gateway(outer)({ a: 1, b: 2 }).ok).toBe(true);
    expect(gateway(outer)({ a: 1, c: 2 }).ok).toBe(false);
  });
});
