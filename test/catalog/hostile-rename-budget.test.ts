// One catalog diff asks the gateway's validator about at most 200 narrowed input schemas "the
// first narrowed ones by tool name" (docs/catalog.md); past them a narrowing expands. The diff of
// a renamed tool (a removed and an added one paired as a rename candidate) is shown for
// information only: the added tool expands whatever its diff says. Those diffs must not spend the
// budget the modified tools' classification needs: a server that renames 200 tools (each with a
// schema that only reworded a description) would otherwise make a genuine narrowing of another
// tool, first by name, expand.
import { describe, expect, it } from "vitest";
import { diffCatalogs, snapshotOf } from "../../src/catalog/index.js";

const wide = (said: string) => ({
  type: "object",
  properties: { a: { type: "string", description: said }, b: { type: "string" } },
});

describe("a catalog change that renames 200 tools and narrows one other", () => {
  it("the narrowed tool, first by name, is checked against the validator and narrows", () => {
    const before = [
      { name: "a_tool", inputSchema: { type: "object", properties: { x: { type: "string" } } } },
      ...Array.from({ length: 200 }, (_, i) => ({
        name: `r${String(i).padStart(3, "0")}`,
        inputSchema: wide("old words"),
      })),
    ];
    const after = [
      {
        name: "a_tool",
        inputSchema: { type: "object", properties: { x: { type: "string", maxLength: 8 } } },
      },
      ...Array.from({ length: 200 }, (_, i) => ({
        name: `s${String(i).padStart(3, "0")}`,
        inputSchema: wide("new words"),
      })),
    ];
    const diff = diffCatalogs(snapshotOf(before, 1), snapshotOf(after, 1));
    // the renames are found (the premise of the test)
    expect(diff.renameCandidates.length).toBe(200);
    const modified = diff.entries.find((e) => e.tool === "a_tool");
    expect(modified?.kind).toBe("modified");
    expect(modified?.changes.map((c) => c.change)).not.toContainEqual(expect.stringMatching(/not checked/));
    expect(modified?.classification).toBe("narrows");
  });
});
