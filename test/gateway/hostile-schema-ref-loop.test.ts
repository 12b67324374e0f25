// A tool whose input schema refers back to itself in place, through $ref, never stepping into the
// arguments: `{"$ref": "#/$defs/a"}` with a → b → a, or a → anyOf[…, a]. Checking one value against
// it never ends (ajv's generated code recurses until the stack is gone). The gateway refuses the
// tool's calls with a sentence naming the place (src/catalog/checkCost.ts finds the loop,
// src/catalog/validator.ts words it), answers a ping sent alongside, and serves the tool beside
// it; the server never sees a call of it. Real gateway, real fixture server (hostile-catalog.mjs).
import { afterEach, describe, expect, it } from "vitest";
import { scriptedCatalogGateway } from "../helpers/scriptedCatalog.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const TOOLS = [
  {
    name: "pair",
    inputSchema: {
      type: "object",
      $defs: { a: { $ref: "#/$defs/b" }, b: { $ref: "#/$defs/a" } },
      properties: { x: { $ref: "#/$defs/a" } },
    },
  },
  {
    name: "branch",
    inputSchema: {
      $defs: { a: { anyOf: [{ type: "integer" }, { $ref: "#/$defs/a" }] } },
      $ref: "#/$defs/a",
    },
  },
  { name: "plain", inputSchema: { type: "object" } },
];

describe("an input schema whose $ref loops in place", () => {
  it("refuses the tool's calls naming the place; a ping alongside and the tool beside it are answered", async () => {
    const { gw, received } = await scriptedCatalogGateway({
      cleanup,
      args: ["--label", "loops", "--approval", "none"],
      script: `export function list() { return { tools: ${JSON.stringify(TOOLS)} }; }`,
    });
    await gw.request("tools/list");
    for (const [name, at] of [
      ["pair", "/$defs/"],
      ["branch", "/$defs/a"],
    ] as const) {
      gw.send({ jsonrpc: "2.0", id: name, method: "tools/call", params: { name, arguments: { x: 1 } } });
      gw.send({ jsonrpc: "2.0", id: `ping-${name}`, method: "ping" });
      const answer = await gw.next((m) => m.id === name, 10_000);
      expect(answer.result?.isError, name).toBe(true);
      const text = answer.result.content[0].text as string;
      expect(text).toContain(`the subschema at "${at}`);
      expect(text).toContain("refers back to itself without going into the arguments");
      expect((await gw.next((m) => m.id === `ping-${name}`, 10_000)).result).toEqual({});
    }
    expect((await gw.request("tools/call", { name: "plain", arguments: {} })).result).toEqual({
      content: [{ type: "text", text: "ran plain" }],
    });
    const calls = received()
      .map((l) => JSON.parse(l) as { method?: string; params?: { name?: string } })
      .filter((m) => m.method === "tools/call")
      .map((m) => m.params?.name);
    expect(calls).toEqual(["plain"]);
  }, 20_000);
});
