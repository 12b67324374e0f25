// A server's schema and a client's arguments chosen to hurt the argument check: an asynchronous
// schema, an enum of 50,000 values against many bad items, uniqueItems over thousands of objects,
// fields named after Object.prototype's members. Every check answers a plain verdict, in
// sentences of bounded size, with JSON Schema's meaning.
import { Ajv2020 } from "ajv/dist/2020.js";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ArgumentValidator, snapshotOf, type Tool } from "../../src/catalog/index.js";
import { MAX_SENTENCE_CHARS } from "../../src/catalog/validator.js";

function validator(...tools: Tool[]) {
  return new ArgumentValidator(snapshotOf(tools, 1));
}

function tool(inputSchema: unknown, name = "t"): Tool {
  return { name, inputSchema } as Tool;
}

/** A schema as a server sends it: parsed from JSON text, so "__proto__" is an ordinary key. */
function parsed(json: string): unknown {
  return JSON.parse(json);
}

const PUBLISH = {
  type: "object",
  required: ["target"],
  additionalProperties: false,
  properties: { target: { enum: ["preview"] } },
};

describe("$async", () => {
  it("refuses the tool, naming the place, for valid and invalid arguments alike; never a Promise taken for a pass", () => {
    const v = validator(
      tool({ $async: true, ...PUBLISH }, "root"),
      tool({ ...PUBLISH, properties: { target: { $async: true, enum: ["preview"] } } }, "nested"),
      tool({ ...PUBLISH, $defs: { later: { $async: false } } }, "declared_false"),
    );
    const cases: [string, string][] = [
      ["root", "/$async"],
      ["nested", "/properties/target/$async"],
      ["declared_false", "/$defs/later/$async"],
    ];
    for (const [name, at] of cases) {
      for (const args of [
        { target: "preview" },
        { target: "production", webhook: "https://evil.example/x" },
      ]) {
        expect(v.validate(name, args)).toEqual({
          ok: false,
          errors: [
            `Tool "${name}" is refused: its input schema has "$async" at "${at}", which asks for an asynchronous check, one portcullis does not run, so its calls are refused.`,
          ],
        });
      }
    }
  });

  it("a property named $async, or $async inside an enum's values, is not the keyword", () => {
    const v = validator(
      tool({ type: "object", properties: { $async: { type: "boolean" } } }, "named"),
      tool({ type: "object", properties: { mode: { enum: [{ $async: true }, "sync"] } } }, "data"),
    );
    expect(v.validate("named", { $async: true }).ok).toBe(true);
    expect(v.validate("named", { $async: "yes" }).ok).toBe(false);
    expect(v.validate("data", { mode: { $async: true } }).ok).toBe(true);
    expect(v.validate("data", { mode: "async" }).ok).toBe(false);
  });

  it("a check that answers anything but true is a failure, and a rejected Promise is handled", async () => {
    const v = validator(tool(PUBLISH));
    // What ajv compiles of an asynchronous schema, put in place of the compiled check: a
    // rejection left unhandled fails this test run (vitest reports it), as it ended the gateway.
    const compiled = (v as unknown as { compiled: Map<string, unknown> }).compiled;
    for (const answer of [() => Promise.reject(new Error("validation failed")), () => 1, () => undefined]) {
      compiled.set("t", { check: Object.assign(answer, { errors: null }), withDefaults: null });
      expect(v.validate("t", { target: "production" })).toEqual({
        ok: false,
        errors: ["The arguments do not match the tool's input schema."],
      });
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  });
});

describe("an enum of 50,000 values", () => {
  const values = Array.from({ length: 50_000 }, (_, i) => `v${i}`);
  const tag = tool({ type: "object", properties: { xs: { type: "array", items: { enum: values } } } }, "tag");

  // 100,000 bad items (a 600 KB call): ajv compared each with the 50,000 values in turn, and every
  // sentence listed them all (one was 489 KB)
  it("100,000 bad items: 20 short sentences that show 12 values and count the rest, and a count of the other errors", () => {
    const v = validator(tag);
    expect(v.validate("tag", { xs: ["v0", "v49999"] }).ok).toBe(true);
    const r = v.validate("tag", { xs: Array.from({ length: 100_000 }, () => "zz") });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.errors).toHaveLength(21);
    expect(r.errors[0]).toBe(
      'Field "xs[0]" must be one of "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11", … and 49988 more.',
    );
    expect(r.errors[20]).toBe("99980 more errors were not listed.");
    expect(r.errors.join("\n").length).toBeLessThan(21 * 150);
  });

  it("long values and long field names are cut short in every sentence", () => {
    const long = "L".repeat(100_000);
    const v = validator(
      tool({
        type: "object",
        properties: { pick: { enum: [long, { deep: long }] }, fixed: { const: long } },
      }),
      tool({ type: "object", additionalProperties: false }, "closed"),
    );
    const r = v.validate("t", { pick: "x", fixed: "y" });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.errors).toHaveLength(2);
    for (const sentence of r.errors) expect(sentence.length).toBeLessThan(300);
    expect(r.errors[0]).toMatch(
      /^Field "pick" must be one of "LLLL+… \(\d+ more chars\), \{"deep":"LLL+… \(\d+ more chars\)\.$/,
    );
    const c = v.validate("closed", { [`f${"i".repeat(50_000)}eld`]: 1 });
    expect(c.ok).toBe(false);
    if (c.ok) return;
    expect(c.errors[0]?.length).toBeLessThanOrEqual(MAX_SENTENCE_CHARS + 40);
    expect(c.errors[0]).toMatch(/^Field "fiii+… \(\d+ more chars\)$/);
  });

  it("keeps JSON Schema's equality: numbers by value, objects in any key order, arrays in order, types apart", () => {
    const v = validator(
      tool({
        type: "object",
        properties: { x: { enum: [1, "2", null, false, [1, 2], { a: 1, b: [true] }, "[3]"] } },
      }),
    );
    for (const x of [1, 1.0, "2", null, false, [1, 2], { b: [true], a: 1 }, "[3]"]) {
      expect([x, v.validate("t", { x }).ok]).toEqual([x, true]);
    }
    for (const x of [
      "1",
      2,
      "null",
      0,
      true,
      [2, 1],
      [1, 2, 3],
      { a: 1 },
      { a: 1, b: [true], c: 0 },
      [3],
      {},
    ]) {
      expect([x, v.validate("t", { x }).ok]).toEqual([x, false]);
    }
  });
});

