// A tool whose input schema its dialect's meta-schema refuses has its calls refused by the built
// gateway, which checks schemas against the meta-schema with the code the build generated
// (src/catalog/metaCheck.ts), in the very words ajv's own check gives: the refusal made in this
// process, from the sources (where there is no such code, and ajv compiles the meta-schema), is
// the expected text. Both dialects; a valid tool beside them, with defaults, still works.
import { afterEach, describe, expect, it } from "vitest";
import { ArgumentValidator, snapshotOf, type Tool } from "../../src/catalog/index.js";
import { metaCheckInUse } from "../../src/catalog/validator.js";
import { makeCatalog, type ToolDef } from "../helpers/catalog.js";
import { startGateway } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";

const DRAFT_07 = "http://json-schema.org/draft-07/schema#";
const TOOLS: ToolDef[] = [
  { name: "bad_type", inputSchema: { type: "object", properties: { a: { type: "no-such-type" } } } },
  { name: "bad_nested", inputSchema: { type: "object", properties: { a: { items: { minimum: "x" } } } } },
  { name: "twice_required", inputSchema: { type: "object", required: ["a", "b", "a"] } },
  { name: "bad_anchor", inputSchema: { type: "object", $defs: { d: { $anchor: "1d" } } } },
  { name: "bad_id", inputSchema: { type: "object", properties: { a: { $id: "x#y" } } } },
  { name: "legacy_bad", inputSchema: { $schema: DRAFT_07, type: "object", minProperties: -1 } },
  {
    name: "legacy_bad_items",
    inputSchema: { $schema: DRAFT_07, type: "object", properties: { a: { items: [{ type: "strin" }] } } },
  },
  {
    name: "fine",
    inputSchema: { type: "object", properties: { a: { type: "string", default: "x" } } },
  },
  {
    name: "legacy_fine",
    inputSchema: { $schema: DRAFT_07, type: "object", properties: { n: { default: 1 } } },
  },
];

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

describe("an input schema its meta-schema refuses, through the built gateway", () => {
  it("refuses the tool's calls in the words ajv's own check gives; valid tools work", async () => {
    // the expected words: ajv compiling the meta-schema, as the gateway did before it shipped the check
    expect(metaCheckInUse("2020-12")).toBe("ajv");
    const own = new ArgumentValidator(snapshotOf(TOOLS as Tool[], 1));
    const cat = makeCatalog(TOOLS);
    const gw = await startGateway({
      args: ["--label", "meta", "--approval", "none", "--", ...fixtureCommand("catalog")],
      env: cat.env,
    });
    cleanup.push(
      () => gw.close(),
      () => cat.cleanup(),
    );
    await gw.client.listTools();
    let byMeta = 0;
    for (const { name } of TOOLS.filter((t) => !t.name.includes("fine"))) {
      const expected = own.validate(name, {});
      expect(expected.ok).toBe(false);
      if (expected.ok) continue;
      expect(expected.errors[0]).toContain("has an invalid input schema (");
      if (expected.errors[0]?.includes("(schema is invalid: ")) byMeta++;
      const res = await gw.client.callTool({ name, arguments: {} });
      expect([name, res.isError]).toEqual([name, true]);
      expect([name, (res.content as { text: string }[])[0]?.text]).toEqual([
        name,
        `Invalid arguments for tool "${name}" (checked against catalog revision 1):\n- ${expected.errors[0]}`,
      ]);
    }
    // most refused by the meta-schema check itself (an anchor ajv reads first: "invalid anchor")
    expect(byMeta).toBeGreaterThanOrEqual(5);
    for (const name of ["fine", "legacy_fine"]) {
      const res = await gw.client.callTool({ name, arguments: {} });
      expect([name, Boolean(res.isError)]).toEqual([name, false]);
    }
    // nothing of the refused tools reached the server; the valid ones did, defaults filled in
    expect(cat.records().map((r) => [r.tool, r.args])).toEqual([
      ["fine", { a: "x" }],
      ["legacy_fine", { n: 1 }],
    ]);
  });
});
