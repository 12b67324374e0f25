import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { afterEach, describe, expect, it } from "vitest";
import { openStore } from "../../src/store/db.js";
import { makeCatalog, numberedTools } from "../helpers/catalog.js";
import { waitFor } from "../helpers/files.js";
import { modernMeta } from "../helpers/modernMeta.js";
import { FIXTURES, NODE } from "../helpers/paths.js";
import { type Listener, startListener } from "./listen.js";

const CONFORMANCE = [NODE, FIXTURES.conformance];

let cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

async function listener(
  command: string[],
  args: string[] = [],
  env: Record<string, string> = {},
): Promise<Listener> {
  const l = await startListener(command, { args, env });
  cleanup.push(() => l.close());
  return l;
}

function transportFor(l: Listener) {
  return new StreamableHTTPClientTransport(new URL(l.url), {
    requestInit: { headers: { authorization: `Bearer ${l.token}` } },
  });
}

describe("v2 client, legacy era, through run --listen", () => {
  it("lists, calls with progress, and answers sampling and elicitation", async () => {
    const l = await listener(CONFORMANCE, ["--approval", "none"]);
    const client = new Client(
      { name: "v2-http-test", version: "1" },
      { capabilities: { sampling: {}, elicitation: {} } },
    );
    client.setRequestHandler("sampling/createMessage", async () => ({
      model: "m",
      role: "assistant",
      content: { type: "text", text: "v2 sampled" },
    }));
    client.setRequestHandler("elicitation/create", async () => ({
      action: "accept",
      content: { response: "v2 elicited" },
    }));
    const transport = transportFor(l);
    await client.connect(transport);
    cleanup.push(() => client.close());
    expect(transport.sessionId).toMatch(/^[0-9a-f]{32}$/);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toContain("test_sampling");
    const progress: number[] = [];
    await client.callTool(
      { name: "test_tool_with_progress", arguments: {} },
      { onprogress: (p) => progress.push(p.progress) },
    );
    expect(progress).toEqual([0, 50, 100]);
    const sampled = await client.callTool({ name: "test_sampling", arguments: { prompt: "x" } });
    expect(JSON.stringify(sampled.content)).toContain("v2 sampled");
    const elicited = await client.callTool({ name: "test_elicitation", arguments: { message: "x" } });
    expect(JSON.stringify(elicited.content)).toContain("v2 elicited");
  });
});

describe("v2 client, modern era (2026-07-28), through run --listen", () => {
  it("discovers, lists and calls without a session id; one agent run for the client process", async () => {
    const l = await listener([NODE, FIXTURES.modern], ["--approval", "none"]);
    const client = new Client(
      { name: "v2-http-modern", version: "1" },
      { versionNegotiation: { mode: { pin: "2026-07-28" } } },
    );
    const transport = transportFor(l);
    await client.connect(transport);
    cleanup.push(() => client.close());
    expect(transport.sessionId).toBeUndefined();
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toContain("echo");
    const r = await client.callTool({ name: "echo", arguments: { text: "over modern http" } });
    expect(JSON.stringify(r.content)).toContain("over modern http");
    // the modern requests of this process share one session: one run, whose chain starts here
    const db = openStore(l.stateDir);
    try {
      const runs = db.prepare("SELECT chain_json FROM runs").all() as { chain_json: string }[];
      expect(runs).toHaveLength(1);
      if (process.platform === "linux") expect(JSON.parse(runs[0]!.chain_json)[0].pid).toBe(process.pid);
    } finally {
      db.close();
    }
  });

  it("auto negotiation picks the modern era over HTTP", async () => {
    const l = await listener([NODE, FIXTURES.modern], ["--approval", "none"]);
    const client = new Client(
      { name: "v2-http-auto", version: "1" },
      { versionNegotiation: { mode: "auto" } },
    );
    await client.connect(transportFor(l));
    cleanup.push(() => client.close());
    const r = await client.callTool({ name: "echo", arguments: { text: "auto" } });
    expect(JSON.stringify(r.content)).toContain("auto");
    const sent = await fetch(l.url, {
      method: "POST",
      headers: l.headers(),
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: "d",
        method: "server/discover",
        params: {
          _meta: modernMeta({}, { name: "raw", version: "1" }),
        },
      }),
    });
    expect(sent.status).toBe(200);
    const body = (await sent.json()) as { id: string; result: { supportedVersions: string[] } };
    expect(body.id).toBe("d");
    expect(body.result.supportedVersions).toContain("2026-07-28");
  });

  it("a subscriptions/listen stream stays open and carries the gateway's list_changed, with the client's listen id", async () => {
    const catalog = makeCatalog(numberedTools("alpha", 2));
    cleanup.push(async () => catalog.cleanup());
    const l = await listener([NODE, FIXTURES.modern], ["--approval", "none"], catalog.env);
    const changes: string[][] = [];
    const client = new Client(
      { name: "v2-http-listen", version: "1" },
      {
        versionNegotiation: { mode: { pin: "2026-07-28" } },
        listChanged: { tools: { onChanged: (_e, tools) => changes.push((tools ?? []).map((t) => t.name)) } },
      },
    );
    await client.connect(transportFor(l));
    cleanup.push(() => client.close());
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(["alpha_0", "alpha_1"]);
    catalog.write(numberedTools("alpha", 3));
    const seen = await waitFor(
      () => changes.find((c) => c.includes("alpha_2")),
      20_000,
      "list_changed over the listen stream",
    );
    expect(seen).toEqual(["alpha_0", "alpha_1", "alpha_2"]);
  });
});