describe("uniqueItems", () => {
  const list = tool({ type: "object", properties: { xs: { type: "array", uniqueItems: true } } });

  it("20,000 distinct objects pass; one repeated, with its keys in another order, is found and both places named", () => {
    const v = validator(list);
    const xs = Array.from({ length: 20_000 }, (_, i) => ({ id: i, tags: [`t${i}`] }));
    expect(v.validate("t", { xs }).ok).toBe(true);
    expect(v.validate("t", { xs: [...xs, { tags: ["t7"], id: 7.0 }] })).toEqual({
      ok: false,
      errors: ['Field "xs" must NOT have duplicate items (items ## 7 and 20000 are identical).'],
    });
  });

  it("keeps JSON Schema's equality, and finds two items both the string __proto__", () => {
    const v = validator(
      list,
      tool(
        {
          type: "object",
          properties: { xs: { type: "array", items: { type: "string" }, uniqueItems: true } },
        },
        "strings",
      ),
    );
    expect(v.validate("t", { xs: [1, "1", [1], "[1]", { a: 1 }, '{"a":1}', null, "null", true] }).ok).toBe(
      true,
    );
    expect(v.validate("t", { xs: [0, -0] }).ok).toBe(false);
    expect(
      v.validate("t", {
        xs: [
          [1, { a: 2, b: 3 }],
          [1, { b: 3, a: 2 }],
        ],
      }).ok,
    ).toBe(false);
    expect(v.validate("strings", { xs: ["__proto__", "constructor", "__proto__"] }).ok).toBe(false);
    expect(v.validate("strings", { xs: ["__proto__", "constructor", "toString"] }).ok).toBe(true);
  });
});

