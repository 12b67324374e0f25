import { describe, expect, it } from "vitest";
import { ArgumentValidator, snapshotOf, type Tool } from "../../src/catalog/index.js";
import {
  MAX_SCHEMA_BYTES,
  MAX_SCHEMA_NODES,
  MAX_URL_CHARS,
  URL_CHARS_PER_CALL,
} from "../../src/catalog/validator.js";
import { deployService, publishPreview, readIssue } from "./fixtures.js";

const withTarget = {
  ...publishPreview,
  inputSchema: {
    type: "object",
    properties: {
      build_id: { type: "string", minLength: 1 },
      target: { type: "string", enum: ["preview", "production"], default: "preview" },
      notify: {
        type: "object",
        properties: {
          channel: { type: "string", default: "#deploys" },
          when: { type: "string", format: "date-time" },
        },
      },
    },
    required: ["build_id"],
    additionalProperties: false,
  },
} as Tool;

const draft07: Tool = {
  name: "legacy_tool",
  inputSchema: {
    $schema: "http://json-schema.org/draft-07/schema#",
    type: "object",
    properties: {
      // draft-07 tuple form: items as an array
      pair: { type: "array", items: [{ type: "string" }, { type: "integer" }], additionalItems: false },
      level: { type: "integer", default: 3, exclusiveMaximum: 10 },
    },
    required: ["pair"],
  },
};

const modern: Tool = {
  name: "modern_tool",
  inputSchema: {
    $schema: "https://json-schema.org/draft/2020-12/schema",
    type: "object",
    properties: {
      pair: { type: "array", prefixItems: [{ type: "string" }, { type: "integer" }], items: false },
      extra: { $ref: "#/$defs/positive" },
    },
    $defs: { positive: { type: "integer", minimum: 1 } },
    required: ["pair"],
  },
};

function validator(...tools: Tool[]) {
  return new ArgumentValidator(snapshotOf(tools, 1));
}

