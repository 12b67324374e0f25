/**
 * Soundness of the schema classifier, checked against a real validator: whenever some value is
 * accepted by the new schema and rejected by the old one (ajv, JSON Schema 2020-12 and draft-07),
 * the change must not be classified `narrows` or `cosmetic`.
 */
import { Ajv } from "ajv";
import { Ajv2020 } from "ajv/dist/2020.js";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ArgumentValidator, diffCatalogs, snapshotOf, type Tool } from "../../src/catalog/index.js";

type S = unknown;
const NAMES = ["a", "b", "c"];
const name = fc.constantFrom(...NAMES);
const scalar = fc.constantFrom<unknown>("staging", "production", "", "ab", 0, 1, 2.5, 7, -3, true, null);

/** Small JSON values over the same names and scalars the schemas talk about. */
const { value } = fc.letrec((tie) => ({
  value: fc.oneof(
    { maxDepth: 3, depthIdentifier: "v" },
    scalar,
    fc.array(tie("value"), { maxLength: 3 }),
    fc.dictionary(fc.constantFrom(...NAMES, "d"), tie("value"), { maxKeys: 3, noNullPrototype: true }),
  ),
}));

const bound = fc.constantFrom(0, 1, 2, 5);
const { schema } = fc.letrec((tie) => ({
  schema: fc.oneof(
    { maxDepth: 3, depthIdentifier: "s" },
    tie("leaf"),
    tie("object"),
    tie("array"),
    tie("combinator"),
  ),
  leaf: fc.oneof(
    fc.constantFrom<S>(true, false, {}),
    fc.record({ type: fc.constantFrom("string", "number", "integer", "boolean", "null", "object", "array") }),
    fc.record({
      enum: fc.uniqueArray(scalar, { minLength: 1, maxLength: 3, selector: (v) => JSON.stringify(v) }),
    }),
    fc.record({ const: scalar }),
    fc.record({ minimum: bound, maximum: fc.constantFrom(3, 7) }, { requiredKeys: [] }),
    fc.record({ exclusiveMinimum: bound, multipleOf: fc.constantFrom(1, 2) }, { requiredKeys: [] }),
    fc.record(
      { minLength: bound, maxLength: fc.constantFrom(1, 5), pattern: fc.constant("^s") },
      { requiredKeys: [] },
    ),
  ),
  object: fc.record(
    {
      type: fc.constant("object"),
      properties: fc.dictionary(name, tie("schema"), { maxKeys: 3 }),
      required: fc.uniqueArray(name, { maxLength: 2 }),
      additionalProperties: fc.oneof(fc.boolean(), tie("schema")),
      patternProperties: fc.dictionary(fc.constantFrom("^a", "^b"), tie("schema"), { maxKeys: 2 }),
      propertyNames: fc.record({ maxLength: fc.constant(1) }),
      dependentRequired: fc.dictionary(name, fc.uniqueArray(name, { maxLength: 2 }), { maxKeys: 1 }),
      dependentSchemas: fc.dictionary(name, tie("schema"), { maxKeys: 2 }),
      minProperties: bound,
      maxProperties: fc.constantFrom(1, 3),
    },
    { requiredKeys: [] },
  ),
  array: fc.record(
    {
      type: fc.constant("array"),
      items: tie("schema"),
      contains: tie("schema"),
      minContains: bound,
      maxContains: fc.constantFrom(1, 3),
      minItems: bound,
      maxItems: fc.constantFrom(1, 3),
      uniqueItems: fc.boolean(),
    },
    { requiredKeys: [] },
  ),
  combinator: fc.oneof(
    fc.record({ allOf: fc.array(tie("schema"), { minLength: 1, maxLength: 2 }) }),
    fc.record({ anyOf: fc.array(tie("schema"), { minLength: 1, maxLength: 3 }) }),
    fc.record({ oneOf: fc.array(tie("schema"), { minLength: 1, maxLength: 3 }) }),
    fc.record({ not: tie("schema") }),
    // biome-ignore lint/suspicious/noThenProperty: "then" is a JSON Schema keyword here, not a thenable
    fc.record({ if: tie("schema"), then: tie("schema"), else: tie("schema") }, { requiredKeys: ["if"] }),
  ),
}));

