// The store's connection settings: those that bound a long-lived gateway's memory, and how long
// it waits for another process's lock.
import { afterEach, describe, expect, it } from "vitest";
import { openStore, waitingAtMost } from "../../src/store/db.js";
import { removeDir } from "../helpers/files.js";
import { newStateDir } from "../helpers/state.js";

let cleanup: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanup.reverse()) c();
  cleanup = [];
});

describe("store connection", () => {
  it("keeps SQLite's page cache at 2 MB, not better-sqlite3's 16 MB (native memory a gateway would keep)", () => {
    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    const db = openStore(stateDir);
    cleanup.push(() => db.close());
    expect(db.pragma("cache_size", { simple: true })).toBe(-2000);
    expect(db.pragma("journal_mode", { simple: true })).toBe("wal");
  });

  it("waits another process's lock 10 s, or PORTCULLIS_BUSY_TIMEOUT_MS when that is a whole number of ms", () => {
    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    const saved = process.env.PORTCULLIS_BUSY_TIMEOUT_MS;
    cleanup.push(() => {
      if (saved === undefined) delete process.env.PORTCULLIS_BUSY_TIMEOUT_MS;
      else process.env.PORTCULLIS_BUSY_TIMEOUT_MS = saved;
    });
    const timeoutWith = (value: string | undefined) => {
      if (value === undefined) delete process.env.PORTCULLIS_BUSY_TIMEOUT_MS;
      else process.env.PORTCULLIS_BUSY_TIMEOUT_MS = value;
      const db = openStore(stateDir); // the open's write probe sets 0 for a moment, then this back
      try {
        return db.pragma("busy_timeout", { simple: true });
      } finally {
        db.close();
      }
    };
    expect(timeoutWith(undefined)).toBe(10_000);
    expect(timeoutWith("2500")).toBe(2500);
    for (const unusable of ["", "0", "-5", "1.5", "soon", "2147483648"])
      expect(timeoutWith(unusable), unusable).toBe(10_000);
  });

  it("waitingAtMost lowers the busy timeout for each write, the first included, and puts back the one of the moment", () => {
    // A prepared PRAGMA acts when compiled, not at its first run: a runner built on prepared
    // statements left the full timeout in place for its first write (a gateway froze on it).
    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    const db = openStore(stateDir);
    cleanup.push(() => db.close());
    db.pragma("busy_timeout = 600000");
    const brief = waitingAtMost(db, 50);
    expect(db.pragma("busy_timeout", { simple: true })).toBe(600000); // building it changes nothing
    const during = () => db.pragma("busy_timeout", { simple: true });
    for (let i = 0; i < 3; i++) {
      expect(brief(during)).toBe(50);
      expect(db.pragma("busy_timeout", { simple: true })).toBe(600000);
    }
    // the connection's timeout changed since (a gateway's end): that one is put back
    db.pragma("busy_timeout = 250");
    expect(brief(during)).toBe(50);
    expect(db.pragma("busy_timeout", { simple: true })).toBe(250);
    // already as low: left alone; and put back after a write that throws
    db.pragma("busy_timeout = 20");
    expect(brief(during)).toBe(20);
    db.pragma("busy_timeout = 1000");
    expect(() =>
      brief(() => {
        throw new Error("the write failed");
      }),
    ).toThrow("the write failed");
    expect(db.pragma("busy_timeout", { simple: true })).toBe(1000);
  });
});
