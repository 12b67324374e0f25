// server-everything behind the gateway, driven by the official SDK client: everything the
// gateway does not guard passes through unchanged in both directions.

import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import {
  CreateMessageRequestSchema,
  LoggingMessageNotificationSchema,
  ProgressNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { auditEvents, decideByCli, nextStoredRequest } from "../helpers/approvals.js";
import { sleep, waitFor } from "../helpers/files.js";
import { type Session, startDirect, startGateway } from "../helpers/gateway.js";
import { EVERYTHING, NODE } from "../helpers/paths.js";
import { rawGateway, rawPeer } from "../helpers/raw.js";

const sampling = (client: Client) => {
  client.setRequestHandler(CreateMessageRequestSchema, async (req) => ({
    model: "test-model",
    role: "assistant",
    content: { type: "text", text: `sampled: ${JSON.stringify(req.params.messages[0]?.content)}` },
  }));
};

async function stableTools(s: Session<Client>) {
  // server-everything registers capability-dependent tools after initialization and
  // says so with list_changed: list until two consecutive lists, 300 ms apart, agree.
  let last = "";
  for (let i = 0; i < 50; i++) {
    const now = JSON.stringify((await s.client.listTools()).tools);
    if (now === last) return JSON.parse(now) as { name: string }[];
    last = now;
    await sleep(300);
  }
  throw new Error("the tool list never settled");
}

/** A tool as the gateway shows it: `execution.taskSupport` taken out (and `execution` if then empty). */
function withoutTaskSupport(tool: { name: string; execution?: Record<string, unknown> }) {
  if (!tool.execution || !("taskSupport" in tool.execution)) return tool;
  const { execution, ...rest } = tool;
  const { taskSupport: _dropped, ...kept } = execution;
  return Object.keys(kept).length > 0 ? { ...rest, execution: kept } : rest;
}

describe("server-everything through the gateway", () => {
  let gw: Session<Client>;
  let direct: Session<Client>;

  beforeAll(async () => {
    [gw, direct] = await Promise.all([
      startGateway({
        args: ["--label", "everything", "--approval", "none", "--", NODE, ...EVERYTHING.args()],
        capabilities: { sampling: {} },
        setup: sampling,
      }),
      startDirect(NODE, EVERYTHING.args(), {}, { capabilities: { sampling: {} }, setup: sampling }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([gw?.close(), direct?.close()]);
  });

  it("lists exactly the tools a direct connection lists, less their task support hints", async () => {
    const [a, b] = await Promise.all([stableTools(gw), stableTools(direct)]);
    expect(a.length).toBeGreaterThan(5);
    // the gateway offers no tasks: execution.taskSupport is the one thing it leaves out
    expect(a).toEqual(b.map(withoutTaskSupport));
  });

  it("calls echo and get-sum", async () => {
    await stableTools(gw);
    const echo = await gw.client.callTool({ name: "echo", arguments: { message: "hello through the gate" } });
    expect(JSON.stringify(echo.content)).toContain("hello through the gate");
    const sum = await gw.client.callTool({ name: "get-sum", arguments: { a: 2, b: 40 } });
    expect(JSON.stringify(sum.content)).toContain("42");
  });

  it("relays every progress notification of a long-running operation, in order", async () => {
    await stableTools(gw);
    const from = gw.received().length;
    const res = await gw.client.callTool(
      { name: "trigger-long-running-operation", arguments: { duration: 1, steps: 4 } },
      undefined,
      { onprogress: () => {}, timeout: 20_000 },
    );
    expect(JSON.stringify(res.content)).toContain("completed");
    // on the wire (the SDK may dispatch the last one after the result): all four, then the result
    const after = gw.received().slice(from);
    const steps = after.filter((m) => m.method === "notifications/progress").map((m) => m.params.progress);
    expect(steps).toEqual([1, 2, 3, 4]);
    const resultAt = after.findIndex((m) => m.result?.content);
    const lastProgressAt = after.map((m) => m.method).lastIndexOf("notifications/progress");
    expect(lastProgressAt).toBeLessThan(resultAt);
  });

  it("cancels a running call upstream", async () => {
    await stableTools(gw);
    const before = gw.sent().length;
    const ac = new AbortController();
    const call = gw.client.callTool(
      { name: "trigger-long-running-operation", arguments: { duration: 5, steps: 5 } },
      undefined,
      { signal: ac.signal, timeout: 20_000 },
    );
    await new Promise((r) => setTimeout(r, 300));
    ac.abort("test cancels");
    await expect(call).rejects.toThrow();
    const cancelled = gw
      .sent()
      .slice(before)
      .find((m) => m.method === "notifications/cancelled");
    expect(cancelled).toBeDefined();
    // the gateway is still healthy afterwards
    const echo = await gw.client.callTool({ name: "echo", arguments: { message: "after cancel" } });
    expect(JSON.stringify(echo.content)).toContain("after cancel");
  });

  it("passes resources, prompts, completions and logging through", async () => {
    const resources = await gw.client.listResources();
    expect(resources.resources.length).toBeGreaterThan(0);
    const first = resources.resources[0]!;
    const read = await gw.client.readResource({ uri: first.uri });
    expect(read.contents[0]?.uri).toBe(first.uri);
    const direct0 = await direct.client.listResources();
    expect(resources).toEqual(direct0);

    const prompt = await gw.client.getPrompt({ name: "simple-prompt" });
    expect(prompt.messages.length).toBeGreaterThan(0);
    const prompts = await gw.client.listPrompts();
    expect(prompts).toEqual(await direct.client.listPrompts());

    await expect(gw.client.setLoggingLevel("debug")).resolves.toBeDefined();
  });

  it("relays a server→client sampling request and its answer", async () => {
    const tools = await stableTools(gw);
    expect(tools.map((t) => t.name)).toContain("trigger-sampling-request");
    const res = await gw.client.callTool(
      { name: "trigger-sampling-request", arguments: { prompt: "ping from server", maxTokens: 10 } },
      undefined,
      { timeout: 20_000 },
    );
    expect(JSON.stringify(res.content)).toContain("sampled:");
    expect(JSON.stringify(res.content)).toContain("ping from server");
  });

  it("relays server notifications (logging messages) unchanged", async () => {
    const seen: unknown[] = [];
    gw.client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => {
      seen.push(n.params);
    });
    gw.client.setNotificationHandler(ProgressNotificationSchema, () => {});
    await stableTools(gw);
    await gw.client.callTool({ name: "toggle-simulated-logging", arguments: {} });
    await waitFor(() => seen.length > 0 || undefined, 15_000);
    await gw.client.callTool({ name: "toggle-simulated-logging", arguments: {} });
    expect(seen.length).toBeGreaterThan(0);
  });
});

describe("server-everything behind a gateway that asks a human", () => {
  it("keeps a call's progress increasing across the wait for approval and the server's own steps", async () => {
    const gw = rawGateway({
      args: ["--label", "everything", "--approval-timeout", "30000", "--", NODE, ...EVERYTHING.args()],
    });
    try {
      await gw.initialize({ protocolVersion: "2025-06-18" });
      await gw.request("tools/list");
      gw.send({
        jsonrpc: "2.0",
        id: "long",
        method: "tools/call",
        params: {
          name: "trigger-long-running-operation",
          arguments: { duration: 1, steps: 4 },
          _meta: { progressToken: "tok-A" },
        },
      });
      // the gateway's own progress while the call waits: "waiting for human approval of …"
      await gw.next(
        (m) => m.method === "notifications/progress" && /waiting for human/.test(m.params.message),
      );
      await decideByCli(
        gw.stateDir,
        "approve",
        (await nextStoredRequest(gw.stateDir)).request,
        "--for",
        "call",
      );
      const answer = await gw.next((m) => m.id === "long", 20_000);
      expect(JSON.stringify(answer.result.content)).toContain("completed");
      const progress = gw
        .messages()
        .filter((m) => m.method === "notifications/progress" && m.params.progressToken === "tok-A")
        .map((m) => m.params as { progress: number; total?: number; message?: string });
      // the gateway's step(s), then the server's four (1/4 … 4/4 as it wrote them), moved past them
      const server = progress.filter((p) => !/waiting for human/.test(p.message ?? ""));
      expect(server).toHaveLength(4);
      expect(progress.length).toBeGreaterThan(server.length);
      const values = progress.map((p) => p.progress);
      for (let i = 1; i < values.length; i++) expect(values[i]).toBeGreaterThan(values[i - 1] as number);
      // total moved with them: the last step is still the whole
      const last = server[3];
      expect(last?.progress).toBe(last?.total);
      expect(server.map((p) => (p.total as number) - p.progress)).toEqual([3, 2, 1, 0]);
    } finally {
      await gw.close();
    }
  });
});

describe("server-everything's tasks (2025-11-25) behind the gateway", () => {
  it("are not offered: no tasks capability or task hints reach the client, and a call asked as a task runs as a plain, recorded call", async () => {
    // the server itself offers tasks, and simulate-research-query requires one
    const direct = rawPeer(NODE, EVERYTHING.args());
    const gw = rawGateway({
      args: ["--label", "everything", "--approval", "none", "--", NODE, ...EVERYTHING.args()],
    });
    try {
      const own = await direct.initialize({ protocolVersion: "2025-11-25" });
      expect(own.result.capabilities.tasks).toBeDefined();
      const ownTools = (await direct.request("tools/list")).result.tools as { execution?: unknown }[];
      expect(ownTools.some((t) => t.execution !== undefined)).toBe(true);

      const init = await gw.initialize({ protocolVersion: "2025-11-25" });
      expect(init.result.capabilities.tasks).toBeUndefined();
      expect(init.result.capabilities.tools).toBeDefined();
      const tools = (await gw.request("tools/list")).result.tools as { name: string; execution?: unknown }[];
      expect(tools.map((t) => t.name)).toContain("simulate-research-query");
      expect(tools.filter((t) => JSON.stringify(t.execution ?? {}).includes("taskSupport"))).toEqual([]);

      // a client that asks for a task anyway: the server gets a plain call and answers it as one
      // (a tool that requires a task says so in an isError result), never with a task handle
      const asTask = await gw.request("tools/call", {
        name: "simulate-research-query",
        arguments: { topic: "cats" },
        task: { ttl: 60_000 },
      });
      expect(asTask.result.task).toBeUndefined();
      expect(asTask.result.isError).toBe(true);
      expect(JSON.stringify(asTask.result.content)).toMatch(/requires task augmentation/);
      const echo = await gw.request("tools/call", {
        name: "echo",
        arguments: { message: "plain" },
        task: { ttl: 60_000 },
      });
      expect(echo.result.task).toBeUndefined();
      expect(JSON.stringify(echo.result.content)).toContain("plain");
      // what the audit says is what the call did
      const ends = await waitFor(async () => {
        const e = (await auditEvents(gw.stateDir)).filter((x) => x.type === "tool_result");
        return e.length === 2 ? e : undefined;
      }, 10_000);
      expect(ends.map((e) => [e.tool, e.outcome])).toEqual([
        ["simulate-research-query", "tool-error"],
        ["echo", "ok"],
      ]);
    } finally {
      await Promise.all([direct.close(), gw.close()]);
    }
  });
});
