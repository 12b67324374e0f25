// Rename candidates of a catalog renamed whole, its tools sharing one input schema: past
// MAX_NEAR_PAIRS (removed × added) each removed tool weighs a bounded number of added ones of its
// schema (src/catalog/diff.ts, findRenames), starting at its own rank, so each is still paired
// with its counterpart, and the diff stays linear (test/gateway/hostile-catalog-renames.test.ts).
import { describe, expect, it } from "vitest";
import { diffCatalogs, snapshotOf } from "../../src/catalog/index.js";

describe("a catalog of 10,000 tools of one schema, renamed whole", () => {
  it("pairs every removed tool with its counterpart; every added one still expands", () => {
    const n = 10_000;
    const tools = (prefix: string) =>
      Array.from({ length: n }, (_, i) => ({ name: `${prefix}${i}`, inputSchema: { type: "object" } }));
    const diff = diffCatalogs(snapshotOf(tools("old_"), 1), snapshotOf(tools("new_"), 1));
    expect(diff.renameCandidates).toHaveLength(n);
    for (const c of diff.renameCandidates) expect(c.to).toBe(c.from.replace("old_", "new_"));
    expect(diff.entries.filter((e) => e.kind === "added" && e.classification === "expands")).toHaveLength(n);
    expect(diff.expands).toBe(true);
  });
});
