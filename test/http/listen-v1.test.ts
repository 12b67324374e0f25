// The official v1 SDK client (@modelcontextprotocol/sdk StreamableHTTPClientTransport) against a
// real `portcullis run --listen` in front of real fixture servers: list, call, progress, logging,
// sampling and elicitation round trips, cancellation, an approval decided by the CLI, session end
// (DELETE), and the agent run that records the connecting process (this test process).

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  LoggingMessageNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { afterEach, describe, expect, it } from "vitest";
import { openStore } from "../../src/store/db.js";
import { decideByCli, nextStoredRequest } from "../helpers/approvals.js";
import { FIXTURES, fixtureCommand, NODE } from "../helpers/paths.js";
import { type Listener, startListener } from "./listen.js";

const CONFORMANCE = [NODE, FIXTURES.conformance];

let cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

async function listener(command: string[], args: string[] = []): Promise<Listener> {
  const l = await startListener(command, { args });
  cleanup.push(() => l.close());
  return l;
}

async function connect(l: Listener, capabilities: Record<string, unknown> = {}) {
  const client = new Client({ name: "v1-http-test", version: "1" }, { capabilities });
  const transport = new StreamableHTTPClientTransport(new URL(l.url), {
    requestInit: { headers: { authorization: `Bearer ${l.token}` } },
  });
  await client.connect(transport);
  cleanup.push(() => client.close());
  return { client, transport };
}

describe("v1 StreamableHTTPClientTransport through run --listen", () => {
  it("lists, calls, and gets progress and log notifications of the call", async () => {
    const l = await listener(CONFORMANCE, ["--approval", "none"]);
    const { client } = await connect(l);
    const tools = await client.listTools();
    expect(tools.tools.map((t) => t.name)).toContain("test_tool_with_progress");
    expect(await client.callTool({ name: "test_simple_text", arguments: {} })).toMatchObject({
      content: [{ type: "text" }],
    });
    const progress: number[] = [];
    const r = await client.callTool({ name: "test_tool_with_progress", arguments: {} }, undefined, {
      onprogress: (p) => progress.push(p.progress),
    });
    expect(r.isError).toBeFalsy();
    expect(progress).toEqual([0, 50, 100]);
    const logs: unknown[] = [];
    client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
      logs.push(n.params.data);
    });
    await client.callTool({ name: "test_tool_with_logging", arguments: {} });
    expect(logs).toEqual(["Tool execution started", "Tool processing data", "Tool execution completed"]);
  });

  it("relays sampling and elicitation requests of the server to the client and back", async () => {
    const l = await listener(CONFORMANCE, ["--approval", "none"]);
    const client = new Client(
      { name: "v1-http-test", version: "1" },
      { capabilities: { sampling: {}, elicitation: {} } },
    );
    client.setRequestHandler(CreateMessageRequestSchema, async () => ({
      model: "test-model",
      role: "assistant",
      content: { type: "text", text: "sampled over http" },
    }));
    client.setRequestHandler(ElicitRequestSchema, async () => ({
      action: "accept",
      content: { response: "elicited over http" },
    }));
    await client.connect(
      new StreamableHTTPClientTransport(new URL(l.url), {
        requestInit: { headers: { authorization: `Bearer ${l.token}` } },
      }),
    );
    cleanup.push(() => client.close());
    await client.listTools();
    const sampled = await client.callTool({ name: "test_sampling", arguments: { prompt: "hi" } });
    expect(JSON.stringify(sampled.content)).toContain("sampled over http");
    const elicited = await client.callTool({ name: "test_elicitation", arguments: { message: "who?" } });
    expect(JSON.stringify(elicited.content)).toContain("elicited over http");
  });

  it("a cancelled call gets no answer and the session keeps serving", async () => {
    const l = await listener(fixtureCommand("habits"), ["--approval", "none"]);
    const { client } = await connect(l);
    await client.listTools();
    const abort = new AbortController();
    const slow = client.callTool({ name: "slow", arguments: { ms: 60_000, tag: "never" } }, undefined, {
      signal: abort.signal,
    });
    setTimeout(() => abort.abort("test cancels"), 300);
    await expect(slow).rejects.toThrow(/cancel|abort/i);
    const quick = await client.callTool({ name: "slow", arguments: { ms: 1, tag: "after" } });
    expect(JSON.stringify(quick.content)).toContain("slow after");
  });

  it("a call waits for a human, is approved with the CLI, then runs", async () => {
    const l = await listener(CONFORMANCE, ["--approval-timeout", "30000"]);
    const { client } = await connect(l);
    await client.listTools();
    const call = client.callTool({ name: "test_simple_text", arguments: {} });
    const req = await nextStoredRequest(l.stateDir);
    expect(req.tool).toBe("test_simple_text");
    await decideByCli(l.stateDir, "approve", req.request, "--for", "call");
    expect((await call).isError).toBeFalsy();
  });

  it("DELETE ends the session: its server stops, the run ends, the session id is unknown after", async () => {
    const l = await listener(CONFORMANCE, ["--approval", "none"]);
    const { client, transport } = await connect(l);
    await client.listTools();
    const sessionId = transport.sessionId!;
    expect(sessionId).toMatch(/^[0-9a-f]{32}$/);
    await transport.terminateSession();
    const after = await fetch(l.url, {
      method: "POST",
      headers: l.headers({ "mcp-session-id": sessionId }),
      body: JSON.stringify({ jsonrpc: "2.0", id: 9, method: "tools/list" }),
    });
    expect(after.status).toBe(404);
    const db = openStore(l.stateDir);
    try {
      const runs = db.prepare("SELECT ended_at, chain_json FROM runs").all() as {
        ended_at: string | null;
        chain_json: string;
      }[];
      expect(runs).toHaveLength(1);
      expect(runs[0]!.ended_at).not.toBeNull();
    } finally {
      db.close();
    }
  });

  it.runIf(process.platform === "linux")(
    "the agent run records the connecting process: this test's pid is in the chain",
    async () => {
      const l = await listener(CONFORMANCE, ["--approval", "none"]);
      const { client } = await connect(l);
      await client.listTools();
      const db = openStore(l.stateDir);
      try {
        const runs = db.prepare("SELECT chain_json FROM runs").all() as { chain_json: string }[];
        expect(runs).toHaveLength(1);
        const chain = JSON.parse(runs[0]!.chain_json) as { pid: number }[];
        expect(chain[0]!.pid).toBe(process.pid);
        expect(chain.map((e) => e.pid)).toContain(process.ppid);
      } finally {
        db.close();
      }
    },
  );
});
