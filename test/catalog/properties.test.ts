import canonicalize from "canonicalize";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  type Classification,
  canonicalJson,
  diffCatalogs,
  renderDiff,
  snapshotOf,
  type Tool,
  toolFingerprint,
} from "../../src/catalog/index.js";
import { canonicalString, sameJson } from "../../src/util/canonical.js";

const RANK: Record<Classification, number> = { cosmetic: 0, narrows: 1, expands: 2 };

/** JSON values with ASCII, full Unicode, or raw UTF-16 (lone surrogates included) strings. */
const json = fc.oneof(
  fc.jsonValue({ maxDepth: 4 }),
  fc.jsonValue({ maxDepth: 4, stringUnit: "grapheme" }),
  fc.jsonValue({ maxDepth: 3, stringUnit: "binary" }),
);

/** Keys that trip naive object handling, mixed into generated objects. */
const nastyKey = fc.constantFrom(
  "__proto__",
  "constructor",
  "toString",
  "10",
  "9",
  "",
  "a.b",
  "type",
  "properties",
);

const key = fc.oneof(fc.string({ maxLength: 8 }), nastyKey);

/** JSON, or an object whose keys shadow Object.prototype (e.g. {"toString": null}). */
const weird = fc.oneof(json, fc.dictionary(nastyKey, json, { maxKeys: 3 }));

/** A schema-ish JSON value: mostly objects that use JSON Schema keywords, sometimes junk. */
const schema: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  schema: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    json,
    fc.boolean(),
    fc
      .record(
        {
          type: fc.oneof(
            fc.constantFrom("object", "string", "integer", "number", "boolean", "array", "null"),
            fc.array(fc.constantFrom("string", "integer", "number", "null")),
            weird,
          ),
          properties: fc.dictionary(key, tie("schema"), { maxKeys: 4 }),
          required: fc.oneof(fc.array(key, { maxLength: 4 }), weird),
          enum: fc.oneof(fc.array(weird, { maxLength: 4 }), weird),
          default: weird,
          minimum: fc.oneof(fc.integer(), weird),
          maxLength: fc.nat(),
          pattern: fc.string(),
          additionalProperties: fc.oneof(fc.boolean(), tie("schema")),
          items: tie("schema"),
          anyOf: fc.array(tie("schema"), { maxLength: 3 }),
          $ref: fc.string(),
          description: fc.string(),
        },
        { requiredKeys: [] },
      )
      .chain((o) => fc.dictionary(key, weird, { maxKeys: 2 }).map((extra) => ({ ...extra, ...o }))),
  ),
})).schema;

const toolName = fc.constantFrom(
  "read_issue",
  "post_comment",
  "query_logs",
  "search_logs",
  "deploy",
  "__proto__",
);

const tool: fc.Arbitrary<Tool> = fc
  .record(
    {
      name: fc.oneof(toolName, fc.string()),
      title: fc.oneof(fc.string(), weird),
      description: fc.oneof(fc.string(), weird),
      inputSchema: schema,
      outputSchema: schema,
      annotations: fc.oneof(
        fc.record(
          {
            readOnlyHint: fc.oneof(fc.boolean(), weird),
            destructiveHint: fc.oneof(fc.boolean(), weird),
            openWorldHint: fc.boolean(),
            title: fc.string(),
          },
          { requiredKeys: [] },
        ),
        json,
      ),
      _meta: weird,
    },
    { requiredKeys: ["name"] },
  )
  .chain((t) => fc.dictionary(key, weird, { maxKeys: 2 }).map((extra) => ({ ...extra, ...t }) as Tool));

/** Deterministic shuffle of every object's keys, recursively. */
function shuffleKeys(v: unknown, rnd: () => number): unknown {
  if (Array.isArray(v)) return v.map((x) => shuffleKeys(x, rnd));
  if (v === null || typeof v !== "object") return v;
  const entries = Object.keys(v).map(
    (k) => [k, shuffleKeys((v as Record<string, unknown>)[k], rnd)] as const,
  );
  for (let i = entries.length - 1; i > 0; i--) {
    const j = Math.floor(rnd() * (i + 1));
    [entries[i], entries[j]] = [
      entries[j] as (typeof entries)[number],
      entries[i] as (typeof entries)[number],
    ];
  }
  return Object.fromEntries(entries);
}

