// The store's connection settings: those that bound a long-lived gateway's memory, and how long
// it waits for another process's lock.
import { afterEach, describe, expect, it } from "vitest";
import { openStore } from "../../src/store/db.js";
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
});
