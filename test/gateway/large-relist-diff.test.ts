// A re-list that narrows the input schema of every tool of a catalog larger than the validator's
// bound of checks per diff (MAX_REFUSAL_CHECKS, 200): the diff the gateway records in
// `catalog_revised` is the one diffCatalogs makes of the two lists on its own, the inventory is
// the new list, and the previous revision is named. The gateway's re-list path reuses what it has
// (the served snapshot as the previous revision, one diff for the record and for the run's grants,
// a revision's fingerprint read without its inventory): this checks it still records what a diff
// from scratch says. No timing is asserted (bench/relist-large.mjs measures a 10,000-tool
// re-list). Real gateway, real catalog fixture, audit log read back with the test keyring.
import { afterEach, describe, expect, it } from "vitest";
import { diffCatalogs } from "../../src/catalog/index.js";
import { auditEvents } from "../helpers/approvals.js";
import { makeCatalog, type ToolDef } from "../helpers/catalog.js";
import type { WireMessage } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { rawGateway } from "../helpers/raw.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const TOOLS = 300;
const schema = (narrow: boolean) => ({
  type: "object",
  properties: Object.fromEntries(
    Array.from({ length: 8 }, (_, k) => [
      `p${k}`,
      narrow ? { type: "string", maxLength: 10 } : { type: "string" },
    ]),
  ),
});
const tools = (narrow: boolean): ToolDef[] =>
  Array.from({ length: TOOLS }, (_, i) => ({
    name: `t${String(i).padStart(4, "0")}`,
    description: `Tool ${i}.`,
    inputSchema: schema(narrow),
  }));

describe(`a re-list that narrows every input schema of ${TOOLS} tools`, () => {
  it("records the diff a diff from scratch makes, the new inventory and the previous revision", async () => {
    const cat = makeCatalog(tools(false), { pageSize: 100 });
    cleanup.push(() => cat.cleanup());
    const gw = rawGateway({
      args: ["--label", "large", "--approval", "none", "--", ...fixtureCommand("catalog")],
      env: cat.env,
    });
    cleanup.push(() => gw.close());
    await gw.initialize();
    const first = await gw.request("tools/list", {}, 60_000);
    expect((first.result as { tools: unknown[] }).tools).toHaveLength(TOOLS);

    cat.write(tools(true));
    await gw.next((m: WireMessage) => m.method === "notifications/tools/list_changed", 120_000);
    const second = await gw.request("tools/list", {}, 60_000);
    expect((second.result as { tools: unknown[] }).tools).toEqual(tools(true));

    const revised = (await auditEvents(gw.stateDir)).filter((e) => e.type === "catalog_revised");
    expect(revised.map((e) => [e.revision, e.previousRevision])).toEqual([
      [1, null],
      [2, 1],
    ]);
    const expected = JSON.parse(JSON.stringify(diffCatalogs(tools(false) as never, tools(true) as never)));
    expect(revised[1]!.diff).toEqual(expected);
    expect(revised[1]!.inventory).toEqual(tools(true));
    // the bound held: the first tools by name were checked (narrow), the rest expand, saying why
    const entries = (revised[1]!.diff as { entries: { tool: string; classification: string }[] }).entries;
    expect(entries).toHaveLength(TOOLS);
    expect(entries[0]).toMatchObject({ tool: "t0000", classification: "narrows" });
    expect(entries.at(-1)).toMatchObject({
      tool: `t${String(TOOLS - 1).padStart(4, "0")}`,
      classification: "expands",
    });
  }, 240_000);
});