/** A deep copy of `v` with one value, somewhere in it, replaced by `value` (or wrapped, if equal). */
function changeOneValue(v: unknown, rnd: () => number, value: unknown): unknown {
  const copy = JSON.parse(JSON.stringify(v)) as unknown;
  let parent = copy as Record<string, unknown>;
  let keys = Object.keys(parent);
  let key = keys[Math.floor(rnd() * keys.length)] as string;
  for (;;) {
    const child = parent[key];
    if (child === null || typeof child !== "object" || rnd() < 0.3) break;
    const childKeys = Object.keys(child);
    if (childKeys.length === 0) break;
    parent = child as Record<string, unknown>;
    keys = childKeys;
    key = keys[Math.floor(rnd() * keys.length)] as string;
  }
  const old = parent[key];
  const next = JSON.parse(JSON.stringify(value) ?? "null") as unknown;
  Object.defineProperty(parent, key, {
    value: sameJson(old, next) ? [next] : next,
    enumerable: true,
    writable: true,
    configurable: true,
  });
  return copy;
}

function prng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 4294967296;
  };
}

const indent = fc.oneof(
  fc.integer({ min: 0, max: 10 }),
  fc.string({ unit: fc.constantFrom(" ", "\t", "\n", "\r"), maxLength: 10 }),
);

