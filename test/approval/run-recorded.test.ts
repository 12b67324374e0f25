// An agent run's start (beginAgentRun) with the gateway's audit sink on a real store: the run is
// in the store only with its run_started record (the process chain that launched the gateway),
// while another writer takes the store's lock at any moment.
import { describe, expect, it } from "vitest";
import { getRun } from "../../src/approval/runs.js";
import { DecisionVerifier } from "../../src/approval/trust.js";
import { AuditLog } from "../../src/audit/log.js";
import { beginAgentRun, endAgentRun } from "../../src/cli/agentRun.js";
import { commandLineServer } from "../../src/config/config.js";
import { auditSink } from "../../src/gateway/auditSink.js";
import type { Store } from "../../src/store/db.js";
import { holdStoreLock } from "../helpers/lock.js";
import { chainEvents, twoConnectionsPerTest } from "./helpers.js";

let dir: string;
let db: Store;
let other: Store;
twoConnectionsPerTest("portcullis-run-", (s) => {
  ({ dir, db, other } = s);
});

const quiet = { info() {}, warn() {}, debug() {}, status() {} };

function begin() {
  const events = auditSink(AuditLog.open(db, dir, { sync: "normal" }), quiet);
  const settings = {
    server: commandLineServer("inventory-local", "node", ["server.js"]),
    stateDir: dir,
    store: db,
    events,
    verifier: new DecisionVerifier(db, dir),
  };
  return {
    events,
    begin: () =>
      beginAgentRun(settings, "gateway-1", quiet, { fromPid: process.pid }, () => ({
        record: null,
        revision: 1,
      })),
  };
}

function storedRuns(): string[] {
  return (db.prepare("SELECT run FROM runs").all() as { run: string }[]).map((r) => r.run);
}

/** Runs `body` with this connection's busy timeout at 50 ms (a lock held past it fails a write). */
async function impatient<T>(body: () => Promise<T>): Promise<T> {
  const timeout = Number(db.pragma("busy_timeout", { simple: true }));
  db.pragma("busy_timeout = 50");
  try {
    return await body();
  } finally {
    db.pragma(`busy_timeout = ${timeout}`);
  }
}

describe("an agent run's start", () => {
  it("is never stored without its run_started record: a writer taking the lock right after loses nothing", async () => {
    const { events, begin: start } = begin();
    const { run } = await impatient(async () => {
      const begun = start();
      // In the same turn another connection (an `approve`, any command opening the store) takes
      // the write lock, and keeps it past the busy timeout while the sink writes its group.
      other.exec("BEGIN IMMEDIATE");
      try {
        await new Promise((resolve) => setImmediate(resolve));
        await new Promise((resolve) => setTimeout(resolve, 20));
      } finally {
        other.exec("COMMIT");
      }
      return begun;
    });
    events.flush();
    expect(storedRuns()).toEqual([run.run]);
    const started = (await chainEvents(dir)).filter((e) => e.type === "run_started");
    expect(started.map((e) => e.run)).toEqual([run.run]);
    expect(started[0]).toMatchObject({ chainDigest: run.chainDigest });
  });

  it("while another process holds the lock past the busy timeout, is refused with nothing stored or recorded", async () => {
    const { events, begin: start } = begin();
    await impatient(async () => {
      const lock = await holdStoreLock(dir);
      try {
        expect(() => start()).toThrow();
      } finally {
        await lock.release();
      }
    });
    events.flush();
    expect(storedRuns()).toEqual([]);
    expect((await chainEvents(dir)).filter((e) => e.type === "run_started")).toEqual([]);
  });
});

describe("an agent run's end", () => {
  it("is never stored without its run_ended record: a writer taking the lock right after loses nothing", async () => {
    const { events, begin: start } = begin();
    const { run } = start();
    await impatient(async () => {
      endAgentRun(db, events, run, "inventory-local", quiet);
      // In the same turn another connection (an `approve`, any command opening the store) takes
      // the write lock, and keeps it past the busy timeout while the sink writes its group.
      other.exec("BEGIN IMMEDIATE");
      try {
        await new Promise((resolve) => setImmediate(resolve));
        await new Promise((resolve) => setTimeout(resolve, 20));
      } finally {
        other.exec("COMMIT");
      }
    });
    events.flush();
    const ended = getRun(db, run.run)!.endedAt !== null;
    const records = (await chainEvents(dir)).filter((e) => e.type === "run_ended" && e.run === run.run);
    // ended with its record, or still open for the next gateway to end (gateway_gone): never ended unrecorded
    expect(records).toHaveLength(ended ? 1 : 0);
    expect(ended).toBe(true);
  });

  it("ended meanwhile by another process (gateway_gone in its row, recorded or an edit): its gateway records its own end, once", async () => {
    const { events, begin: start } = begin();
    const { run } = start();
    other
      .prepare("UPDATE runs SET ended_at = ?, ended_reason = 'gateway_gone' WHERE run = ?")
      .run(new Date().toISOString(), run.run);
    // the gateway cannot read the sealed chain to tell a recorded end from an edit of the row, and
    // wrote no end of its run itself: it writes one (a second end, when that one was recorded)
    endAgentRun(db, events, run, "inventory-local", quiet);
    endAgentRun(db, events, run, "inventory-local", quiet);
    events.flush();
    expect((await chainEvents(dir)).filter((e) => e.type === "run_ended" && e.run === run.run)).toEqual([
      expect.objectContaining({ reason: "ended_in_store", rowReason: "gateway_gone" }),
    ]);
  });
});
