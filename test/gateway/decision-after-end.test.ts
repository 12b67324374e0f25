// A call whose decision is still under way when the connection's end has answered what it holds
// (the end waits for decisions at most 2 s: here another process keeps the store's write lock, so
// the call's intent record waits for it) and that comes back to be held (its server process died
// meanwhile and the next one's replayed handshake waits, so its catalog is not verified) gets the
// answer the end gives what it holds, and its records are its intent closed connection_ended: it is
// neither held (never answered, never closed) nor sent. A call that arrives once the end answered
// what it holds is refused at once, recorded authorization_denied identity_pending. The audit's
// chain is then verified by `portcullis audit verify`.
//
// Driven in-process (as late-handshake.test.ts is), in front of a real server process (the lenient
// fixture, its initialize held while a file exists), with a real store and a real other process
// holding its lock (test/helpers/lock.ts): through the CLI the end closes the client's output right
// after its bounded wait and holds the audit's writes that meet the lock, so a decision released
// after that wait is not visible on the wire; here the test plays the client, ends the connection
// as a signal or an HTTP session's end does (Gateway.answerWaiting), and releases the lock once
// that end returned.
//
// What failed before: the late decision held the call for a catalog nobody would fetch (its intent
// closed "redecided"): never answered, its refusal never recorded; the call that arrived after the
// end was held so too.
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { AuditLog } from "../../src/audit/index.js";
import { auditSink } from "../../src/gateway/auditSink.js";
import { Gateway } from "../../src/gateway/gateway.js";
import { openStore } from "../../src/store/db.js";
import type { Logger } from "../../src/util/log.js";
import { verifiedAuditEvents } from "../helpers/approvals.js";
import { readJsonLines, removeDir, waitFor } from "../helpers/files.js";
import { holdStoreLock } from "../helpers/lock.js";
import { FIXTURES, NODE } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";
import { quiet, supervisorIn } from "../helpers/supervisor.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

interface Sent {
  id?: unknown;
  result?: unknown;
  error?: { code: number; data?: Record<string, unknown> };
}

/**
 * An in-process gateway in front of the lenient fixture, listed; then another process takes the
 * store's lock, a call is sent (its intent record waits for the lock), its server process dies with
 * the next one's replayed initialize held, and the connection ends as a signal or an HTTP session's
 * end ends it (answerWaiting), its wait for the decision run out. Resolves once that end returned.
 */
async function endedWithDecisionUnderWay() {
  const dir = mkdtempSync(join(tmpdir(), "pc-decision-after-end-"));
  const stateDir = newStateDir();
  cleanup.push(() => removeDir(dir));
  cleanup.push(() => removeDir(stateDir));
  const hold = join(dir, "hold");
  const methodLog = join(dir, "methods.jsonl");
  const logged = () =>
    existsSync(methodLog) ? readJsonLines<{ method: string; pid: number }>(methodLog) : [];

  const warned: string[] = [];
  const log: Logger = { ...quiet, warn: (m) => void warned.push(m) };
  const db = openStore(stateDir);
  cleanup.push(() => void (db.open && db.close()));
  // the intent waits for the lock as long as the test holds it (not the 10 s busy timeout)
  const events = auditSink(AuditLog.open(db, stateDir), log, undefined, { patienceMs: 120_000 });
  const { sup } = supervisorIn(dir, {
    serverLabel: "lateend",
    command: NODE,
    args: [FIXTURES.lenient],
    env: {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      FIXTURE_METHOD_LOG: methodLog,
      FIXTURE_INIT_HOLD: hold,
    },
  });
  cleanup.push(() => sup.shutdown());
  const sent: Sent[] = [];
  const gateway = new Gateway({
    label: "lateend",
    onChange: "report",
    supervisor: sup,
    store: db,
    log,
    events,
    holdTimeoutMs: 120_000,
    downstream: { send: (m) => void sent.push(m as Sent), close: () => {} },
    onEnd: () => {},
  });
  await sup.start();
  const request = (id: string, method: string, params: Record<string, unknown> = {}) =>
    gateway.onClientLine(JSON.stringify({ jsonrpc: "2.0", id, method, params }));
  const answer = (id: string) => waitFor(() => sent.find((m) => m.id === id), 20_000, `the answer to ${id}`);

  request("init", "initialize", {
    protocolVersion: "2025-11-25",
    capabilities: {},
    clientInfo: { name: "t", version: "1" },
  });
  await answer("init");
  gateway.onClientLine(JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }));
  request("list", "tools/list");
  expect(await answer("list")).toHaveProperty("result");

  // another process takes the store's lock: the call's intent record waits for it
  const lock = await holdStoreLock(stateDir);
  let locked = true;
  cleanup.push(() => (locked ? lock.release() : undefined));
  request("call", "tools/call", { name: "echo", arguments: { message: "late" } });
  await waitFor(
    () => warned.some((l) => /is locked by another process: the audit records/.test(l)) || null,
    20_000,
    "the call's intent to meet the lock",
  );

  // its server process dies; the next one's replayed initialize waits
  const first = sup.current!;
  writeFileSync(hold, "");
  process.kill(first.child.pid!, "SIGKILL");
  await waitFor(
    () => logged().find((l) => l.method === "held initialize" && l.pid !== first.child.pid),
    20_000,
    "the replayed initialize",
  );

  // the connection ends (a signal, an HTTP session's end): its wait for the decision runs out
  await gateway.answerWaiting();
  expect(sent.filter((m) => m.id === "call")).toEqual([]);
  const release = async () => {
    locked = false;
    await lock.release();
  };
  /** The gateway's server stopped and its store closed: the audit, its chain verified. */
  const finish = async () => {
    events.flush();
    await sup.shutdown();
    db.close();
    return verifiedAuditEvents(stateDir);
  };
  return { sent, request, answer, release, finish };
}

describe("a decision that returns after the connection's end answered what it holds", () => {
  it("is answered as the end answers what it holds, its intent closed connection_ended, never held", async () => {
    const { sent, answer, release, finish } = await endedWithDecisionUnderWay();
    // the lock is released: the intent is written and the decision returns to a new epoch
    await release();
    const call = await answer("call");
    expect(call.error?.code, JSON.stringify(call)).toBe(-32053);
    expect(call.error?.data).toMatchObject({ error: "identity_pending" });
    const audit = await finish();
    expect(sent.filter((m) => m.id === "call")).toHaveLength(1);
    // its intent and that intent's end: no refusal recorded beside them
    expect(recordsOf(audit, "call")).toEqual([
      ["tool_called", null, null],
      ["call_interrupted", "connection_ended", "not_forwarded"],
    ]);
  }, 90_000);

  it("a call that arrives once the end answered what it holds is refused at once and recorded", async () => {
    const { sent, request, answer, release, finish } = await endedWithDecisionUnderWay();
    request("after", "tools/call", { name: "echo", arguments: { message: "after" } });
    const after = await answer("after");
    expect(after.error?.code, JSON.stringify(after)).toBe(-32053);
    expect(after.error?.data).toMatchObject({ error: "identity_pending" });
    await release();
    await answer("call");
    const audit = await finish();
    expect(sent.filter((m) => m.id === "after")).toHaveLength(1);
    expect(recordsOf(audit, "after")).toEqual([["authorization_denied", "identity_pending", null]]);
  }, 90_000);
});

/** The records of the client's request `id`: type, reason and outcome. */
function recordsOf(audit: Record<string, unknown>[], id: string): unknown[][] {
  return audit.filter((e) => e.requestId === id).map((e) => [e.type, e.reason ?? null, e.outcome ?? null]);
}
