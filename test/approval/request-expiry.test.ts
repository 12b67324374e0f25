// A gateway's own expiry of its overdue approval requests (src/approval/requestExpiry.ts), with the
// gateway's audit sink on a real store: a request is closed only with its approval_expired record,
// while another writer takes the store's lock at any moment.
import { describe, expect, it } from "vitest";
import { RequestExpiry } from "../../src/approval/requestExpiry.js";
import { getRequest, insertRequest, newRequestId, type Review } from "../../src/approval/requests.js";
import type { Run } from "../../src/approval/runs.js";
import { AuditLog } from "../../src/audit/log.js";
import { auditSink } from "../../src/gateway/auditSink.js";
import type { Store } from "../../src/store/db.js";
import { holdStoreLock } from "../helpers/lock.js";
import { chainEvents, testRun, twoConnectionsPerTest } from "./helpers.js";

let dir: string;
let db: Store;
let other: Store;
twoConnectionsPerTest("portcullis-expiry-", (s) => {
  ({ dir, db, other } = s);
});

const LABEL = "inventory-local";
const quiet = { info() {}, warn() {}, debug() {}, status() {} };

/** A pending request of `run` whose time ran out a minute ago. */
function overdue(run: Run): string {
  const id = newRequestId();
  const now = Date.now();
  insertRequest(db, {
    request: id,
    agentRun: run.run,
    serverLabel: LABEL,
    executionEpoch: "01JQ7R4S4S0QJ7GZP1S2AAAAAA",
    catalogRevision: 1,
    tool: "publish_preview",
    fingerprint: "sha256:00",
    definition: null,
    credentialScope: [],
    mode: "session",
    review: {} as Review,
    createdAt: new Date(now - 11 * 60_000).toISOString(),
    expiresAt: new Date(now - 60_000).toISOString(),
    argumentsDigest: "sha256:00",
  });
  return id;
}

function expiryOf(run: Run) {
  const events = auditSink(AuditLog.open(db, dir, { sync: "normal" }), quiet);
  return { events, expiry: new RequestExpiry({ db, run: run.run, serverLabel: LABEL, log: quiet, events }) };
}

async function expiredRecords(id: string): Promise<number> {
  return (await chainEvents(dir)).filter((e) => e.type === "approval_expired" && e.approvalRequest === id)
    .length;
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

describe("the gateway's expiry of an overdue request", () => {
  it("is never closed without its record: a writer taking the lock right after the sweep loses nothing", async () => {
    const run = testRun(db);
    const id = overdue(run);
    const { events, expiry } = expiryOf(run);
    await impatient(async () => {
      expiry.sweep();
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
    // whatever the sweep could write then, the next one finishes it
    expiry.sweep();
    events.flush();
    expect(getRequest(db, id)!.state).toBe("expired");
    expect(await expiredRecords(id)).toBe(1);
  });

  it("stays pending, unrecorded, while the lock is held past the busy timeout; the next sweep closes and records it once", async () => {
    const run = testRun(db);
    const id = overdue(run);
    const { events, expiry } = expiryOf(run);
    const swept = await impatient(async () => {
      const lock = await holdStoreLock(dir);
      try {
        return expiry.sweep();
      } finally {
        await lock.release();
      }
    });
    events.flush();
    expect(swept).toBe(false);
    expect(getRequest(db, id)!.state).toBe("pending");
    expect(await expiredRecords(id)).toBe(0);
    expect(expiry.sweep()).toBe(true);
    events.flush();
    expect(getRequest(db, id)!.state).toBe("expired");
    expect(await expiredRecords(id)).toBe(1);
  });

  it("under a lock another program holds, a sweep asks for it briefly and leaves the request for the next sweep, rather than hold the event loop a busy timeout", async () => {
    // Before, the sweep's flush waited the connection's whole busy timeout (20 s here) with the
    // event loop held: the lock, let go after 3 s, was then taken and the request closed by this
    // very sweep. Now the sweep does not wait for it and says so: true would mean it waited.
    const run = testRun(db);
    const id = overdue(run);
    const { events, expiry } = expiryOf(run);
    const timeout = Number(db.pragma("busy_timeout", { simple: true }));
    db.pragma("busy_timeout = 20000");
    try {
      await holdStoreLock(dir, 3_000);
      expect(expiry.sweep()).toBe(false);
      expect(getRequest(db, id)!.state).toBe("pending");
    } finally {
      db.pragma(`busy_timeout = ${timeout}`);
    }
    // the lock let go, the next sweep closes and records it once
    await new Promise((resolve) => setTimeout(resolve, 3_500));
    expect(expiry.sweep()).toBe(true);
    events.flush();
    expect(getRequest(db, id)!.state).toBe("expired");
    expect(await expiredRecords(id)).toBe(1);
  }, 30_000);
});
