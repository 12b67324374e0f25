// A new approval request (HumanAsker) with the gateway's audit sink on a real store: it is in the
// store only with its approval_requested record, while another writer takes the store's lock at
// any moment.
import { describe, expect, it } from "vitest";
import { AuditLog } from "../../src/audit/log.js";
import { auditSink } from "../../src/gateway/auditSink.js";
import type { Store } from "../../src/store/db.js";
import { waitFor } from "../helpers/files.js";
import { holdStoreLock } from "../helpers/lock.js";
import {
  callOf,
  chainEvents,
  makeAuthorizer,
  publishPreview,
  requestCount,
  testRun,
  twoConnectionsPerTest,
} from "./helpers.js";

let dir: string;
let db: Store;
let other: Store;
twoConnectionsPerTest("portcullis-asked-", (s) => {
  ({ dir, db, other } = s);
});

const A = "01JQ7R4S4S0QJ7GZP1S2AAAAAA";
const quiet = { info() {}, warn() {}, debug() {}, status() {} };

describe("a new approval request", () => {
  it("is never stored without its record: a writer taking the lock as the human is told loses nothing", async () => {
    const run = testRun(db);
    const events = auditSink(AuditLog.open(db, dir, { sync: "normal" }), quiet);
    const timeout = Number(db.pragma("busy_timeout", { simple: true }));
    let held = false;
    const { auth } = makeAuthorizer(db, run, {
      events,
      timeoutMs: 300,
      // As the human is told of the request, another connection (an `approve`, any command
      // opening the store) takes the write lock, and keeps it past the busy timeout while the
      // sink writes its group.
      onRequest: () => {
        db.pragma("busy_timeout = 50");
        other.exec("BEGIN IMMEDIATE");
        held = true;
      },
    });
    const got = auth.obtain(callOf(publishPreview, A));
    try {
      // the human is told once the request is stored, by a group of the sink a turn or more later:
      // waited for (a fixed 100 ms could run out first on a loaded machine), then held past the
      // connection's 50 ms busy timeout while the sink writes
      await waitFor(() => held, 10_000, "the human to be told of the request");
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(held).toBe(true);
    } finally {
      if (other.inTransaction) other.exec("COMMIT");
      db.pragma(`busy_timeout = ${timeout}`);
    }
    expect("error" in (await got)).toBe(true); // nobody decided within the hold
    events.flush();
    expect(requestCount(db, run)).toBe(1);
    const asked = (await chainEvents(dir)).filter((e) => e.type === "approval_requested");
    expect(asked).toHaveLength(1);
  });

  it("made while another process holds the lock past the busy timeout, is stored once it is free, and recorded once", async () => {
    const run = testRun(db);
    const events = auditSink(AuditLog.open(db, dir, { sync: "normal" }), quiet);
    const { auth } = makeAuthorizer(db, run, { events, timeoutMs: 300 });
    const timeout = Number(db.pragma("busy_timeout", { simple: true }));
    db.pragma("busy_timeout = 50");
    let got: ReturnType<typeof auth.obtain>;
    try {
      const lock = await holdStoreLock(dir);
      try {
        got = auth.obtain(callOf(publishPreview, A));
        await new Promise((resolve) => setTimeout(resolve, 300));
        expect(requestCount(db, run)).toBe(0);
      } finally {
        await lock.release();
      }
      expect("error" in (await got)).toBe(true); // nobody decided within the hold
    } finally {
      db.pragma(`busy_timeout = ${timeout}`);
    }
    events.flush();
    expect(requestCount(db, run)).toBe(1);
    const asked = (await chainEvents(dir)).filter((e) => e.type === "approval_requested");
    expect(asked).toHaveLength(1);
  });
});
