// The gateway writer's WAL checkpoints, made by a thread of their own (src/store/checkpointer.ts):
// the writer's commits copy nothing back into the database, the thread does, and a thread that
// fails hands the checkpoints back to SQLite.
import { renameSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { AuditLog } from "../../src/audit/index.js";
import { Checkpointer } from "../../src/store/checkpointer.js";
import { openStore } from "../../src/store/db.js";
import { removeDir } from "../helpers/files.js";
import { newStateDir } from "../helpers/state.js";

let cleanup: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanup.reverse()) c();
  cleanup = [];
});

const event = (i: number) => ({
  type: "tool_result",
  run: "r",
  serverLabel: "s",
  requestId: i,
  outcome: "ok",
});
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
const size = (path: string) => statSync(path).size;

describe("WAL checkpoints off the writer's thread", () => {
  it("the writer's commits checkpoint nothing; the thread copies the WAL into the database", async () => {
    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    const db = openStore(stateDir);
    cleanup.push(() => db.close());
    const audit = AuditLog.open(db, stateDir, { sync: "normal" });
    cleanup.push(() => audit.close());
    const warnings: string[] = [];
    audit.checkpointOffThread((m) => warnings.push(m));
    expect(db.pragma("wal_autocheckpoint", { simple: true })).toBe(0);
    const file = join(stateDir, "portcullis.db");
    const before = size(file);
    // 3,000 commits of a record each: well past SQLite's own threshold of 1,000 WAL frames, and
    // past several of the thread's turns (one every 500 commits)
    for (let i = 0; i < 3000; i++) {
      audit.append(event(i));
      if (i % 50 === 49) await pause(1); // the event loop turns, as a gateway's does
    }
    // the thread's checkpoints have copied the records into the database file (the writer's
    // commits never do: its automatic checkpoint is off)
    for (let i = 0; i < 400 && size(file) < before + 1500 * 500; i++) await pause(10);
    expect(size(file)).toBeGreaterThan(before + 1500 * 500);
    expect(warnings).toEqual([]);
    expect(db.pragma("wal_autocheckpoint", { simple: true })).toBe(0);
  });

  it("a thread that cannot work hands the checkpoints back to SQLite, with a warning", async () => {
    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    const db = openStore(stateDir);
    cleanup.push(() => db.close());
    db.exec("CREATE TABLE t (v BLOB)");
    const warnings: string[] = [];
    const checkpointer = new Checkpointer(db, (m) => warnings.push(m));
    cleanup.push(() => checkpointer.close());
    expect(db.pragma("wal_autocheckpoint", { simple: true })).toBe(0);
    // the store's file is no longer where the thread would open it (the writer keeps its own)
    renameSync(join(stateDir, "portcullis.db"), join(stateDir, "moved.db"));
    const insert = db.prepare("INSERT INTO t (v) VALUES (randomblob(100))");
    for (let i = 0; i < 2000 && warnings.length === 0; i++) {
      insert.run();
      checkpointer.committed();
      if (i % 50 === 49) await pause(5);
    }
    for (let i = 0; i < 400 && warnings.length === 0; i++) await pause(10);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/checkpoint thread failed.*made by SQLite on the writer again/);
    expect(db.pragma("wal_autocheckpoint", { simple: true })).toBe(1000);
  });
});
