// The store's connection settings that bound a long-lived gateway's memory.
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
});
