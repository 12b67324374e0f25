// A server's tools/list may name one tool more than once. indexTools kept the first entry and
// dropped the later ones unseen: they were not fingerprinted, so a change to a later duplicate
// changed neither the catalog fingerprint nor the revision, and the human reviewed (and the agent
// saw) the first definition while the server might act on another. These properties hold for any
// list: a name is served only when every entry of it has one fingerprint; every entry counts in
// the catalog fingerprint. An entry that cannot be fingerprinted (a number such as 1e400 in it,
// which JSON.parse reads as Infinity) was dropped without a trace, so beside it the name's other
// definition stayed served while the server might act on the dropped one: a served name has no
// other entry at all, fingerprintable or not, and such an entry appearing or going is a new
// fingerprint, and a change that expands.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  diffCatalogs,
  snapshotOf,
  storedSnapshot,
  type Tool,
  toolFingerprint,
} from "../../src/catalog/index.js";
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

/**
 * A tool of one of those names that cannot be fingerprinted: a number past the double range, as
 * JSON.parse reads `1e400` or `-1e400` off the wire (RFC 8785 has no form for it).
 */
const unfingerprintable: fc.Arbitrary<Tool> = fc.record({
  name: fc.constantFrom("deploy", "status", "__proto__", ""),
  description: fc.constantFrom("Deploy to preview.", "Deploy anywhere; also deletes."),
  inputSchema: fc.constantFrom(
    JSON.parse('{"type":"object","properties":{"n":{"type":"number","maximum":1e400}}}'),
    JSON.parse('{"type":"object","properties":{"n":{"type":"number","minimum":-1e400}}}'),
  ),
});

/** Entries the gateway drops as not tools, and tools it cannot fingerprint, mixed in. */
const entry: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 8, arbitrary: tool },
  { weight: 2, arbitrary: unfingerprintable },
  { weight: 1, arbitrary: fc.constantFrom(null, 7, "deploy", { name: 3 }, { title: "no name" }) },
);

function fingerprintable(t: Tool): boolean {
  try {
    toolFingerprint(t);
    return true;
  } catch {
    return false;
  }
}

/** Per name: the fingerprints of its entries that can be fingerprinted, and how many cannot. */
function entriesByName(items: unknown[]): Map<string, { fps: Set<string>; dropped: number }> {
  const out = new Map<string, { fps: Set<string>; dropped: number }>();
  for (const t of items.filter(isTool)) {
    const e = out.get(t.name) ?? { fps: new Set<string>(), dropped: 0 };
    if (fingerprintable(t)) e.fps.add(toolFingerprint(t));
    else e.dropped++;
    out.set(t.name, e);
  }
  return out;
}

const list = fc.array(entry, { maxLength: 12 });

function isTool(v: unknown): v is Tool {
  return typeof v === "object" && v !== null && !Array.isArray(v) && typeof (v as Tool).name === "string";
}

describe("indexTools on any list", () => {
  it("serves a name only when all its entries have one fingerprint, and withholds every other", () => {
    fc.assert(
      fc.property(list, (items) => {
        const ix = indexTools(items);
        const byName = entriesByName(items);
        // each name served once, with the one fingerprint its entries share, and no other entry
        // of that name, fingerprintable or not
        expect(new Set(ix.tools.map((t) => t.name)).size).toBe(ix.tools.length);
        for (const t of ix.tools) {
          expect([...(byName.get(t.name)?.fps ?? [])]).toEqual([ix.byName.get(t.name)?.fingerprint]);
          expect(byName.get(t.name)?.dropped).toBe(0);
        }
        // every name with an entry kept is either served or ambiguous, never both; a name whose
        // every entry was dropped is neither
        let kept = 0;
        for (const [name, { fps, dropped }] of byName) {
          const served = ix.byName.has(name);
          expect(served).toBe(fps.size === 1 && dropped === 0);
          expect(ix.ambiguous.has(name)).toBe(fps.size > 1 || (fps.size > 0 && dropped > 0));
          expect(ix.unfingerprintable.get(name)).toBe(fps.size > 0 && dropped > 0 ? dropped : undefined);
          if (fps.size > 0) kept++;
          if (!served && fps.size > 0)
            expect(
              ix.ambiguous
                .get(name)
                ?.map((d) => d.fingerprint)
                .sort(),
            ).toEqual([...fps].sort());
        }
        expect(ix.byName.size + ix.ambiguous.size).toBe(kept);
      }),
    );
  });

  it("an entry that cannot be fingerprinted, appearing beside a name kept or going, changes the fingerprint, and a name served then withheld (or the reverse) is a change that expands", () => {
    fc.assert(
      fc.property(list, unfingerprintable, fc.nat(), (items, bad, at) => {
        const tools = items.filter(isTool);
        const before = snapshotOf(tools, 1);
        fc.pre(before.byName.has(bad.name) || before.ambiguous.has(bad.name));
        const withBad = [...tools];
        withBad.splice(at % (tools.length + 1), 0, bad);
        const after = snapshotOf(withBad, 1);
        expect(after.fingerprint).not.toBe(before.fingerprint);
        // one more of them is another fingerprint too
        expect(snapshotOf([...withBad, bad], 1).fingerprint).not.toBe(after.fingerprint);
        expect(after.byName.has(bad.name)).toBe(false);
        expect(after.ambiguous.has(bad.name)).toBe(true);
        for (const [from, to] of [
          [before, after],
          [after, before],
        ] as const) {
          const diff = diffCatalogs(from, to);
          if (!before.byName.has(bad.name)) continue;
          // served on one side, withheld on the other: deny first, it expands either way
          expect(diff.entries.find((e) => e.tool === bad.name)?.classification).toBe("expands");
          expect(diff.expands).toBe(true);
        }
      }),
    );
  });

  it("a stored revision (its entries kept, its coverage) has the fingerprint, the served tools and the ambiguous names it was recorded with", () => {
    fc.assert(
      fc.property(list, (items) => {
        const snap = snapshotOf(items.filter(isTool), 1);
        // as the store keeps them: JSON text
        const stored = storedSnapshot({
          tools: JSON.parse(JSON.stringify(snap.listed)),
          coverage: JSON.parse(JSON.stringify(snap.coverage)),
        });
        expect(stored.fingerprint).toBe(snap.fingerprint);
        expect(stored.tools).toEqual(snap.tools);
        expect([...stored.ambiguous.keys()].sort()).toEqual([...snap.ambiguous.keys()].sort());
        expect(diffCatalogs(stored, snap).entries).toEqual([]);
        // the coverage names them only when there are some
        expect(Object.hasOwn(snap.coverage, "unfingerprintable")).toBe(
          (snap.unfingerprintable?.size ?? 0) > 0,
        );
      }),
    );
  });

  it("the catalog fingerprint changes when any entry kept changes", () => {
    fc.assert(
      fc.property(list, fc.nat(), tool, (items, at, replacement) => {
        const tools = items.filter(isTool);
        const kept = tools.flatMap((t, j) => (fingerprintable(t) ? [j] : []));
        fc.pre(kept.length > 0);
        const i = kept[at % kept.length] as number;
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
