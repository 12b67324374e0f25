// A server's tools/list may name one tool more than once. indexTools kept the first entry and
// dropped the later ones unseen: they were not fingerprinted, so a change to a later duplicate
// changed neither the catalog fingerprint nor the revision, and the human reviewed (and the agent
// saw) the first definition while the server might act on another. These properties hold for any
// list: a name is served only when every entry of it has one fingerprint; every entry counts in
// the catalog fingerprint.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { snapshotOf, type Tool, toolFingerprint } from "../../src/catalog/index.js";
import { indexTools } from "../../src/catalog/snapshot.js";

/** Few names and few definitions, so copies and clashes are common. */
const tool: fc.Arbitrary<Tool> = fc.record({
  name: fc.constantFrom("deploy", "status", "__proto__", ""),
  description: fc.constantFrom("Deploy to preview.", "Deploy anywhere; also deletes.", "Status."),
  inputSchema: fc.constantFrom(
    { type: "object" },
    { type: "object", properties: { target: { type: "string", enum: ["preview"] } } },
    { type: "object", properties: { target: { type: "string" }, wipe: { type: "boolean" } } },
  ),
});

/** Entries the gateway drops as not tools, mixed in. */
const entry: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 8, arbitrary: tool },
  { weight: 1, arbitrary: fc.constantFrom(null, 7, "deploy", { name: 3 }, { title: "no name" }) },
);

const list = fc.array(entry, { maxLength: 12 });

function isTool(v: unknown): v is Tool {
  return typeof v === "object" && v !== null && !Array.isArray(v) && typeof (v as Tool).name === "string";
}

describe("indexTools on any list", () => {
  it("serves a name only when all its entries have one fingerprint, and withholds every other", () => {
    fc.assert(
      fc.property(list, (items) => {
        const ix = indexTools(items);
        const fingerprintsOf = new Map<string, Set<string>>();
        for (const t of items.filter(isTool)) {
          const set = fingerprintsOf.get(t.name) ?? new Set<string>();
          set.add(toolFingerprint(t));
          fingerprintsOf.set(t.name, set);
        }
        // each name served once, with the one fingerprint its entries share
        expect(new Set(ix.tools.map((t) => t.name)).size).toBe(ix.tools.length);
        for (const t of ix.tools) {
          expect([...(fingerprintsOf.get(t.name) ?? [])]).toEqual([ix.byName.get(t.name)?.fingerprint]);
        }
        // every listed name is either served or ambiguous, never both
        for (const [name, fps] of fingerprintsOf) {
          const served = ix.byName.has(name);
          expect(served).toBe(fps.size === 1);
          expect(ix.ambiguous.has(name)).toBe(fps.size > 1);
          if (!served)
            expect(
              ix.ambiguous
                .get(name)
                ?.map((d) => d.fingerprint)
                .sort(),
            ).toEqual([...fps].sort());
        }
        expect(ix.byName.size + ix.ambiguous.size).toBe(fingerprintsOf.size);
      }),
    );
  });

  it("the catalog fingerprint changes when any entry changes", () => {
    fc.assert(
      fc.property(list, fc.nat(), tool, (items, at, replacement) => {
        const tools = items.filter(isTool);
        fc.pre(tools.length > 0);
        const i = at % tools.length;
        fc.pre(toolFingerprint(tools[i] as Tool) !== toolFingerprint(replacement));
        const changed = tools.map((t, j) => (j === i ? replacement : t));
        expect(snapshotOf(changed, 1).fingerprint).not.toBe(snapshotOf(tools, 1).fingerprint);
      }),
    );
  });

  it("the order of the entries does not change the fingerprint", () => {
    fc.assert(
      fc.property(list, (items) => {
        const tools = items.filter(isTool);
        expect(snapshotOf([...tools].reverse(), 1).fingerprint).toBe(snapshotOf(tools, 1).fingerprint);
      }),
    );
  });
});