describe("fields named after Object.prototype's members", () => {
  it('required ["__proto__"] and ["constructor"] are enforced: {} misses them, a client that sends them passes', () => {
    const v = validator(
      tool(parsed('{"type":"object","required":["__proto__"]}'), "proto"),
      tool({ type: "object", required: ["constructor", "toString"] }, "ctor"),
      tool({ type: "object", dependentRequired: { a: ["hasOwnProperty"] } }, "dep"),
    );
    expect(v.validate("proto", {})).toEqual({ ok: false, errors: ['Missing required field "__proto__".'] });
    expect(v.validate("proto", parsed('{"__proto__": 1}')).ok).toBe(true);
    expect(v.validate("ctor", {})).toEqual({
      ok: false,
      errors: ['Missing required field "constructor".', 'Missing required field "toString".'],
    });
    expect(v.validate("ctor", { constructor: 1, toString: "x" }).ok).toBe(true);
    expect(v.validate("dep", { a: 1 }).ok).toBe(false);
    expect(v.validate("dep", { a: 1, hasOwnProperty: 2 }).ok).toBe(true);
  });

  it("a property named toString is checked on the client's field only, not on Object.prototype's function", () => {
    const v = validator(tool({ type: "object", properties: { toString: { type: "string" } } }));
    expect(v.validate("t", {}).ok).toBe(true);
    expect(v.validate("t", { toString: "x" }).ok).toBe(true);
    expect(v.validate("t", { toString: 1 }).ok).toBe(false);
  });

  it("a schema naming __proto__ (which ajv skips) refuses its tool, naming the place", () => {
    const v = validator(
      tool(parsed('{"type":"object","properties":{"__proto__":{"type":"string"}}}'), "props"),
      tool(parsed('{"type":"object","dependentRequired":{"__proto__":["a"]}}'), "dep"),
      tool(parsed('{"type":"object","properties":{"x":{"enum":[{"__proto__":1}]}}}'), "data"),
    );
    expect(v.validate("props", parsed('{"__proto__": 5}'))).toEqual({
      ok: false,
      errors: [
        'Tool "props" is refused: its input schema has "__proto__" at "/properties/__proto__", a name the schema checker skips (what the schema says of that field would not be checked), so its calls are refused.',
      ],
    });
    expect(v.validate("dep", {})).toEqual({
      ok: false,
      errors: [expect.stringContaining('has "__proto__" at "/dependentRequired/__proto__"')],
    });
    // in an enum's values it is data: compared like any other key
    expect(v.validate("data", { x: parsed('{"__proto__": 1}') }).ok).toBe(true);
    expect(v.validate("data", { x: {} }).ok).toBe(false);
  });
});

describe("enum and uniqueItems by hashing agree with ajv's own comparisons", () => {
  // Small JSON values that collide often: equal numbers, reordered keys, strings that spell JSON.
  const atom = fc.constantFrom<unknown>(
    0,
    -0,
    1,
    1.0,
    2.5,
    "1",
    "",
    "a",
    '{"a":1}',
    "[1]",
    true,
    false,
    null,
  );
  const { value } = fc.letrec((tie) => ({
    value: fc.oneof(
      { maxDepth: 2, depthIdentifier: "v" },
      atom,
      fc.array(tie("value"), { maxLength: 3 }),
      fc.dictionary(fc.constantFrom("a", "b", "c"), tie("value"), { maxKeys: 3, noNullPrototype: true }),
    ),
  }));
  const ajv = new Ajv2020({ strict: false, allErrors: true });

  // allowed values, the value and the items drawn from one small pool, so that they often meet
  const drawn = fc.array(value, { minLength: 1, maxLength: 5 }).chain((pool) =>
    fc.record({
      allowed: fc.subarray(pool, { minLength: 1 }),
      x: fc.oneof(fc.constantFrom(...pool), value),
      xs: fc.array(fc.constantFrom(...pool), { maxLength: 6 }),
    }),
  );

  it("on any list of allowed values and any value, and any array", () => {
    fc.assert(
      fc.property(drawn, ({ allowed, x, xs }) => {
        const schema = {
          type: "object",
          properties: { x: { enum: allowed }, xs: { type: "array", uniqueItems: true } },
        };
        // keys reordered in the client's copy: equality must not depend on their order
        const args = { x: reordered(x), xs: xs.map((v, i) => (i % 2 === 0 ? reordered(v) : v)) };
        const ours = validator(tool(schema)).validate("t", args);
        expect(ours.ok).toBe(ajv.compile(schema)(args) === true);
      }),
      { numRuns: 200 },
    );
  });
});

function reordered(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(reordered);
  if (typeof v !== "object" || v === null) return v;
  return Object.fromEntries(
    Object.entries(v)
      .reverse()
      .map(([k, x]) => [k, reordered(x)]),
  );
}

