// The audit writer's group commit, through real gateways: calls in flight together share
// transactions, results are recorded after they were forwarded (in a transaction of their own,
// without an fsync), and neither costs a call its records: one linear chain across processes,
// each intent before its end, every intent closed, even when a gateway is killed right after a
// result reached its client.
import { renameSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { AuditLog, openRecords } from "../../src/audit/index.js";
import { auditSink } from "../../src/gateway/auditSink.js";
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
    expect(new Set(records.map((r) => r.writer)).size).toBe(2); // both wrote into the one chain
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
    cleanup.push(() => db.close());
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
    // the WAL cannot be opened for its fsync any more (moved away under SQLite): refused, never true
    const fresh = AuditLog.open(db, stateDir);
    const failing = auditSink(fresh, stderrLogger("test"));
    renameSync(join(stateDir, "portcullis.db-wal"), join(stateDir, "moved-wal"));
    cleanup.push(() => renameSync(join(stateDir, "moved-wal"), join(stateDir, "portcullis.db-wal")));
    // a lone intent (synced on the event loop) and a group of two (synced in the thread pool)
    await expect(failing.emitDurable(intent(4))).rejects.toThrow(/could not be made durable/);
    const pair = [5, 6].map((i) => failing.emitDurable(intent(i)));
    for (const p of pair) await expect(p).rejects.toThrow(/could not be made durable/);
    audit.close();
    fresh.close();
  });
});
