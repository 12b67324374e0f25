// Two clients in one process share one modern-era session over `run --listen` (the front groups
// a process's 2026-07-28 requests), and each counts its ids from its own start: both may have a
// request 7 open at once. A cancellation names only an id, so the session must not take it for
// whichever request 7 came last: it cancels the one sent on the cancellation's own connection,
// ignores one that came late for its connection's own request, and cancels none when it cannot
// tell which was meant. Raw sockets, so the test chooses each message's connection.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { decideByCli, nextStoredRequest, type Pending } from "../helpers/approvals.js";
import { readJsonLines, removeDir, tempDir, waitFor } from "../helpers/files.js";
import { FIXTURES, NODE } from "../helpers/paths.js";
import { type Listener, startListener } from "./listen.js";
import { Connection, modernEnvelope, modernRequester } from "./pipeline.js";
import type { RawResponse } from "./raw.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const MODERN = modernEnvelope("shared-cancel");
const request = modernRequester("shared-cancel");
const call = (id: number, name: string, args: Record<string, string>) =>
  request(id, "tools/call", { name, arguments: args });
const cancel = (requestId: number) => ({
  jsonrpc: "2.0",
  method: "notifications/cancelled",
  params: { requestId, reason: "gives up", _meta: MODERN },
});

interface Setup {
  l: Listener;
  /** the tools the server ran, in order */
  ran(): string[];
  /** two connections of this process, each a client of its own; and a third */
  a: Connection;
  b: Connection;
  c: Connection;
  seen: Set<string>;
}

/** A listener in front of the modern fixture (calls wait for approval), and three connections. */
async function setup(): Promise<Setup> {
  const dir = tempDir();
  cleanup.push(() => removeDir(dir));
  const record = join(dir, "calls.jsonl");
  const l = await startListener([NODE, FIXTURES.modern], { env: { FIXTURE_RECORD: record } });
  cleanup.push(() => l.close());
  const [a, b, c] = await Promise.all([Connection.open(l), Connection.open(l), Connection.open(l)]);
  cleanup.push(() => {
    for (const x of [a, b, c]) x.close();
  });
  // one session for the process: A discovers and lists, B lists under its own id 1
  expect((await a.post(request(1, "server/discover"))).status).toBe(200);
  expect((await a.post(request(2, "tools/list"))).status).toBe(200);
  expect((await b.post(request(1, "tools/list"))).status).toBe(200);
  const ran = () => (existsSync(record) ? readJsonLines<{ tool: string }>(record).map((r) => r.tool) : []);
  return { l, ran, a, b, c, seen: new Set() };
}

/** Sends a call and waits until it waits for a human: its approval request. */
async function pendingCall(s: Setup, on: Connection, body: object): Promise<[Promise<RawResponse>, Pending]> {
  const answer = on.post(body);
  const pending = await nextStoredRequest(s.l.stateDir, s.seen);
  return [answer, pending];
}

/** The tool a call's answer says ran (the fixture echoes its name back). */
function toolOf(r: RawResponse): string {
  expect(r.status, r.body).toBe(200);
  const msg = JSON.parse(r.body) as { id: unknown; result?: { content: { text: string }[] } };
  expect(msg.id).toBe(7);
  expect(msg.result, r.body).toBeDefined();
  return (JSON.parse(msg.result!.content[0]!.text) as { tool: string }).tool;
}

describe("a cancellation in a session two clients of one process share", () => {
  it("ends the request sent on its own connection, not the other client's under the same id", async () => {
    const s = await setup();
    const [bCall, bPending] = await pendingCall(s, s.b, call(7, "echo", { text: "B" }));
    const [aCall, aPending] = await pendingCall(
      s,
      s.a,
      call(7, "delete_environment", { environment: "prod" }),
    );
    expect([bPending.tool, aPending.tool]).toEqual(["echo", "delete_environment"]);
    // B cancels its request 7, on its own connection (written while its POST still waits)
    const bCancel = s.b.post(cancel(7));
    const first = await Promise.race([
      aCall.then((r) => ["A", r.status] as const),
      bCall.then((r) => ["B", r.status] as const),
    ]);
    expect(first).toEqual(["B", 204]); // B's exchange ended with no answer
    expect((await bCancel).status).toBe(202);
    // A's call was left alone: approved, it runs and A gets its answer
    await decideByCli(s.l.stateDir, "approve", aPending.request);
    expect(toolOf(await aCall)).toBe("delete_environment");
    expect(s.ran()).toEqual(["delete_environment"]);
  });

  it("cancels neither when both were sent on other connections, and says so", async () => {
    const s = await setup();
    const [bCall, bPending] = await pendingCall(s, s.b, call(7, "echo", { text: "B" }));
    const [aCall, aPending] = await pendingCall(
      s,
      s.a,
      call(7, "delete_environment", { environment: "prod" }),
    );
    // from a third connection: it cannot be told whose request 7 is meant
    expect((await s.c.post(cancel(7))).status).toBe(202);
    // each still gets its own answer
    await decideByCli(s.l.stateDir, "approve", aPending.request);
    expect(toolOf(await aCall)).toBe("delete_environment");
    await decideByCli(s.l.stateDir, "approve", bPending.request);
    expect(toolOf(await bCall)).toBe("echo");
    await waitFor(
      () => /none sent on the cancellation's connection.*none is cancelled/.test(s.l.stderr()),
      10_000,
      "the warning that the cancellation was not applied",
    );
  });

  it("a cancellation that comes late for its connection's own request ends no other", async () => {
    const s = await setup();
    const [bCall, bPending] = await pendingCall(s, s.b, call(7, "echo", { text: "B" }));
    const [aCall, aPending] = await pendingCall(
      s,
      s.a,
      call(7, "delete_environment", { environment: "prod" }),
    );
    await decideByCli(s.l.stateDir, "approve", bPending.request);
    expect(toolOf(await bCall)).toBe("echo");
    // B's cancellation crossed its answer: it names B's request 7, which is over
    expect((await s.b.post(cancel(7))).status).toBe(202);
    await decideByCli(s.l.stateDir, "approve", aPending.request);
    expect(toolOf(await aCall)).toBe("delete_environment");
  });
});
