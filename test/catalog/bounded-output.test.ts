// A server's strings can be of any length: a 30 KB `format`, thousands of enum values, a
// property or tool name of kilobytes. `catalog show`, `catalog diff` and the approval review
// (card and --verbose) print them shortened, with counts of what was left out, so every line
// stays readable, and still say what matters: the enum changed, and by how much.
import { afterEach, describe, expect, it } from "vitest";
import { nextStoredRequest } from "../helpers/approvals.js";
import { makeCatalog, type ToolDef } from "../helpers/catalog.js";
import { catalogGateway } from "../helpers/catalogGateway.js";
import { runCli } from "../helpers/gateway.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/** No line a view prints for this catalog is longer than this. */
const LONGEST = 1000;

const LONG_FIELD = `f${"i".repeat(5000)}eld`;
const LONG_TOOL = `t${"o".repeat(3000)}l`;

function choose(values: number, formatLength: number): ToolDef {
  return {
    name: "choose",
    description: "Picks one.",
    inputSchema: {
      type: "object",
      properties: {
        pick: {
          type: "string",
          format: `f${"F".repeat(formatLength)}`,
          enum: Array.from({ length: values }, (_, i) => `v${i}`),
        },
        [LONG_FIELD]: { type: "string" },
      },
    },
  };
}

function longest(text: string): number {
  return Math.max(...text.split("\n").map((l) => l.length));
}

describe("long server strings", () => {
  it("catalog show, catalog diff and the review keep every line short and count what they leave out", async () => {
    const long = { name: LONG_TOOL, description: "Long name.", inputSchema: { type: "object" } };
    const cat = makeCatalog([choose(5000, 20_000), long]);
    const { gw, stateDir } = await catalogGateway(
      cat,
      ["--label", "picker", "--approval-timeout", "60000"],
      cleanup,
    );
    const from = gw.received().length;
    cat.write([choose(6000, 30_000), long]);
    await gw.waitForNotification("notifications/tools/list_changed", 10_000, from);
    await gw.client.listTools();

    const show = await runCli(["catalog", "show", "picker"], { stateDir });
    expect(show.code, show.stderr).toBe(0);
    expect(longest(show.stdout)).toBeLessThan(LONGEST);
    expect(show.stdout).toContain("(enum v0|v1|v2|v3|v4|v5|v6|v7|v8|v9|v10|v11|… and 5988 more)");
    expect(show.stdout).toMatch(/format "fFFFF+…/);
    expect(show.stdout).toMatch(/"tooo+…" \(3002 characters, sha256 [0-9a-f]{16}…\)/);

    const diff = await runCli(["catalog", "diff", "picker"], { stateDir });
    expect(diff.code, diff.stderr).toBe(0);
    expect(longest(diff.stdout)).toBeLessThan(LONGEST);
    // the enum changed, by 1000 values: the first twelve added are shown, the rest counted
    expect(diff.stdout).toContain("enum widened");
    expect(diff.stdout).toContain(
      "pick: enum adds v5000|v5001|v5002|v5003|v5004|v5005|v5006|v5007|v5008|v5009|v5010|v5011|… and 988 more" +
        " (now v0|v1|v2|v3|v4|v5|v6|v7|v8|v9|v10|v11|… and 5988 more)",
    );
    expect(diff.stdout).toContain("format changed");

    // The review of a call of the tool: the card and the full version.
    void gw.client.callTool({ name: "choose", arguments: { pick: "v1" } }).catch(() => {});
    await nextStoredRequest(stateDir);
    for (const args of [["approvals"], ["approvals", "--verbose"]]) {
      const r = await runCli([...args, "--state-dir", stateDir]);
      expect(r.code, r.stderr).toBe(0);
      expect(longest(r.stdout)).toBeLessThan(LONGEST);
      expect(r.stdout).toContain("… and 5988 more");
    }
  });
});
