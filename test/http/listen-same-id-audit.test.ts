// Over `run --listen`, two POSTs of one session may carry the same client id at once (the
// session groups a process's connections; each POST gets its own wire id). The audit names both
// calls by that id, so it must not also join them by it: each intent keeps its own row in
// open_intents until its own end, a gateway killed with both open has both closed by the next
// one, and `audit activity` pairs each call with its own end. Real listener, real lenient
// fixture (its `hang:` reads are never answered), raw connections so each POST has its own.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { argumentsDigest } from "../../src/audit/index.js";
import { auditActivity, auditEvents } from "../helpers/approvals.js";
import { completeLines } from "../helpers/completeLines.js";
import { readJsonLines, removeDir, tempDir, waitFor } from "../helpers/files.js";
import { fixtureCommand } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";
import { type Listener, startListener } from "./listen.js";
import { Connection } from "./pipeline.js";
import { openSession } from "./raw.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

type Event = Record<string, unknown>;

const read = (id: number, uri: string) => ({ jsonrpc: "2.0", id, method: "resources/read", params: { uri } });
const cancel = (requestId: number) => ({
  jsonrpc: "2.0",
  method: "notifications/cancelled",
  params: { requestId, reason: "gives up" },
});

interface Setup {
  stateDir: string;
  l: Listener;
  /** two connections of one legacy session */
  a: Connection;
  b: Connection;
  session: Record<string, string>;
  /** the URIs of the reads that reached the server */
  reached(): string[];
}

async function setup(): Promise<Setup> {
  const dir = tempDir();
  const stateDir = newStateDir();
  cleanup.push(
    () => removeDir(dir),
    () => removeDir(stateDir),
  );
  const methodLog = join(dir, "methods.jsonl");
  const l = await listener(stateDir, methodLog);
  const session = { "mcp-session-id": await openSession(l) };
  const [a, b] = await Promise.all([Connection.open(l), Connection.open(l)]);
  cleanup.push(() => {
    a.close();
    b.close();
  });
  const reached = () =>
    existsSync(methodLog)
      ? readJsonLines<{ method: string; params: { uri?: string } | null }>(methodLog)
          .filter((r) => r.method === "resources/read")
          .map((r) => r.params?.uri ?? "")
      : [];
  return { stateDir, l, a, b, session, reached };
}

async function listener(stateDir: string, methodLog: string): Promise<Listener> {
  const l = await startListener(fixtureCommand("lenient"), {
    args: ["--approval", "none"],
    env: { FIXTURE_METHOD_LOG: methodLog },
    stateDir,
  });
  cleanup.push(() => l.close());
  return l;
}

/** Kills the gateway as a crash would (its server, in its own process group, with it). */
async function kill(l: Listener): Promise<void> {
  // from lines written whole: a chunk can end inside a pid, and a group of a cut pid is another's
  const pids = completeLines(l.stderr()).flatMap((line) => {
    const m = /\[lenient\] pid=(\d+)/.exec(line);
    return m ? [Number(m[1])] : [];
  });
  l.proc.kill("SIGKILL");
  await new Promise<void>((resolve) => (l.proc.exitCode !== null ? resolve() : l.proc.once("exit", resolve)));
  for (const pid of pids) {
    try {
      process.kill(-pid, "SIGKILL");
    } catch {}
  }
}

/** The two reads' intents and, for each, the ends joined to it by its call key. */
async function readsAndEnds(stateDir: string) {
  const events = await auditEvents(stateDir);
  const intents = events.filter((e) => e.type === "request_forwarded" && e.method === "resources/read");
  const endsOf = (intent: Event) =>
    events.filter(
      (e) => (e.type === "tool_result" || e.type === "call_interrupted") && e.callKey === intent.callKey,
    );
  return { intents, ends: intents.map(endsOf) };
}

/** Two reads under id 7, one per connection, both at the server (neither answered). */
async function twoReadsUnderOneId(s: Setup) {
  const aRead = s.a.post(read(7, "hang:a"), s.session);
  const bRead = s.b.post(read(7, "hang:b"), s.session);
  // a read still open when its gateway is killed fails with its connection: expected
  for (const r of [aRead, bRead]) r.catch(() => {});
  await waitFor(() => s.reached().length === 2, 10_000, "both reads to reach the server");
  return { aRead, bRead };
}

describe("two calls of one HTTP session under the same client id", () => {
  it("each keeps its own open intent: a gateway killed with both open has both closed by the next", async () => {
    const s = await setup();
    await twoReadsUnderOneId(s);
    await kill(s.l);

    await listener(s.stateDir, join(tempDir(), "methods.jsonl"));
    // both closed, each once
    const closed = (await auditEvents(s.stateDir)).filter(
      (e) => e.type === "call_interrupted" && e.reason === "gateway_gone",
    );
    expect(closed).toHaveLength(2);
    const { intents, ends } = await readsAndEnds(s.stateDir);
    expect(intents).toHaveLength(2);
    expect(intents.map((i) => i.requestId)).toEqual([7, 7]);
    expect(new Set(intents.map((i) => i.callKey)).size).toBe(2);
    for (const e of ends)
      expect(e).toEqual([
        expect.objectContaining({ type: "call_interrupted", reason: "gateway_gone", outcome: "unknown" }),
      ]);

    const calls = (await auditActivity(s.stateDir)).filter((c) => c.call === "7");
    expect(calls).toHaveLength(2);
    expect(calls.map((c) => [c.outcome, c.interruption])).toEqual([
      ["interrupted", "gateway_gone"],
      ["interrupted", "gateway_gone"],
    ]);
  });

  it("the one cancelled is closed alone; the other stays open until its own end", async () => {
    const s = await setup();
    const { aRead } = await twoReadsUnderOneId(s);
    // A cancels its read 7 on its own connection: that one ends, B's stays at the server
    expect((await s.a.post(cancel(7), s.session)).status).toBe(202);
    expect((await aRead).status).toBe(204);
    await waitFor(
      async () => (await readsAndEnds(s.stateDir)).ends.some((e) => e.length > 0),
      10_000,
      "the cancelled read's end",
    );
    await kill(s.l);

    await listener(s.stateDir, join(tempDir(), "methods.jsonl"));
    const { intents, ends } = await readsAndEnds(s.stateDir);
    expect(intents).toHaveLength(2);
    // A's read ended cancelled; B's was still open when the gateway was killed, and the next
    // gateway closed it: each end joined to its own intent
    const a = intents.findIndex((i) => i.paramsDigest === argumentsDigest({ uri: "hang:a" }));
    const b = intents.findIndex((i) => i.paramsDigest === argumentsDigest({ uri: "hang:b" }));
    expect([a, b].sort()).toEqual([0, 1]);
    expect(ends[a]).toEqual([expect.objectContaining({ type: "call_interrupted", reason: "cancelled" })]);
    expect(ends[b]).toEqual([expect.objectContaining({ type: "call_interrupted", reason: "gateway_gone" })]);

    // activity lists the calls in the order of their intents, each with its own end
    const calls = (await auditActivity(s.stateDir)).filter((c) => c.call === "7");
    expect(calls).toHaveLength(2);
    expect(calls[a]).toMatchObject({ outcome: "interrupted", interruption: "cancelled" });
    expect(calls[b]).toMatchObject({ outcome: "interrupted", interruption: "gateway_gone" });
  });
});