describe("a tuple inside not and if (an ajv 8 bug, fixed by the keywords' order)", () => {
  const judge = (schema: object, value: unknown, dialect?: string) =>
    new ArgumentValidator(
      snapshotOf(
        [
          {
            name: "t",
            inputSchema: {
              ...(dialect ? { $schema: dialect } : {}),
              type: "object",
              properties: { xs: { type: "array", ...schema } },
            },
          } as Tool,
        ],
        1,
      ),
    ).validate("t", { xs: value }).ok;

  it("the keywords after prefixItems are checked on an array shorter than the tuple", () => {
    // ajv alone skipped `contains` here: [] passed the `if`, so `then: true` accepted it
    const gate = {
      if: { prefixItems: [{ type: "string" }], contains: { const: "go" } },
      // biome-ignore lint/suspicious/noThenProperty: "then" is a JSON Schema keyword here, not a thenable
      then: true,
      else: false,
    };
    expect(judge(gate, [])).toBe(false);
    expect(judge(gate, ["a", "go"])).toBe(true);
    expect(judge(gate, ["a", "stop"])).toBe(false);
    // and `not` refused [] though nothing in it matches `contains`
    expect(judge({ not: { prefixItems: [{ type: "string" }], contains: {} } }, [])).toBe(true);
    expect(judge({ not: { prefixItems: [{ type: "string" }], contains: {} } }, ["a"])).toBe(false);
    // the gateway's own uniqueItems after a tuple whose first checking entry is past the array
    const unique = {
      if: { prefixItems: [{}, {}, { type: "string" }], uniqueItems: true },
      // biome-ignore lint/suspicious/noThenProperty: "then" is a JSON Schema keyword here, not a thenable
      then: true,
      else: false,
    };
    expect(judge(unique, [1, 1])).toBe(false);
  });

  it("the same for draft-07's array form of items", () => {
    const d7 = "http://json-schema.org/draft-07/schema#";
    // biome-ignore lint/suspicious/noThenProperty: "then" is a JSON Schema keyword here, not a thenable
    const gate = { if: { items: [{ type: "string" }], contains: { const: "go" } }, then: true, else: false };
    expect(judge(gate, [], d7)).toBe(false);
    expect(judge(gate, ["a", "go"], d7)).toBe(true);
    expect(judge({ items: [{ type: "string" }], additionalItems: { type: "integer" } }, ["a", "b"], d7)).toBe(
      false,
    );
    expect(judge({ items: [{ type: "string" }], additionalItems: { type: "integer" } }, ["a", 1], d7)).toBe(
      true,
    );
  });

  it("the tuple's own meaning is kept: items, uniqueItems and unevaluatedItems beside it", () => {
    const tuple = { prefixItems: [{ type: "string" }], items: { type: "integer" } };
    expect(judge(tuple, ["a", 1])).toBe(true);
    expect(judge(tuple, ["a", "b"])).toBe(false);
    expect(judge({ prefixItems: [{ type: "string" }], unevaluatedItems: false }, ["a"])).toBe(true);
    expect(judge({ prefixItems: [{ type: "string" }], unevaluatedItems: false }, ["a", "b"])).toBe(false);
    expect(
      judge({ prefixItems: [{ type: "string" }, {}], uniqueItems: true, unevaluatedItems: false }, [
        "a",
        "a",
      ]),
    ).toBe(false);
    expect(judge({ allOf: [{ prefixItems: [{ type: "string" }] }], unevaluatedItems: false }, ["a"])).toBe(
      true,
    );
  });
});

describe("ArgumentValidator.refusalOf (the classifier's question), answered by one reused validator", () => {
  const SCHEMAS: [string, unknown][] = [
    ["plain", { type: "object", properties: { a: { type: "string" } } }],
    ["dangling $ref", { type: "object", properties: { a: { $ref: "#/$defs/none" } } }],
    ["$async", { type: "object", $async: true }],
    ["lookahead", { type: "object", properties: { a: { type: "string", pattern: "^(?=a)" } } }],
    ["with an $id", { $id: "https://example.com/a", type: "object", $defs: { x: { type: "string" } } }],
    // resolvable only if the schema above had been kept by the reused validator
    ["$ref to that $id", { type: "object", properties: { a: { $ref: "https://example.com/a#/$defs/x" } } }],
    [
      "with an $id again",
      { $id: "https://example.com/a", type: "object", $defs: { x: { type: "integer" } } },
    ],
    ["unevaluatedItems and contains", { type: "object", contains: {}, unevaluatedItems: false }],
  ];

  /** What a validator made for the one schema says: refused (every call), or checked. */
  function freshAnswer(schema: unknown): boolean {
    const v = validator(tool(schema));
    const r = v.validate("t", {});
    return !r.ok && /is refused|invalid input schema|no valid input schema/.test(r.errors[0] ?? "");
  }

  it("gives the answer a fresh validator gives, whatever it answered before, past the reuse bound", () => {
    const expected = SCHEMAS.map(([, s]) => freshAnswer(s));
    expect(expected).toEqual([false, true, true, true, false, true, false, true]);
    // 150 rounds: the reused validator is replaced after 100 answers, mid-round
    for (let round = 0; round < 150 / SCHEMAS.length; round++) {
      const answers = SCHEMAS.map(([, s]) => ArgumentValidator.refusalOf(structuredClone(s)) !== null);
      expect(answers).toEqual(expected);
    }
  });
});
