// The 2026-07-28 era through the gateway (v2 SDK client and server), and the npm reference
// servers filesystem and memory end to end.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { makeCatalog, type ToolDef } from "../helpers/catalog.js";
import { tempDir, waitFor } from "../helpers/files.js";
import { startGateway, startModernGateway } from "../helpers/gateway.js";
import { modernMeta } from "../helpers/modernMeta.js";
import { FILESYSTEM, fixtureCommand, MEMORY, NODE } from "../helpers/paths.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const LOOKUP: ToolDef = {
  name: "lookup",
  description: "Look something up.",
  inputSchema: { type: "object", required: ["q"], properties: { q: { type: "string" } } },
};
const SEND: ToolDef = {
  name: "send_report",
  description: "Send a report.",
  inputSchema: { type: "object", properties: { destination_url: { type: "string" } } },
};

describe("the 2026-07-28 era", () => {
  it("lists and calls; the gateway's list answer tells the client not to cache it", async () => {
    const cat = makeCatalog([LOOKUP]);
    const gw = await startModernGateway({
      args: ["--label", "modern", "--approval", "none", "--", ...fixtureCommand("modern")],
      env: { ...cat.env, FIXTURE_LEGACY: "reject" },
      negotiation: "pin",
    });
    cleanup.push(
      () => gw.close(),
      () => cat.cleanup(),
    );
    const listed = await gw.client.listTools();
    expect(listed.tools.map((t) => t.name)).toEqual(["lookup"]);
    const res = await gw.client.callTool({ name: "lookup", arguments: { q: "x" } });
    expect(res.isError).toBeFalsy();
    expect(cat.records()).toEqual([expect.objectContaining({ tool: "lookup", era: "modern" })]);
    const list = gw.received().find((m) => Array.isArray(m.result?.tools));
    expect(list?.result.ttlMs).toBe(0);
  });

  it("a listen stream is acknowledged and told the list changed, stamped with the client's own listen id", async () => {
    const cat = makeCatalog([LOOKUP]);
    const gw = await startModernGateway({
      args: ["--label", "modern", "--approval", "none", "--", ...fixtureCommand("modern")],
      env: cat.env,
      negotiation: "pin",
    });
    cleanup.push(
      () => gw.close(),
      () => cat.cleanup(),
    );
    await gw.client.listTools();
    const from = gw.received().length;
    const listenId = "listen:test-1";
    const transport = (gw.client as unknown as { transport: { send(m: unknown): Promise<void> } }).transport;
    await transport.send({
      jsonrpc: "2.0",
      id: listenId,
      method: "subscriptions/listen",
      params: {
        notifications: { toolsListChanged: true },
        _meta: modernMeta({}, { name: "t", version: "1" }),
      },
    });
    const ack = await gw.waitForNotification("notifications/subscriptions/acknowledged", 10_000, from);
    expect(ack.params._meta["io.modelcontextprotocol/subscriptionId"]).toBe(listenId);
    cat.write([LOOKUP, SEND]);
    const changed = await gw.waitForNotification("notifications/tools/list_changed", 10_000, from);
    expect(changed.params._meta["io.modelcontextprotocol/subscriptionId"]).toBe(listenId);
    // send_report is new since the client's list (staleness is per tool: lookup did not change)
    const err = await gw.client.callTool({ name: "send_report", arguments: {} }).catch((e) => e);
    expect((err as { code: number }).code).toBe(-32052);

    // the client closes its stream: later changes are still seen by the gateway, but not sent on it
    await gw.client.listTools();
    await transport.send({
      jsonrpc: "2.0",
      method: "notifications/cancelled",
      params: { requestId: listenId },
    });
    const after = gw.received().length;
    cat.write([LOOKUP]);
    const stale = await waitFor(
      async () => {
        // send_report, listed at the last list, is gone: stale for this client (served until the gateway sees the change)
        const e = await gw.client.callTool({ name: "send_report", arguments: {} }).catch((x) => x);
        return (e as { code?: number }).code === -32052 ? e : null;
      },
      10_000,
      "the gateway to see the change",
    );
    expect(stale).toBeTruthy();
    expect(
      gw
        .received()
        .slice(after)
        .filter((m) => m.method === "notifications/tools/list_changed"),
    ).toHaveLength(0);
  });
});

describe("npm reference servers end to end", () => {
  it("server-filesystem: list, write, read, and a path outside the allowed directory refused by the server", async () => {
    const dir = tempDir("portcullis-fs-");
    mkdirSync(join(dir, "docs"));
    writeFileSync(join(dir, "docs", "a.txt"), "alpha");
    const gw = await startGateway({
      args: ["--label", "fs", "--approval", "none", "--", NODE, ...FILESYSTEM.args(dir)],
    });
    cleanup.push(() => gw.close());
    const tools = (await gw.client.listTools()).tools.map((t) => t.name);
    expect(tools).toContain("read_text_file");
    const read = await gw.client.callTool({
      name: "read_text_file",
      arguments: { path: join(dir, "docs", "a.txt") },
    });
    expect(JSON.stringify(read.content)).toContain("alpha");
    await gw.client.callTool({
      name: "write_file",
      arguments: { path: join(dir, "b.txt"), content: "beta" },
    });
    const again = await gw.client.callTool({
      name: "read_text_file",
      arguments: { path: join(dir, "b.txt") },
    });
    expect(JSON.stringify(again.content)).toContain("beta");
    const outside = await gw.client.callTool({
      name: "read_text_file",
      arguments: { path: "/etc/hostname" },
    });
    expect(outside.isError).toBe(true);
  });

  it("server-memory: create entities and read the graph back", async () => {
    const dir = tempDir("portcullis-mem-");
    const gw = await startGateway({
      args: ["--label", "memory", "--approval", "none", "--", NODE, ...MEMORY.args()],
      env: MEMORY.env(join(dir, "memory.jsonl")),
    });
    cleanup.push(() => gw.close());
    await gw.client.listTools();
    await gw.client.callTool({
      name: "create_entities",
      arguments: {
        entities: [{ name: "portcullis", entityType: "project", observations: ["guards MCP servers"] }],
      },
    });
    const graph = await gw.client.callTool({ name: "read_graph", arguments: {} });
    expect(JSON.stringify(graph)).toContain("guards MCP servers");
  });
});