describe("properties", () => {
  it("the fast canonical writer produces exactly what canonicalize produces", () => {
    fc.assert(
      fc.property(fc.oneof(fc.jsonValue(), fc.jsonValue({ stringUnit: "grapheme" })), (v) => {
        expect(canonicalString(v)).toBe(canonicalize(v));
        expect(canonicalJson(v)).toBe(canonicalize(v));
      }),
      { numRuns: 300 },
    );
    fc.assert(
      fc.property(fc.jsonValue({ stringUnit: "binary" }), (v) => {
        expect(canonicalJson(v)).toBe(canonicalString(v));
      }),
    );
  });

  it("structural equality agrees with canonical equality", () => {
    fc.assert(
      fc.property(
        weird,
        weird,
        fc.integer(),
        fc.constantFrom("shuffled", "extended", "other"),
        (a, b, seed, how) => {
          let other: unknown = b;
          if (how === "shuffled") other = shuffleKeys(a, prng(seed));
          if (how === "extended") {
            other =
              a !== null && typeof a === "object" && !Array.isArray(a)
                ? Object.fromEntries([...Object.entries(a), [`k${seed}`, b]])
                : [a];
          }
          expect(sameJson(a, other)).toBe(canonicalString(a) === canonicalString(other));
          expect(sameJson(other, a)).toBe(sameJson(a, other));
        },
      ),
      { numRuns: 500 },
    );
  });

  it("fingerprints do not depend on key order or JSON whitespace", () => {
    fc.assert(
      fc.property(tool, fc.integer(), indent, (t, seed, space) => {
        const received = JSON.parse(JSON.stringify(t)) as Tool;
        const text = JSON.stringify(shuffleKeys(received, prng(seed)), null, space);
        const again = JSON.parse(text) as Tool;
        expect(toolFingerprint(again)).toBe(toolFingerprint(received));
        const snapA = snapshotOf([received], 1);
        const snapB = snapshotOf([again], 1);
        expect(snapB.fingerprint).toBe(snapA.fingerprint);
      }),
      { numRuns: 200 },
    );
  });

  it("a snapshot that follows another has exactly the fingerprints it would have on its own", () => {
    // snapshotOf(…, { previous }) reuses the fingerprint of a tool equal to its predecessor: any
    // change at any depth, or a tool replaced under the same name, must be fingerprinted anew.
    fc.assert(
      fc.property(
        fc.array(tool, { maxLength: 6 }),
        fc.array(tool, { maxLength: 6 }),
        fc.array(fc.constantFrom("same", "shuffled", "changed", "replaced"), { minLength: 6, maxLength: 6 }),
        fc.integer(),
        weird,
        (tools, others, fates, seed, value) => {
          const rnd = prng(seed);
          const before = JSON.parse(JSON.stringify(tools)) as Tool[];
          const after = (JSON.parse(JSON.stringify(tools)) as Tool[]).map((t, i) => {
            const fate = fates[i];
            if (fate === "shuffled") return shuffleKeys(t, rnd) as Tool;
            if (fate === "changed") return changeOneValue(t, rnd, value) as Tool;
            if (fate === "replaced" && others[i])
              return { ...JSON.parse(JSON.stringify(others[i])), name: t.name };
            return t;
          });
          const alone = snapshotOf(after, 1);
          const following = snapshotOf(after, 1, { previous: snapshotOf(before, 1) });
          expect(following.fingerprint).toBe(alone.fingerprint);
          expect([...following.byName].map(([n, e]) => [n, e.fingerprint])).toEqual(
            [...alone.byName].map(([n, e]) => [n, e.fingerprint]),
          );
        },
      ),
      { numRuns: 300 },
    );
  });

  it("a catalog diffed with itself (shuffled and re-parsed) is empty", () => {
    fc.assert(
      fc.property(fc.array(tool, { maxLength: 6 }), fc.integer(), (tools, seed) => {
        const before = JSON.parse(JSON.stringify(tools)) as Tool[];
        const after = shuffleKeys(JSON.parse(JSON.stringify(tools)), prng(seed)) as Tool[];
        const d = diffCatalogs(before, after);
        expect(d.entries).toEqual([]);
        expect(d.renameCandidates).toEqual([]);
        expect(d.expands).toBe(false);
      }),
      { numRuns: 150 },
    );
  });

  it("an added input property is never cosmetic", () => {
    fc.assert(
      fc.property(
        fc.dictionary(key, schema, { maxKeys: 4 }),
        fc.oneof(key, fc.string({ minLength: 1 })),
        schema,
        fc.dictionary(fc.constantFrom("required", "description", "additionalProperties"), json, {
          maxKeys: 2,
        }),
        (props, name, propSchema, rest) => {
          fc.pre(!Object.hasOwn(props, name));
          const before = JSON.parse(
            JSON.stringify({ name: "t", inputSchema: { ...rest, type: "object", properties: props } }),
          );
          const after = JSON.parse(JSON.stringify(before));
          Object.defineProperty(after.inputSchema.properties, name, {
            value: JSON.parse(JSON.stringify(propSchema) ?? "null"),
            enumerable: true,
            writable: true,
            configurable: true,
          });
          const d = diffCatalogs([before], [after]);
          expect(d.entries).toHaveLength(1);
          const e = d.entries[0];
          expect(e?.classification).toBe("expands");
          const added = e?.changes.filter((c) => c.change.startsWith("property added"));
          expect(added).toHaveLength(1);
          expect(added?.[0]?.classification).toBe("expands");
        },
      ),
      { numRuns: 200 },
    );
  });

  it("diffCatalogs and renderDiff never throw on arbitrary JSON, and classifications are consistent", () => {
    const anyList = fc.oneof(fc.array(fc.oneof(tool, json), { maxLength: 6 }), json);
    fc.assert(
      fc.property(anyList, anyList, (a, b) => {
        const d = diffCatalogs(a as Tool[], b as Tool[]);
        expect(typeof renderDiff(d, { fromRevision: 1, toRevision: 2 })).toBe("string");
        for (const e of d.entries) {
          expect(e.changes.length).toBeGreaterThan(0);
          if (e.kind === "added") expect(e.classification).toBe("expands");
          if (e.kind === "removed") expect(e.classification).toBe("narrows");
          if (e.kind === "modified") {
            const max = Math.max(...e.changes.map((c) => RANK[c.classification]));
            expect(RANK[e.classification]).toBe(max);
            expect(e.fingerprintBefore).not.toBe(e.fingerprintAfter);
          }
        }
        expect(d.expands).toBe(d.entries.some((e) => e.classification === "expands"));
      }),
      { numRuns: 1000 },
    );
  });

  it("two versions of one tool: the diff is empty exactly when the fingerprints match", () => {
    fc.assert(
      fc.property(tool, tool, (a, b) => {
        const x = { ...JSON.parse(JSON.stringify(a)), name: "same" } as Tool;
        const y = { ...JSON.parse(JSON.stringify(b)), name: "same" } as Tool;
        const d = diffCatalogs([x], [y]);
        expect(d.entries.length === 0).toBe(toolFingerprint(x) === toolFingerprint(y));
      }),
      { numRuns: 200 },
    );
  });
});
