// A tool that takes no arguments (`"properties": {}`) is reviewed with its inputs said to be none:
// the review printed the heading "inputs (other properties accepted):" with nothing under it,
// which reads as a list cut off. A real gateway in front of the catalog fixture, `approvals`
// (the card and --verbose) as a human reads them.
import { afterEach, describe, expect, it } from "vitest";
import { nextStoredRequest } from "../helpers/approvals.js";
import { makeCatalog } from "../helpers/catalog.js";
import { catalogGateway } from "../helpers/catalogGateway.js";
import { runCli } from "../helpers/gateway.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

describe("the review of a tool with no inputs", () => {
  it("says none are declared, and whether others are accepted", async () => {
    const cat = makeCatalog([
      { name: "read_status", description: "Reads.", inputSchema: { type: "object", properties: {} } },
      {
        name: "ping_strict",
        description: "Pings.",
        inputSchema: { type: "object", properties: {}, additionalProperties: false },
      },
      {
        name: "adjust",
        description: "Adjusts.",
        inputSchema: { type: "object", properties: { sku: { type: "string" } }, required: ["sku"] },
      },
    ]);
    const { gw, stateDir } = await catalogGateway(
      cat,
      ["--label", "shop", "--approval-timeout", "60000"],
      cleanup,
    );
    const seen = new Set<string>();
    for (const [name, args] of [
      ["read_status", {}],
      ["ping_strict", {}],
      ["adjust", { sku: "W-1" }],
    ] as const) {
      void gw.client.callTool({ name, arguments: args }).catch(() => {});
      await nextStoredRequest(stateDir, seen);
    }
    for (const args of [["approvals"], ["approvals", "--verbose"]]) {
      const r = await runCli([...args, "--state-dir", stateDir]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toContain("inputs: none declared (other properties accepted)\n");
      expect(r.stdout).toMatch(/inputs: none declared\n/);
      // a tool with inputs keeps the heading, its inputs under it
      expect(r.stdout).toMatch(/inputs \(other properties accepted\):\n\s+sku: string \(required\)/);
      // no heading is left with nothing under it
      expect(r.stdout).not.toMatch(/inputs[^\n]*:\n\s+(epoch|catalog|credentials|arguments|tool)\b/);
    }
  });
});