/** Keyword settings that constrain where absent; over an existing value they may loosen it. */
const TIGHTEN: S[] = [
  { additionalProperties: false },
  { required: ["a"] },
  { minLength: 1 },
  { maxItems: 1 },
  { enum: ["staging", 1] },
  { type: "object" },
  { propertyNames: { maxLength: 1 } },
  { minProperties: 1 },
  { not: { const: "production" } },
  { minimum: 1 },
  { multipleOf: 2 },
  { allOf: [{ required: ["b"] }] },
  { anyOf: [{ type: "string" }, { type: "object" }] },
  { properties: { a: { type: "string" } } },
  { patternProperties: { "^b": { type: "number" } } },
  { uniqueItems: true },
];

/**
 * Applies one mutation somewhere in `s`, steered by `ops`: walk down into a subschema, then drop
 * a keyword, drop one entry of a map (properties …), empty a map, change a number, or replace
 * the whole subschema with `replacement`.
 */
function mutate(s: S, ops: number[], replacement: S): S {
  const op = ops[0] ?? 0;
  const rest = ops.slice(1);
  if (typeof s !== "object" || s === null) return op % 2 === 0 ? replacement : s;
  const o = s as Record<string, unknown>;
  const keys = Object.keys(o);
  if (keys.length === 0) return replacement;
  const k = keys[op % keys.length] as string;
  const v = o[k];
  const copy = { ...o };
  switch (Math.floor(op / 7) % 7) {
    case 0: // descend
      if (Array.isArray(v) && v.length > 0 && typeof v[0] === "object") {
        const i = op % v.length;
        copy[k] = v.map((x, j) => (j === i ? mutate(x, rest, replacement) : x));
      } else if (typeof v === "object" && v !== null && !Array.isArray(v)) {
        const mk = Object.keys(v);
        const isMap = ["properties", "patternProperties", "dependentSchemas"].includes(k);
        if (isMap && mk.length > 0) {
          const c = mk[op % mk.length] as string;
          copy[k] = { ...(v as object), [c]: mutate((v as Record<string, unknown>)[c], rest, replacement) };
        } else copy[k] = mutate(v, rest, replacement);
      } else copy[k] = mutate(v, rest, replacement);
      return copy;
    case 1: // drop the keyword
      delete copy[k];
      return copy;
    case 2: // drop one entry of a map or list
      if (Array.isArray(v) && v.length > 0) copy[k] = v.filter((_, j) => j !== op % v.length);
      else if (typeof v === "object" && v !== null) {
        const mk = Object.keys(v);
        const drop = mk[op % Math.max(1, mk.length)];
        copy[k] = Object.fromEntries(Object.entries(v).filter(([x]) => x !== drop));
      } else delete copy[k];
      return copy;
    case 3: // empty a map or list
      copy[k] = Array.isArray(v) ? [] : typeof v === "object" && v !== null ? {} : v;
      return copy;
    case 4: // nudge a number
      copy[k] = typeof v === "number" ? v + ((op % 3) - 1) : v;
      return copy;
    case 5: // set a keyword that usually constrains (it may replace a stricter one)
      return { ...copy, ...(TIGHTEN[op % TIGHTEN.length] as object) };
    default:
      return replacement;
  }
}

const ajv2020 = new Ajv2020({ strict: false, allErrors: false, validateFormats: false });
const ajv07 = new Ajv({ strict: false, allErrors: false, validateFormats: false });

/**
 * A validator for `s`, or null when ajv cannot compile it. The validator answers undefined when
 * ajv itself throws on a value (ajv 8.20's 2020-12 code can fail tracking evaluated properties
 * through nested oneOf/allOf: "Cannot set properties of undefined"); such a value says nothing
 * about the classifier and is skipped.
 */
function compile(ajv: Ajv | Ajv2020, s: S): ((v: unknown) => boolean | undefined) | null {
  try {
    const f = ajv.compile(s as object);
    return (v) => {
      try {
        return f(v) === true;
      } catch {
        return undefined;
      }
    };
  } catch {
    return null;
  }
}

function classify(before: S, after: S): string | undefined {
  const a = { name: "t", inputSchema: before } as Tool;
  const b = { name: "t", inputSchema: after } as Tool;
  return diffCatalogs([a], [b]).entries[0]?.classification;
}

