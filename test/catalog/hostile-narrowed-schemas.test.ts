// A catalog change that narrows the input schema of every one of 10,000 tools (a maxLength added
// to each of 30 properties: 12 MB of catalog, within every limit of a fetch). A narrowing the
// proof accepts is checked once more against the gateway's own validator (was the old schema
// refused whole, and the new one compiles?), a compile of 2–3 ms each: 10,000 of them held the
// event loop 30–50 s per diff, and a real gateway, re-listing after the server's list_changed,
// answered no ping for 88 s (diffCatalogs runs for the catalog_revised record, and again for the
// run's grants). One diff asks that question of a bounded number of tools (the first ones by
// name); a narrowing past them is not provably narrower, so it expands: friction, never authority.
import { describe, expect, it } from "vitest";
import { diffCatalogs, diffTool, snapshotOf } from "../../src/catalog/index.js";

const schema = (narrow: boolean) => ({
  type: "object",
  properties: Object.fromEntries(
    Array.from({ length: 30 }, (_, k) => [
      `p${k}`,
      narrow ? { type: "string", maxLength: 10 } : { type: "string" },
    ]),
  ),
});
const tools = (n: number, narrow: boolean) =>
  Array.from({ length: n }, (_, i) => ({
    name: `t${String(i).padStart(5, "0")}`,
    inputSchema: schema(narrow),
  }));

describe("a catalog change that narrows 2,000 input schemas", () => {
  it("checks the first ones against the validator (narrows); the rest expand, saying they were not checked", () => {
    // 2,000 (10,000 before, the size of the change that held a gateway 88 s): ten times the
    // diff's bound on checks (MAX_REFUSAL_CHECKS, 200, src/catalog/diff.ts), and twice the most
    // narrows allowed below, so an unbounded check still fails it. Nothing here is about time.
    const n = 2_000;
    const diff = diffCatalogs(snapshotOf(tools(n, false), 1), snapshotOf(tools(n, true), 1));
    expect(diff.entries).toHaveLength(n);
    const narrows = diff.entries.filter((e) => e.classification === "narrows");
    const unchecked = diff.entries.filter((e) =>
      e.changes.some((c) => c.classification === "expands" && /not checked/.test(c.change)),
    );
    // a bounded few are checked and narrow; every other one expands, and says why
    expect(narrows.length).toBeGreaterThan(0);
    expect(narrows.length).toBeLessThanOrEqual(1000);
    expect(narrows[0]?.tool).toBe("t00000");
    expect(narrows.length + unchecked.length).toBe(n);
    expect(diff.expands).toBe(true);
  }, 300_000);

  it("a diff of one tool, or of a few, is checked whole as before", () => {
    const few = diffCatalogs(snapshotOf(tools(50, false), 1), snapshotOf(tools(50, true), 1));
    expect(few.entries.every((e) => e.classification === "narrows")).toBe(true);
    const one = diffTool(tools(1, false)[0] as never, tools(1, true)[0] as never);
    expect(one.length).toBeGreaterThan(0);
    expect(one.every((c) => c.classification === "narrows")).toBe(true);
  });
});
