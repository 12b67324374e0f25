import { describe, expect, it } from "vitest";
import { type Classification, diffCatalogs, type Tool } from "../../src/catalog/index.js";
import { provablySubset } from "../../src/catalog/subset.js";

function classify(before: unknown, after: unknown): Classification | undefined {
  const a = { name: "deploy", inputSchema: before } as Tool;
  const b = { name: "deploy", inputSchema: after } as Tool;
  return diffCatalogs([a], [b]).entries[0]?.classification;
}

const target = { type: "string", enum: ["staging"] };

describe("a removed constraint is never a narrowing (issue 9, item 1)", () => {
  it("properties emptied", () => {
    expect(classify({ properties: { target } }, { properties: {} })).toBe("expands");
  });
  it("properties keyword removed", () => {
    expect(classify({ type: "object", properties: { target } }, { type: "object" })).toBe("expands");
  });
  it("nested property removed", () => {
    const old = { properties: { opts: { type: "object", properties: { target } } } };
    const neu = { properties: { opts: { type: "object", properties: {} } } };
    expect(classify(old, neu)).toBe("expands");
  });
  it("patternProperties entry removed", () => {
    const old = { type: "object", patternProperties: { "^t": target } };
    expect(classify(old, { type: "object", patternProperties: {} })).toBe("expands");
  });
  it("dependentSchemas entry removed", () => {
    const old = { type: "object", dependentSchemas: { force: { required: ["reason"] } } };
    expect(classify(old, { type: "object", dependentSchemas: {} })).toBe("expands");
  });
});

describe("provable narrowings stay narrowings", () => {
  const base = { type: "object", properties: { target: { type: "string" }, n: { type: "number" } } };
  const cases: [string, unknown][] = [
    ["enum added", { ...base, properties: { ...base.properties, target }, additionalProperties: true }],
    ["required added", { ...base, required: ["target"] }],
    ["additionalProperties closed", { ...base, additionalProperties: false }],
    ["bound added", { ...base, properties: { ...base.properties, n: { type: "integer", minimum: 1 } } }],
    ["allOf branch added", { ...base, allOf: [{ required: ["n"] }] }],
  ];
  for (const [name, neu] of cases) {
    it(name, () => {
      expect(provablySubset(base, neu)).toBe(true);
      expect(classify(base, neu)).toBe("narrows");
    });
  }
  it("identical schemas up to descriptions are equal; closing to false narrows", () => {
    expect(provablySubset(base, { ...base, description: "x" })).toBe(true);
    expect(classify(base, false)).toBe("narrows");
  });
});

/** `if` plus `then`, built from JSON text (biome refuses a `then` property in object literals). */
function ifThen(then: unknown): unknown {
  return JSON.parse(`{"if":{"required":["a"]},"then":${JSON.stringify(then)}}`);
}

describe("unprovable changes expand", () => {
  const cases: [string, unknown, unknown][] = [
    [
      "oneOf branch removed",
      { oneOf: [{ type: "integer" }, { minimum: 0 }] },
      { oneOf: [{ type: "integer" }] },
    ],
    ["pattern changed", { type: "string", pattern: "^a" }, { type: "string", pattern: "^ab" }],
    [
      "$ref target changed",
      { $defs: { x: { type: "string" } }, $ref: "#/$defs/x" },
      { $defs: { x: {} }, $ref: "#/$defs/x" },
    ],
    ["not removed", { not: { type: "string" } }, {}],
    ["if/then loosened", ifThen({ required: ["b"] }), ifThen({})],
    ["unknown keyword changed", { type: "string", "x-limit": 1 }, { type: "string", "x-limit": 2 }],
    ["tuple items changed", { items: [{ type: "string" }] }, { items: [{}] }],
    ["$schema changed", { $schema: "http://json-schema.org/draft-07/schema#" }, {}],
  ];
  for (const [name, old, neu] of cases) {
    it(name, () => {
      expect(provablySubset(old, neu)).toBe(false);
      expect(classify(old, neu)).toBe("expands");
    });
  }
});

describe("a hostile schema cannot make the proof slow", () => {
  it("nested anyOf of anyOf runs out of budget and is unproved", () => {
    let old: unknown = { type: "string" };
    let neu: unknown = { type: "string", minLength: 1 };
    for (let i = 0; i < 8; i++) {
      old = { anyOf: [old, old, old, { const: i }] };
      neu = { anyOf: [neu, neu, neu] };
    }
    expect(provablySubset(old, neu)).toBe(false);
    expect(classify(old, neu)).toBe("expands");
  });
});
