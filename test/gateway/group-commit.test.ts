// The audit writer's group commit, through real gateways: calls in flight together share
// transactions, results are recorded after they were forwarded (in a transaction of their own,
// without an fsync), and neither costs a call its records: one linear chain across processes,
// each intent before its end, every intent closed, even when a gateway is killed right after a
// result reached its client. While other calls are in flight, a result rides in the next group.
import { renameSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { AuditLog, openRecords } from "../../src/audit/index.js";
import { auditSink } from "../../src/gateway/auditSink.js";
import { OpenIntents } from "../../src/gateway/openIntents.js";
import { unlockKeyring } from "../../src/keyring/keyring.js";
import { openStore } from "../../src/store/db.js";
import { stderrLogger } from "../../src/util/log.js";
import { removeDir } from "../helpers/files.js";
import { runCli, startGateway } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { newStateDir, TEST_PASSPHRASE } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

interface Opened {
  seq: number;
  writer: string;
  event: { type: string; run?: string; requestId?: unknown; [k: string]: unknown };
}

async function chain(stateDir: string): Promise<Opened[]> {
  const db = openStore(stateDir);
  try {
    const { auditPrivateKey } = await unlockKeyring(stateDir, TEST_PASSPHRASE);
    return [...openRecords(db, auditPrivateKey)].map((r) => ({
      seq: r.seq,
      writer: r.header.writer,
      event: r.event as Opened["event"],
    }));
  } finally {
    db.close();
  }
}

function openIntentRows(stateDir: string): number {
  const db = openStore(stateDir);
  try {
    return db.prepare("SELECT count(*) FROM open_intents").pluck().get() as number;
  } finally {
    db.close();
  }
}

/** Every tool_called closed exactly once, by a tool_result or a call_interrupted after it. */
function expectEveryIntentClosed(records: Opened[]): number {
  const key = (e: Opened["event"]) => JSON.stringify([e.run, e.requestId]);
  const opened = new Map<string, number>();
  const closed = new Map<string, number>();
  for (const r of records) {
    const k = key(r.event);
    if (r.event.type === "tool_called") {
      expect(opened.has(k)).toBe(false);
      opened.set(k, r.seq);
    } else if (r.event.type === "tool_result" || r.event.type === "call_interrupted") {
      expect(closed.has(k)).toBe(false);
      closed.set(k, r.seq);
    }
  }
  for (const [k, seq] of opened) {
    expect(closed.get(k), `the call ${k} (intent at seq ${seq}) is closed`).toBeGreaterThan(seq);
  }
  expect(closed.size).toBe(opened.size);
  return opened.size;
}

const echoGateway = (stateDir: string, label: string, more: string[] = []) =>
  startGateway({
    args: ["--label", label, "--approval", "none", ...more, "--", ...fixtureCommand("echo")],
    stateDir,
  });

describe("group commit of the audit log", () => {
  it("16 calls at a time in each of two gateways on one store: one linear chain, every intent closed after it", async () => {
    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    const gateways = await Promise.all([
      echoGateway(stateDir, "a"),
      echoGateway(stateDir, "b", ["--audit-sync", "normal"]),
    ]);
    for (const gw of gateways) cleanup.push(() => gw.close());
    await Promise.all(gateways.map((gw) => gw.client.listTools()));
    const rounds = 4;
    await Promise.all(
      gateways.map(async (gw, g) => {
        for (let round = 0; round < rounds; round++) {
          const results = await Promise.all(
            Array.from({ length: 16 }, (_, i) =>
              gw.client.callTool({ name: "echo", arguments: { message: `${g}-${round}-${i}` } }),
            ),
          );
          for (const [i, r] of results.entries())
            expect(r.content).toEqual([{ type: "text", text: `Echo: ${g}-${round}-${i}` }]);
        }
      }),
    );
    for (const gw of gateways) await gw.close();

    const verify = await runCli(["audit", "verify", "--json", "--state-dir", stateDir]);
    expect(verify.code).toBe(0);
    expect(JSON.parse(verify.stdout).ok).toBe(true);
    const records = await chain(stateDir);
    expect(records.map((r) => r.seq)).toEqual(records.map((_, i) => i + 1));
    // both wrote into the one chain (after init's own record, the approver key's pin)
    expect(
      new Set(records.filter((r) => r.event.type !== "approver_key_pinned").map((r) => r.writer)).size,
    ).toBe(2);
    expect(expectEveryIntentClosed(records)).toBe(2 * rounds * 16);
    expect(records.filter((r) => r.event.type === "tool_result")).toHaveLength(2 * rounds * 16);
    expect(openIntentRows(stateDir)).toBe(0);
  });

  it("a gateway killed as soon as a result reached its client: the intent is there, closed by its result or by the next gateway, and the chain verifies", async () => {
    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    for (let round = 0; round < 3; round++) {
      const gw = await echoGateway(stateDir, "killed");
      cleanup.push(() => gw.close());
      await gw.client.listTools();
      await gw.client.callTool({ name: "echo", arguments: { message: `warm-${round}` } });
      // the result record is written after the result was forwarded: kill between the two, or
      // just after, whichever comes first
      await gw.client.callTool({ name: "echo", arguments: { message: `last-${round}` } });
      gw.kill("SIGKILL");
      await gw.exited;
      await gw.close().catch(() => {});
    }
    // the next gateway closes what the killed ones left open
    const next = await echoGateway(stateDir, "next");
    await next.client.listTools();
    await next.close();

    const verify = await runCli(["audit", "verify", "--json", "--state-dir", stateDir]);
    expect(verify.code).toBe(0);
    expect(JSON.parse(verify.stdout).ok).toBe(true);
    const records = await chain(stateDir);
    expect(expectEveryIntentClosed(records)).toBe(6);
    const interrupted = records.filter((r) => r.event.type === "call_interrupted");
    for (const r of interrupted)
      expect(r.event).toMatchObject({ reason: "gateway_gone", outcome: "unknown" });
    expect(openIntentRows(stateDir)).toBe(0);
  });

  it("an intent is reported written only once an fsync of the WAL covered it; when none can, it is refused", async () => {
    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    const db = openStore(stateDir);
    cleanup.push(() => {
      db.close();
    });
    const audit = AuditLog.open(db, stateDir); // sync "full": intents are synced off the event loop
    expect(audit.canSyncLater).toBe(true);
    const sink = auditSink(audit, stderrLogger("test"));
    const intent = (requestId: number) => ({
      type: "tool_called" as const,
      run: "r",
      serverLabel: "s",
      requestId,
      tool: "echo",
      epoch: "e",
    });
    // several intents in one turn: one group, one commit, one fsync covers them; a lone one too
    expect(await Promise.all([1, 2, 3].map((i) => sink.emitDurable(intent(i))))).toEqual([true, true, true]);
    expect(await sink.emitDurable(intent(7))).toBe(true);
    // the WAL moved away under SQLite (its fsync would not cover the log other processes read):
    // refused, never true; the check of the store's files before the group finds it gone
    const fresh = AuditLog.open(db, stateDir);
    const failing = auditSink(fresh, stderrLogger("test"));
    renameSync(join(stateDir, "portcullis.db-wal"), join(stateDir, "moved-wal"));
    cleanup.push(() => renameSync(join(stateDir, "moved-wal"), join(stateDir, "portcullis.db-wal")));
    // a lone intent (synced on the event loop) and a group of two (synced in the thread pool)
    const gone = /portcullis\.db-wal was deleted or replaced/;
    await expect(failing.emitDurable(intent(4))).rejects.toThrow(gone);
    const pair = [5, 6].map((i) => failing.emitDurable(intent(i)));
    await Promise.all(pair.map((p) => expect(p).rejects.toThrow(gone)));
    audit.close();
    fresh.close();
  });

  it("a result rides in the next group while other calls (or guarded reads) are in flight, and commits at the end of its turn once none is", async () => {
    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    const db = openStore(stateDir);
    cleanup.push(() => {
      db.close();
    });
    const audit = AuditLog.open(db, stateDir, { sync: "normal" });
    // The ride's bound at 1 s instead of 2 ms: what is checked is which group a result rides in,
    // and two turns of a loaded machine's event loop can take longer than 2 ms.
    const sink = auditSink(audit, stderrLogger("test"), new OpenIntents(db, "gw"), { rideMs: 1_000 });
    const stored = () => db.prepare("SELECT count(*) FROM audit_records").pluck().get() as number;
    const rows = () => db.prepare("SELECT count(*) FROM open_intents").pluck().get() as number;
    const turn = () => new Promise((r) => setImmediate(r));
    const base = { run: "r", serverLabel: "s", tool: "echo", epoch: "e" };
    const intent = (requestId: number) => sink.emitDurable({ type: "tool_called", ...base, requestId });
    const result = (requestId: number) =>
      sink.emit({ type: "tool_result", ...base, requestId, outcome: "ok" });
    const read = (requestId: number) =>
      sink.emitDurable({
        type: "request_forwarded",
        ...base,
        tool: undefined,
        method: "resources/read",
        requestId,
      });

    // a guarded read and a call in flight; the call ends: its result waits, the read being open
    expect(await Promise.all([read(1), intent(2)])).toEqual([true, true]);
    const start = stored();
    result(2);
    await turn();
    await turn();
    expect(stored()).toBe(start); // not a transaction of its own
    // the next call's intent brings the group: the result, then the intent, in one
    expect(await intent(3)).toBe(true);
    expect(stored()).toBe(start + 2);
    expect(rows()).toBe(2); // the read and call 3 are open
    // call 3 ends while the read is still open, and no call follows: the bound writes it
    result(3);
    await turn();
    expect(stored()).toBe(start + 2);
    for (let i = 0; i < 1000 && stored() < start + 3; i++) await new Promise((r) => setTimeout(r, 10));
    expect(stored()).toBe(start + 3);
    expect(rows()).toBe(1);
    // the last one in flight ends: nothing would bring a group, it commits at the end of its turn
    sink.emit({
      type: "tool_result",
      ...base,
      tool: undefined,
      method: "resources/read",
      requestId: 1,
      outcome: "ok",
    });
    await turn();
    expect(stored()).toBe(start + 4);
    expect(rows()).toBe(0);
    audit.close();
  });
});