describe("ArgumentValidator", () => {
  it("accepts valid arguments and fills defaults into a copy, never the input", () => {
    const v = validator(withTarget);
    const args = { build_id: "b-42", notify: {} };
    const r = v.validate("publish_preview", args);
    expect(r).toEqual({
      ok: true,
      effective: { build_id: "b-42", target: "preview", notify: { channel: "#deploys" } },
    });
    expect(args).toEqual({ build_id: "b-42", notify: {} });
    if (r.ok) {
      expect(r.effective).not.toBe(args);
      expect(r.effective.notify).not.toBe(args.notify);
    }
  });

  it("makes no copy when the schema declares no default: the effective arguments are the client's", () => {
    const v = validator(modern);
    const args = { pair: ["a", 1] };
    const r = v.validate("modern_tool", args);
    expect(r.ok && r.effective).toBe(args);
    expect(args).toEqual({ pair: ["a", 1] });
  });

  it("names the field in plain sentences", () => {
    const v = validator(withTarget);
    const r = v.validate("publish_preview", {
      target: "staging",
      destination_url: "https://x",
      notify: { when: "soon" },
    });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.errors).toContain('Missing required field "build_id".');
    expect(r.errors).toContain('Field "target" must be one of "preview", "production".');
    expect(r.errors).toContain('Field "destination_url" is not accepted by this tool.');
    expect(r.errors).toContain('Field "notify.when" must match format "date-time".');
  });

  it("a required field with a default is still required of the client", () => {
    const t = {
      name: "t",
      inputSchema: {
        type: "object",
        properties: { mode: { type: "string", default: "safe" } },
        required: ["mode"],
      },
    } as Tool;
    const r = validator(t).validate("t", {});
    expect(r).toEqual({ ok: false, errors: ['Missing required field "mode".'] });
  });

  it("arguments made invalid by the schema's own defaults are refused, naming the field", () => {
    const t = {
      name: "t",
      inputSchema: {
        type: "object",
        properties: {
          // a default outside its own enum, and one that makes `confirm` required (dependentRequired)
          mode: { type: "string", enum: ["safe", "dry"], default: "everything" },
          target: { type: "string", default: "production" },
          confirm: { type: "boolean" },
        },
        dependentRequired: { target: ["confirm"] },
      },
    } as Tool;
    const v = validator(t);
    const r = v.validate("t", {});
    expect(r.ok).toBe(false);
    if (r.ok) return;
    const after = "(once the schema's defaults were filled in for the fields the call left out)";
    expect(r.errors).toContain(`Field "mode" must be one of "safe", "dry". ${after}`);
    expect(r.errors).toContain(
      `The arguments must have property confirm when property target is present. ${after}`,
    );
    // given valid values the defaults fill nothing wrong
    expect(v.validate("t", { mode: "dry", target: "preview", confirm: true }).ok).toBe(true);
  });

  it("2020-12 by default: prefixItems and $defs", () => {
    const v = validator(modern);
    expect(v.validate("modern_tool", { pair: ["a", 1] }).ok).toBe(true);
    expect(v.validate("modern_tool", { pair: ["a", 1, 2] }).ok).toBe(false);
    const r = v.validate("modern_tool", { pair: ["a", "b"], extra: 0 });
    expect(r).toEqual({
      ok: false,
      errors: ['Field "pair[1]" must be of type integer.', 'Field "extra" must be >= 1.'],
    });
    // without $schema the default dialect is 2020-12 too: prefixItems is understood
    const bare = {
      name: "bare",
      inputSchema: { type: "array", prefixItems: [{ type: "string" }], items: false },
    } as Tool;
    const b = validator(bare);
    expect(b.validate("bare", ["x", "y"]).ok).toBe(false);
  });

  it("draft-07 when $schema says so: array items, defaults", () => {
    const v = validator(draft07);
    expect(v.validate("legacy_tool", { pair: ["a", 1] })).toEqual({
      ok: true,
      effective: { pair: ["a", 1], level: 3 },
    });
    expect(v.validate("legacy_tool", { pair: ["a", "b"] }).ok).toBe(false);
    expect(v.validate("legacy_tool", { pair: ["a", 1, 2] }).ok).toBe(false);
    expect(v.validate("legacy_tool", { pair: ["a", 1], level: 10 })).toEqual({
      ok: false,
      errors: ['Field "level" must be < 10.'],
    });
  });

  it("an invalid or unsupported schema denies the call instead of throwing", () => {
    const broken = {
      name: "broken",
      inputSchema: { type: "object", properties: { a: { type: "no-such-type" } } },
    } as Tool;
    const badRef = {
      name: "bad_ref",
      inputSchema: { type: "object", properties: { a: { $ref: "#/$defs/missing" } } },
    } as Tool;
    const dialect = {
      name: "old",
      inputSchema: { $schema: "http://json-schema.org/draft-04/schema#", type: "object" },
    } as Tool;
    const none = { name: "none" } as Tool;
    const junk = { name: "junk", inputSchema: "object" } as Tool;
    const v = validator(broken, badRef, dialect, none, junk);
    for (const [name, phrase] of [
      ["broken", "has an invalid input schema"],
      ["bad_ref", "has an invalid input schema"],
      ["old", "declares an unsupported schema dialect"],
      ["none", "has no valid input schema"],
      ["junk", "has no valid input schema"],
    ] as const) {
      const r = v.validate(name, {});
      expect(r.ok).toBe(false);
      if (!r.ok) {
        expect(r.errors).toHaveLength(1);
        expect(r.errors[0]).toContain(`Tool "${name}" ${phrase}`);
      }
    }
  });

  it("refuses a tool that is not in the catalog, and non-object arguments", () => {
    const v = validator(readIssue);
    expect(v.validate("delete_environment", {})).toEqual({
      ok: false,
      errors: ['Tool "delete_environment" is not in the current catalog.'],
    });
    expect(v.validate("read_issue", [1])).toEqual({
      ok: false,
      errors: ["The arguments must be a JSON object."],
    });
    expect(v.validate("read_issue", null)).toEqual({
      ok: false,
      errors: ["The arguments must be a JSON object."],
    });
    // absent arguments are an empty object
    expect(v.validate("read_issue", undefined)).toEqual({
      ok: false,
      errors: ['Missing required field "issue_id".'],
    });
  });

  it("compiles each tool's schema once per validator; tools sharing an $id do not collide", () => {
    const a = {
      name: "a",
      inputSchema: {
        $id: "https://example.com/schemas/same.json",
        type: "object",
        properties: { x: { type: "string" } },
      },
    } as Tool;
    const b = {
      name: "b",
      inputSchema: {
        $id: "https://example.com/schemas/same.json",
        type: "object",
        properties: { x: { type: "integer" } },
      },
    } as Tool;
    const v = validator(a, b, deployService);
    expect(v.validate("a", { x: "s" }).ok).toBe(true);
    expect(v.validate("b", { x: 1 }).ok).toBe(true);
    expect(v.validate("b", { x: "s" }).ok).toBe(false);
    const compiled = (v as unknown as { compiled: Map<string, unknown> }).compiled;
    const first = compiled.get("a");
    v.validate("a", { x: "t" });
    expect(compiled.get("a")).toBe(first);
    expect(compiled.has("deploy_service")).toBe(false);
  });

  it("caps the number of sentences", () => {
    const props: Record<string, unknown> = {};
    for (let i = 0; i < 40; i++) props[`f${i}`] = { type: "string" };
    const t = {
      name: "many",
      inputSchema: { type: "object", properties: props, required: Object.keys(props) },
    } as Tool;
    const r = validator(t).validate("many", {});
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.errors).toHaveLength(21);
      expect(r.errors[20]).toBe("20 more errors were not listed.");
    }
  });

  it("pattern and patternProperties answer as before on strings that make them backtrack", () => {
    const evil = {
      name: "lookup",
      inputSchema: {
        type: "object",
        properties: { q: { type: "string", pattern: "^(a+)+$" } },
        patternProperties: { "^(x+x+)+y$": { type: "integer" } },
      },
    } as Tool;
    const v = validator(evil);
    // Short enough for JavaScript's RegExp to finish too (2^20 steps): the answers are the
    // same. test/gateway/schema-bounds.test.ts sends one that it would not finish.
    const r = v.validate("lookup", { q: `${"a".repeat(20)}!`, [`${"x".repeat(20)}y`]: "s" });
    expect(r).toEqual({
      ok: false,
      errors: [
        'Field "q" must match pattern "^(a+)+$".',
        `Field "${"x".repeat(20)}y" must be of type integer.`,
      ],
    });
    expect(v.validate("lookup", { q: "a".repeat(20) }).ok).toBe(true);
  });

  it("Unicode property escapes are checked exactly as JavaScript's RegExp would", () => {
    const named = {
      name: "named",
      inputSchema: {
        type: "object",
        properties: {
          name: { type: "string", pattern: "^[\\p{L}\\p{N}_ -]+$" },
          tag: { type: "string", pattern: "^\\P{Script=Greek}+$" },
        },
      },
    } as Tool;
    const v = validator(named);
    for (const name of ["Zoë 42", "日本語_テスト", "Ωμέγα", "٣"])
      expect(v.validate("named", { name }).ok).toBe(true);
    for (const name of ["a!", "😀", "a\ud800"]) expect(v.validate("named", { name }).ok).toBe(false);
    expect(v.validate("named", { tag: "abc 😀" }).ok).toBe(true);
    expect(v.validate("named", { tag: "abγ" }).ok).toBe(false);
  });

  it("a pattern the linear engine cannot take refuses the tool, naming it, the place and why", () => {
    const look = {
      name: "look",
      inputSchema: { type: "object", properties: { name: { type: "string", pattern: "^(?!admin)\\w+$" } } },
    } as Tool;
    const back = {
      name: "back",
      inputSchema: {
        type: "object",
        // a `pattern` inside a default is data, not where the refused pattern sits
        default: { pattern: "(a)\\1" },
        properties: { m: { type: "object", patternProperties: { "(a)\\1": { type: "string" } } } },
      },
    } as Tool;
    const scripts = {
      name: "scripts",
      inputSchema: {
        type: "object",
        // a field for each of 30 scripts: more properties than one tool may name
        properties: Object.fromEntries(
          [
            "Latn",
            "Grek",
            "Cyrl",
            "Armn",
            "Hebr",
            "Arab",
            "Syrc",
            "Thaa",
            "Deva",
            "Beng",
            "Guru",
            "Gujr",
            "Orya",
            "Taml",
            "Telu",
            "Knda",
            "Mlym",
            "Sinh",
            "Thai",
            "Laoo",
            "Tibt",
            "Mymr",
            "Geor",
            "Hang",
            "Ethi",
            "Cher",
            "Ogam",
            "Runr",
            "Khmr",
            "Mong",
          ].map((sc) => [sc, { type: "string", pattern: `^\\p{sc=${sc}}+$` }]),
        ),
      },
    } as Tool;
    const v = validator(look, back, scripts, readIssue);
    for (const [tool, where, what] of [
      ["look", "/properties/name/pattern", "a lookahead"],
      ["back", "/properties/m/patternProperties/(a)\\1", "a backreference"],
    ] as const) {
      const r = v.validate(tool, {});
      expect(r.ok).toBe(false);
      if (r.ok) continue;
      expect(r.errors).toHaveLength(1);
      expect(r.errors[0]).toContain(`Tool "${tool}" is refused`);
      expect(r.errors[0]).toContain(` at ${JSON.stringify(where)} `);
      expect(r.errors[0]).toContain(`uses ${what}`);
      expect(r.errors[0]).toContain("portcullis cannot check in bounded time");
    }
    const many = v.validate("scripts", {});
    expect(many.ok).toBe(false);
    if (!many.ok) {
      expect(many.errors[0]).toContain('Tool "scripts" is refused');
      expect(many.errors[0]).toContain(
        "uses more Unicode properties in one schema than can be checked in bounded time",
      );
    }
    // the catalog's other tools are checked as before
    expect(v.validate("read_issue", { issue_id: "PROJ-12" }).ok).toBe(true);
  });

  it("one pattern used on many fields of a tool is charged once, not once a field", () => {
    // \p{L} and \p{N} spell out to ~15 KiB of ranges: charged on each of 40 fields, the tool
    // would pass its budget many times over, though it compiles one pattern
    const pattern = "^[\\p{L}\\p{N} _-]+$";
    const form = {
      name: "form",
      inputSchema: {
        type: "object",
        properties: Object.fromEntries(
          Array.from({ length: 40 }, (_, i) => [`field${i}`, { type: "string", pattern }]),
        ),
      },
    } as Tool;
    const v = validator(form);
    expect(v.validate("form", { field0: "Zoë 42", field39: "Ἀθῆναι" }).ok).toBe(true);
    expect(v.validate("form", { field7: "a;b" }).ok).toBe(false);
  });

  it("the url format checks URLs of bounded length, and a bounded amount per call", () => {
    const t = {
      name: "fetch",
      inputSchema: {
        type: "object",
        properties: {
          url: { type: "string", format: "url" },
          more: { type: "array", items: { format: "url" } },
        },
      },
    } as Tool;
    const v = validator(t);
    expect(v.validate("fetch", { url: "https://example.com/a?b=c" }).ok).toBe(true);
    expect(v.validate("fetch", { url: "https://example.com/not a url" }).ok).toBe(false);
    const long = `https://example.com/${"a".repeat(MAX_URL_CHARS)}`;
    expect(v.validate("fetch", { url: long }).ok).toBe(false);
    // a slow shape for the regex (cubic), at the longest length checked
    const slow = `http://a.aa${"::".repeat(MAX_URL_CHARS)}\n`.slice(0, MAX_URL_CHARS);
    expect(v.validate("fetch", { url: slow }).ok).toBe(false);
    const fit = `https://example.com/${"a".repeat(MAX_URL_CHARS - 40)}`;
    const many = Array.from({ length: Math.ceil(URL_CHARS_PER_CALL / fit.length) + 1 }, () => fit);
    const r = v.validate("fetch", { more: many });
    expect(r.ok).toBe(false);
    // the budget is per call: the next call starts afresh
    expect(v.validate("fetch", { more: many.slice(0, 2) }).ok).toBe(true);
  });

  it("the values of enum, const, default and examples are data, not schema nodes; a property named enum is a schema", () => {
    const values = Array.from({ length: 6000 }, (_, i) => `v${i}`);
    const bigEnum = {
      name: "bigEnum",
      inputSchema: {
        type: "object",
        properties: {
          pick: { type: "string", enum: values, default: "v0", examples: values.slice(0, 3000) },
        },
      },
    } as Tool;
    // the same count of nodes hidden under a property that is only *named* enum still counts
    const many = Object.fromEntries(
      Array.from({ length: MAX_SCHEMA_NODES }, (_, i) => [`p${i}`, { type: "string" }]),
    );
    const namedEnum = {
      name: "namedEnum",
      inputSchema: { type: "object", properties: { enum: { type: "object", properties: many } } },
    } as Tool;
    const v = validator(bigEnum, namedEnum, readIssue);
    expect(v.validate("bigEnum", { pick: "v5999" }).ok).toBe(true);
    expect(v.validate("bigEnum", { pick: "v6000" }).ok).toBe(false);
    expect(v.validate("namedEnum", {})).toEqual({
      ok: false,
      errors: [
        'Tool "namedEnum" has an input schema of more than 2,000 schema nodes, over what portcullis compiles (2,000 nodes, 1 MiB), so its calls are refused.',
      ],
    });
  });

  it("a schema over the size limits refuses its tool, naming it and the limits; smaller ones compile", () => {
    const withProps = (name: string, n: number) =>
      ({
        name,
        inputSchema: {
          type: "object",
          properties: Object.fromEntries(Array.from({ length: n }, (_, i) => [`p${i}`, { type: "string" }])),
        },
      }) as Tool;
    // nodes: the root, its `type` and `properties`, and two per property
    const fits = withProps("fits", (MAX_SCHEMA_NODES - 3) / 2);
    const over = withProps("over", (MAX_SCHEMA_NODES - 3) / 2 + 1);
    const wordy = {
      name: "wordy",
      inputSchema: { type: "object", description: "x".repeat(MAX_SCHEMA_BYTES) },
    } as Tool;
    const v = validator(fits, over, wordy, readIssue);
    expect(v.validate("fits", { p0: "a" }).ok).toBe(true);
    expect(v.validate("fits", { p0: 1 }).ok).toBe(false);
    expect(v.validate("over", { p0: "a" })).toEqual({
      ok: false,
      errors: [
        'Tool "over" has an input schema of more than 2,000 schema nodes, over what portcullis compiles (2,000 nodes, 1 MiB), so its calls are refused.',
      ],
    });
    expect(v.validate("wordy", {})).toEqual({
      ok: false,
      errors: [
        'Tool "wordy" has an input schema of more than 1 MiB, over what portcullis compiles (2,000 nodes, 1 MiB), so its calls are refused.',
      ],
    });
    expect(v.validate("read_issue", { issue_id: "PROJ-12" }).ok).toBe(true);
  });
});
