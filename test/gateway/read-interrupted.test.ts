// A guarded read (resources/read …) is recorded (`request_forwarded`) before it is forwarded, and
// gets exactly one end in the audit, as a tool call does: its answer (`tool_result`), or
// `call_interrupted` when the client cancels it after its record, when the server process that
// received it dies, or when its gateway is killed (closed by the next gateway). Real gateway,
// real lenient fixture server whose `hang:` reads are never answered.
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ResultSchema } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, describe, expect, it } from "vitest";
import { auditEvents } from "../helpers/approvals.js";
import { readJsonLines, removeDir, tempDir, waitFor } from "../helpers/files.js";
import { startGateway } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

type Event = Record<string, unknown>;

async function lenientGateway(stateDir = newStateDir()) {
  const dir = tempDir();
  const methodLog = join(dir, "methods.jsonl");
  const [command, ...args] = fixtureCommand("lenient");
  const config = {
    servers: {
      lenient: { command, args, env: { FIXTURE_METHOD_LOG: methodLog }, approval: { default: "none" } },
    },
  };
  writeFileSync(join(dir, "portcullis.json"), JSON.stringify(config, null, 2));
  const gw = await startGateway({ args: ["lenient"], cwd: dir, stateDir });
  cleanup.push(
    () => gw.close(),
    () => removeDir(dir),
  );
  const received = () =>
    existsSync(methodLog)
      ? readJsonLines<{ method: string; params: { uri?: string; arguments?: unknown } | null }>(methodLog)
      : [];
  /** the URIs of the reads that reached the server */
  const reached = () =>
    received()
      .filter((r) => r.method === "resources/read")
      .map((r) => r.params?.uri);
  /** the tools/calls that reached the server */
  const called = () => received().filter((r) => r.method === "tools/call").length;
  return { gw, stateDir, dir, reached, called };
}

/** The audit's record of the read of `uri`'s intent, and every end written for it since. */
async function readRecords(stateDir: string, method: string, count: number) {
  const events = await auditEvents(stateDir);
  const intents = events.filter((e) => e.type === "request_forwarded" && e.method === method);
  expect(intents.length).toBeGreaterThanOrEqual(count);
  const endsOf = (intent: Event) =>
    events.filter(
      (e) =>
        (e.type === "tool_result" || e.type === "call_interrupted") &&
        e.run === intent.run &&
        JSON.stringify(e.requestId) === JSON.stringify(intent.requestId),
    );
  return { events, intents, endsOf };
}

/** Waits until every recorded read has an end, then returns them in order. */
async function settledReads(stateDir: string, count: number) {
  return waitFor(
    async () => {
      const { intents, endsOf } = await readRecords(stateDir, "resources/read", count);
      const ends = intents.map(endsOf);
      return ends.every((e) => e.length >= 1) && intents.length >= count ? { intents, ends } : null;
    },
    15_000,
    "an end for every recorded read",
  );
}

describe("a guarded read gets exactly one end in the audit", () => {
  it("answered: tool_result; cancelled by the client after its record: call_interrupted (cancelled); its server killed: call_interrupted (epoch_transition)", async () => {
    const { gw, stateDir, reached } = await lenientGateway();

    // answered
    await gw.client.request({ method: "resources/read", params: { uri: "file:///ok" } }, ResultSchema);

    // cancelled after it reached the server (so after its record)
    const abort = new AbortController();
    const cancelled = gw.client
      .request({ method: "resources/read", params: { uri: "hang:cancel" } }, ResultSchema, {
        signal: abort.signal,
      })
      .catch((e) => e);
    await waitFor(() => reached().includes("hang:cancel"), 10_000, "the read to reach the server");
    abort.abort("the user gave up");
    await cancelled;

    // the server process dies while a read waits for its answer
    const line = await gw.waitForStderr(/\[lenient\] pid=(\d+)/);
    const serverPid = Number(/pid=(\d+)/.exec(line)![1]);
    const dying = gw.client
      .request({ method: "resources/read", params: { uri: "hang:crash" } }, ResultSchema)
      .catch((e) => e);
    await waitFor(() => reached().includes("hang:crash"), 10_000, "the read to reach the server");
    process.kill(serverPid, "SIGKILL");
    const e = (await dying) as { code?: number };
    expect(e.code).toBe(-32054); // epoch_transition

    const { intents, ends } = await settledReads(stateDir, 3);
    expect(intents).toHaveLength(3);
    expect(ends.map((x) => x.length)).toEqual([1, 1, 1]);
    expect(ends[0]![0]).toMatchObject({ type: "tool_result", method: "resources/read", outcome: "ok" });
    expect(ends[1]![0]).toMatchObject({
      type: "call_interrupted",
      method: "resources/read",
      reason: "cancelled",
      outcome: "unknown",
    });
    expect(ends[2]![0]).toMatchObject({
      type: "call_interrupted",
      method: "resources/read",
      reason: "epoch_transition",
      outcome: "unknown",
    });
  });

  it("a tools/call the client cancels once it was sent is closed then (cancelled, outcome unknown)", async () => {
    const { gw, stateDir, called } = await lenientGateway();
    const abort = new AbortController();
    const call = gw.client
      .callTool({ name: "echo", arguments: { message: "hang" } }, undefined, { signal: abort.signal })
      .catch((e) => e);
    await waitFor(() => called() === 1, 10_000, "the call to reach the server");
    abort.abort("the user gave up");
    await call;
    const events = await waitFor(
      async () => {
        const all = await auditEvents(stateDir);
        return all.some((e) => e.type === "tool_result" || e.type === "call_interrupted") ? all : null;
      },
      15_000,
      "the call's end",
    );
    expect(events.filter((e) => e.type === "tool_called")).toHaveLength(1);
    expect(events.filter((e) => e.type === "tool_result" || e.type === "call_interrupted")).toEqual([
      expect.objectContaining({
        type: "call_interrupted",
        tool: "echo",
        reason: "cancelled",
        outcome: "unknown",
      }),
    ]);
  });

  it("a read in flight when its gateway is killed is closed by the next gateway (gateway_gone)", async () => {
    const first = await lenientGateway();
    const hanging = first.gw.client
      .request({ method: "resources/read", params: { uri: "hang:killed" } }, ResultSchema)
      .catch((e) => e);
    await waitFor(() => first.reached().includes("hang:killed"), 10_000, "the read to reach the server");
    first.gw.kill("SIGKILL");
    await first.gw.exited;
    await hanging;

    const second = await lenientGateway(first.stateDir);
    await second.gw.client.listTools();
    const { intents, ends } = await settledReads(first.stateDir, 1);
    expect(intents).toHaveLength(1);
    expect(ends[0]).toEqual([
      expect.objectContaining({ type: "call_interrupted", reason: "gateway_gone", outcome: "unknown" }),
    ]);
  });
});
