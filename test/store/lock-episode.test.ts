// Writers that meet another process's lock and try again later: how long each try waits (the
// event loop is held meanwhile, better-sqlite3 being synchronous), and the asynchronous wait for
// the lock that an ending HTTP session uses. A real second process holds the lock.
import { afterEach, describe, expect, it } from "vitest";
import { isBusy, lockFreeSoon, openStore, waitingOnce } from "../../src/store/db.js";
import { removeDir } from "../helpers/files.js";
import { holdStoreLock } from "../helpers/lock.js";
import { newStateDir } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

function store() {
  const stateDir = newStateDir();
  cleanup.push(() => removeDir(stateDir));
  const db = openStore(stateDir);
  cleanup.push(() => {
    db.close();
  });
  db.pragma("busy_timeout = 600000");
  return { stateDir, db };
}

describe("waitingOnce", () => {
  it("waits its bound at the first meeting with the lock, then only briefly while it stays held; the bound again once a write went through", async () => {
    const { stateDir, db } = store();
    const rowWrite = waitingOnce(db, 200);
    /** the busy timeout in effect during the write, and whether the write met the lock */
    const tryWrite = (): { bound: number; busy: boolean } => {
      let bound = -1;
      try {
        rowWrite(() => {
          bound = Number(db.pragma("busy_timeout", { simple: true }));
          db.exec("BEGIN IMMEDIATE");
          db.exec("COMMIT");
        });
        return { bound, busy: false };
      } catch (e) {
        if (!isBusy(e)) throw e;
        return { bound, busy: true };
      }
    };
    expect(tryWrite()).toEqual({ bound: 200, busy: false });
    const lock = await holdStoreLock(stateDir);
    let held = true;
    cleanup.push(() => (held ? lock.release() : undefined));
    expect(tryWrite()).toEqual({ bound: 200, busy: true });
    // the lock is still held: the next tries (the next heartbeats) wait 10 ms, not 200 each
    expect(tryWrite()).toEqual({ bound: 10, busy: true });
    expect(tryWrite()).toEqual({ bound: 10, busy: true });
    // another writer on the same connection shares the episode (one row per HTTP session)
    const otherRow = waitingOnce(db, 200);
    let otherBound = -1;
    expect(() =>
      otherRow(() => {
        otherBound = Number(db.pragma("busy_timeout", { simple: true }));
        db.exec("BEGIN IMMEDIATE");
      }),
    ).toThrow();
    expect(otherBound).toBe(10);
    await lock.release();
    held = false;
    expect(tryWrite()).toEqual({ bound: 10, busy: false });
    // the episode ended with that write: the full bound again
    expect(tryWrite()).toEqual({ bound: 200, busy: false });
    expect(db.pragma("busy_timeout", { simple: true })).toBe(600000);
  });
});

describe("lockFreeSoon", () => {
  it("waits for the lock with the event loop free, true once it is released", async () => {
    const { stateDir, db } = store();
    expect(await lockFreeSoon(db, 60_000)).toBe(true);
    const lock = await holdStoreLock(stateDir);
    let held = true;
    cleanup.push(() => (held ? lock.release() : undefined));
    // timers run while it waits: the release below is one of them
    let ticks = 0;
    const tick = setInterval(() => ticks++, 20);
    cleanup.push(() => clearInterval(tick));
    const freed = lockFreeSoon(db, 60_000);
    let settled = false;
    void freed.then(() => {
      settled = true;
    });
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(settled).toBe(false);
    expect(ticks).toBeGreaterThan(0);
    await lock.release();
    held = false;
    expect(await freed).toBe(true);
    // the connection's own timeout is left as it was
    expect(db.pragma("busy_timeout", { simple: true })).toBe(600000);
  });

  it("gives up after its patience while the lock stays held, false", async () => {
    const { stateDir, db } = store();
    const lock = await holdStoreLock(stateDir);
    cleanup.push(() => lock.release());
    expect(await lockFreeSoon(db, 300)).toBe(false);
    expect(db.pragma("busy_timeout", { simple: true })).toBe(600000);
  });
});
