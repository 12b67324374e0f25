// onExpand "run" (Authorizer.catalogExpanded) with the gateway's audit sink on a real store: the
// run's grants end with their grants_revoked record, while another writer takes the store's lock
// at any moment; and calls that took a grant from the gateway's last read just before the change
// (sent together with it) are not recorded under it at step 8.
import { describe, expect, it } from "vitest";
import { getGrant } from "../../src/approval/grants.js";
import { AuditLog } from "../../src/audit/log.js";
import { auditSink } from "../../src/gateway/auditSink.js";
import type { Store } from "../../src/store/db.js";
import {
  callOf,
  chainEvents,
  decideNext,
  makeAuthorizer,
  publishPreview,
  testRun,
  twoConnectionsPerTest,
} from "./helpers.js";

let dir: string;
let db: Store;
let other: Store;
twoConnectionsPerTest("portcullis-expand-", (s) => {
  ({ dir, db, other } = s);
});

const A = "01JQ7R4S4S0QJ7GZP1S2AAAAAA";
const quiet = { info() {}, warn() {}, debug() {}, status() {} };

/** A run whose call of publish_preview a human approved for the session, its records written. */
async function approvedForTheSession() {
  const run = testRun(db);
  const events = auditSink(AuditLog.open(db, dir, { sync: "normal" }), quiet);
  const { auth } = makeAuthorizer(db, run, { events });
  const asked = auth.obtain(callOf(publishPreview, A));
  const { grant } = await decideNext(other, run, { approve: true, for: "session" });
  expect(await asked).toEqual({ grant: grant!.grant });
  events.flush();
  return { events, auth, grant };
}

describe("an expanding catalog change under onExpand run", () => {
  it("never ends the run's grants without their record: a writer taking the lock right after loses nothing", async () => {
    const { events, auth, grant } = await approvedForTheSession();
    const timeout = Number(db.pragma("busy_timeout", { simple: true }));
    db.pragma("busy_timeout = 50");
    try {
      auth.catalogExpanded({
        revision: 2,
        previousRevision: 1,
        expanding: [{ tool: "publish_everything", kind: "added", changes: [] }],
      });
      // In the same turn another connection (an `approve`, any command opening the store) takes
      // the write lock, and keeps it past the busy timeout while the sink writes its group.
      other.exec("BEGIN IMMEDIATE");
      try {
        await new Promise((resolve) => setImmediate(resolve));
        await new Promise((resolve) => setTimeout(resolve, 20));
      } finally {
        other.exec("COMMIT");
      }
    } finally {
      db.pragma(`busy_timeout = ${timeout}`);
    }
    events.flush();
    expect(getGrant(db, grant!.grant)!.endedAt).not.toBeNull();
    const revoked = (await chainEvents(dir)).filter(
      (e) => e.type === "grants_revoked" && (e.grants as string[]).includes(grant!.grant),
    );
    expect(revoked).toHaveLength(1);
    expect(revoked[0]).toMatchObject({ reason: "catalog change expands authority", revision: 2 });
  });

  it("under a lock another program keeps past the busy timeout: no grant covers a call from then on, nothing waits, and the grants end with their record once the lock goes", async () => {
    const { auth, grant } = await approvedForTheSession();
    // A short busy timeout: the explicit flush this replaced waited it with the loop held, then
    // gave up, and its fallback write threw SQLITE_BUSY out of catalogExpanded.
    const timeout = Number(db.pragma("busy_timeout", { simple: true }));
    db.pragma("busy_timeout = 300");
    other.exec("BEGIN IMMEDIATE");
    let held = true;
    try {
      expect(() =>
        auth.catalogExpanded({
          revision: 2,
          previousRevision: 1,
          expanding: [{ tool: "publish_everything", kind: "added", changes: [] }],
        }),
      ).not.toThrow();
      // deny first: the grant covers nothing here already, though its row is still live
      // (covering: the authorizer's own look, from a fresh read of the store)
      const covering = (auth as unknown as { covering(c: unknown, fresh: boolean): unknown }).covering;
      expect(covering.call(auth, callOf(publishPreview, A), true)).toBeNull();
      expect(getGrant(db, grant!.grant)!.endedAt).toBeNull();
      await new Promise((resolve) => setTimeout(resolve, 100));
      other.exec("COMMIT");
      held = false;
      // the sink's kept group goes once the lock is free: the row ends with its record
      for (let i = 0; i < 100 && getGrant(db, grant!.grant)!.endedAt === null; i++)
        await new Promise((resolve) => setTimeout(resolve, 50));
    } finally {
      if (held) other.exec("COMMIT");
      db.pragma(`busy_timeout = ${timeout}`);
    }
    expect(getGrant(db, grant!.grant)!.endedAt).not.toBeNull();
    const revoked = (await chainEvents(dir)).filter(
      (e) => e.type === "grants_revoked" && (e.grants as string[]).includes(grant!.grant),
    );
    expect(revoked).toHaveLength(1);
  });

  it("calls sent together with the change, each covered by a grant from the last read before it, are not recorded under it: step 8 refuses, and they ask a human", async () => {
    const { events, auth, grant } = await approvedForTheSession();
    // Decided from the last read (step 7) before the change is seen; their intents are written
    // with the sink's next group, after it (the window is one turn of the gateway's event loop,
    // which a test of real processes cannot aim at without timing: driven here, in its order).
    const calls = [callOf(publishPreview, A), callOf(publishPreview, A), callOf(publishPreview, A)];
    for (const call of calls) {
      const got = await auth.obtain(call);
      expect(got).toEqual({ grant: grant!.grant });
      call.grant = grant!.grant;
    }
    const steps8 = calls.map((call) => auth.condition(call));
    auth.catalogExpanded({
      revision: 2,
      previousRevision: 1,
      expanding: [{ tool: "publish_everything", kind: "added", changes: [] }],
    });
    // The grant's row is still live (it ends with the sink's next group): what stops each call is
    // this gateway's own mark of the grants it ended.
    expect(getGrant(db, grant!.grant)!.endedAt).toBeNull();
    for (const step8 of steps8)
      expect(step8?.(), "a call went out under a grant the change ended").toBe(false);
    events.flush();
    expect(getGrant(db, grant!.grant)!.endedAt).not.toBeNull();
    // decided again (the guard does so on a false step 8): nothing stale to report within the
    // epoch, no grant covers, and the call asks a human
    const again = calls[0]!;
    again.grant = null;
    expect(auth.stale(again)).toBeNull();
    const asked = auth.obtain(again);
    await decideNext(other, auth.run, { approve: false });
    const answer = await asked;
    expect("error" in answer && JSON.stringify(answer.error)).toContain("A human denied this call");
  });
});