describe("the schema classifier never calls a widening a narrowing", () => {
  it("new accepts a value old rejected ⇒ expands (2020-12 and draft-07)", () => {
    fc.assert(
      fc.property(
        schema,
        fc.array(fc.nat(), { minLength: 1, maxLength: 4 }),
        schema,
        fc.array(value, { minLength: 1, maxLength: 12 }),
        (old, ops, replacement, values) => {
          const neu = mutate(old, ops, replacement);
          const cls = classify(old, neu);
          if (cls === "expands" || cls === undefined) return;
          for (const ajv of [ajv2020, ajv07]) {
            const vo = compile(ajv, old);
            const vn = compile(ajv, neu);
            if (!vo || !vn) continue;
            for (const v of values) {
              if (vn(v) === true && vo(v) === false) {
                expect.fail(
                  `${cls} but ${JSON.stringify(v)} is newly accepted: ${JSON.stringify(old)} → ${JSON.stringify(neu)}`,
                );
              }
            }
          }
        },
      ),
      { numRuns: 1000 },
    );
    // 1,000 pairs of schemas compiled by two ajv instances, ten times fast-check's default (3,500
    // before, set with no reason given: about 20 s on a quiet 2-core machine, past 60 s when other
    // suites shared the cores); `npm run test:explore` draws fresh cases for a longer search
  }, 240_000);

  /**
   * The gateway's own validator as the judge, over keywords the ajv above never sees: formats
   * (checked here), `nullable`, a root `$schema` (an unsupported one refuses the tool) and `$async`
   * (refuses the tool). A refused tool accepts nothing, so dropping what refused it must expand.
   */
  const extra = fc.record(
    {
      format: fc.constantFrom("email", "date", "uri", "ipv4"),
      nullable: fc.boolean(),
      $async: fc.boolean(),
      type: fc.constantFrom("string", "number"),
    },
    { requiredKeys: [] },
  );
  const dialect = fc.constantFrom<string | undefined>(
    undefined,
    "https://json-schema.org/draft/2020-12/schema",
    "http://json-schema.org/draft-07/schema#",
    "http://json-schema.org/draft-04/schema#",
  );
  const wrapped = (s: S, more: object, d: string | undefined): S => ({
    ...(d === undefined ? {} : { $schema: d }),
    type: "object",
    properties: { a: typeof s === "object" && s !== null ? { ...s, ...more } : s },
  });
  const judgedValue = fc.oneof(
    value,
    fc.constantFrom<unknown>("a@b.co", "2020-01-31", "http://x.y/", "10.0.0.1"),
  );

  /** An old tool, and the new one's extras: as they were, or with one dropped or one added. */
  const judgedCase = fc.tuple(schema, extra, dialect).chain(([s, moreOld, dOld]) =>
    fc.record({
      s: fc.constant(s),
      moreOld: fc.constant(moreOld),
      dOld: fc.constant(dOld),
      moreNew: fc.oneof(
        { weight: 3, arbitrary: fc.constant(moreOld) },
        fc
          .constantFrom(...Object.keys(moreOld), "none")
          .map((k) => Object.fromEntries(Object.entries(moreOld).filter(([key]) => key !== k))),
        extra.map((e) => ({ ...moreOld, ...e })),
      ),
      dNew: fc.oneof({ weight: 3, arbitrary: fc.constant(dOld) }, dialect),
    }),
  );

  it("new accepts a value old rejected ⇒ expands, judged by the gateway's validator (formats, nullable, $schema, $async)", () => {
    fc.assert(
      fc.property(
        judgedCase,
        fc.array(fc.nat(), { minLength: 1, maxLength: 4 }),
        schema,
        fc.array(judgedValue, { minLength: 1, maxLength: 8 }),
        ({ s, moreOld, dOld, moreNew, dNew }, ops, replacement, values) => {
          const old = wrapped(s, moreOld, dOld);
          const neu = wrapped(mutate(s, ops, replacement), moreNew, dNew);
          const cls = classify(old, neu);
          if (cls === "expands" || cls === undefined) return;
          const judge = (x: S) =>
            new ArgumentValidator(snapshotOf([{ name: "t", inputSchema: x } as Tool], 1));
          const vo = judge(old);
          const vn = judge(neu);
          for (const v of values) {
            if (vn.validate("t", { a: v }).ok && !vo.validate("t", { a: v }).ok) {
              expect.fail(
                `${cls} but {"a":${JSON.stringify(v)}} is newly accepted: ${JSON.stringify(old)} → ${JSON.stringify(neu)}`,
              );
            }
          }
        },
      ),
      { numRuns: 600 },
    );
  });

  it("a schema the gateway refused, made to compile by a narrowing keyword, expands (CI's counterexample)", () => {
    // `nullable` without `type` does not compile in ajv, so every call was refused; adding a
    // `type` narrows in JSON Schema terms but lets calls through that were all refused.
    const a = { oneOf: [{ oneOf: [true, { type: "string" }] }, { type: "array" }], nullable: false };
    const old = { type: "object", properties: { a } };
    const neu = { type: "object", properties: { a: { ...a, type: "object" } } };
    expect(classify(old, neu)).toBe("expands");
    // A pattern portcullis cannot check in linear time, with a bound added beside it.
    const lookahead = { type: "object", properties: { p: { type: "string", pattern: "^(?=a)" } } };
    const bounded = {
      type: "object",
      properties: { p: { type: "string", pattern: "^(?=a)", maxLength: 3 } },
    };
    expect(classify(lookahead, bounded)).not.toBe("expands"); // both refused: nothing new passes
    // Still a narrowing when the old schema compiled.
    expect(classify(old.properties.a.oneOf[1] as S, { type: "array", maxItems: 2 })).toBe("narrows");
  });

  /**
   * `multipleOf` with whole divisors, judged by the gateway's validator on numbers past 2^53 and
   * past 1e21, where dividing in floating point (ajv's own check) went wrong: `multipleOf: 1`
   * refused 1e21 that `multipleOf: 2` accepted, and `x / 1075` rounded to a whole number where
   * `x / 25` did not. The classifier calls a change to a multiple of the divisor `narrows`, so
   * nothing the new divisor accepts may be refused by the old one.
   */
  it("multipleOf changed to a multiple of itself accepts nothing new, past 2^53 and 1e21 too", () => {
    const tool = (m: number) =>
      ({ name: "t", inputSchema: { type: "object", properties: { n: { multipleOf: m } } } }) as Tool;
    // one validator per divisor: compiling one per run made this test take a minute under load
    const judges = new Map<number, ArgumentValidator>();
    const judge = (m: number) => {
      const known = judges.get(m);
      if (known) return known;
      const v = new ArgumentValidator(snapshotOf([tool(m)], 1));
      judges.set(m, v);
      return v;
    };
    const big = fc.oneof(
      fc.double({ noNaN: true, noDefaultInfinity: true }),
      fc.bigInt(2n ** 53n, 2n ** 90n).map(Number),
      fc.constantFrom(1e21, 2e21, 11080954076448076, 2 ** 60 + 256, 2 ** 80),
    );
    fc.assert(
      fc.property(
        fc.constantFrom(1, 2, 3, 5, 7, 25, 1000),
        fc.integer({ min: 2, max: 60 }),
        fc.array(big, { minLength: 1, maxLength: 8 }),
        (m, k, values) => {
          const cls = classify(tool(m).inputSchema, tool(m * k).inputSchema);
          expect(cls === "narrows" || cls === "cosmetic").toBe(true);
          const vo = judge(m);
          const vn = judge(m * k);
          for (const v of values) {
            if (vn.validate("t", { n: v }).ok && !vo.validate("t", { n: v }).ok) {
              expect.fail(`multipleOf ${m} → ${m * k} is ${cls}, but ${v} is newly accepted`);
            }
          }
        },
      ),
      { numRuns: 400 },
    );
    // The two counterexamples, and whole numbers read as what is forwarded (shortest decimal text).
    expect(judge(1).validate("t", { n: 1e21 }).ok).toBe(true);
    expect(judge(25).validate("t", { n: 11080954076448076 }).ok).toBe(false);
    expect(judge(1075).validate("t", { n: 11080954076448076 }).ok).toBe(false);
    expect(judge(3).validate("t", { n: 2 ** 60 + 256 }).ok).toBe(true); // "1152921504606847200"
    expect(judge(2).validate("t", { n: 2.5 }).ok).toBe(false);
    expect(judge(0.5).validate("t", { n: 2.5 }).ok).toBe(true);
  });

  it("the reported bypass is found: a property's enum dropped with properties emptied", () => {
    const old = { properties: { target: { type: "string", enum: ["staging"] } } };
    expect(classify(old, { properties: {} })).toBe("expands");
  });
});
