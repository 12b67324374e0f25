// A store whose header says no schema version (0: migrated last by a portcullis from before the
// header was written), which the opening writes there once (writeHeaderVersion, src/store/db.ts),
// on a store that cannot be written: that write is the opening's first, so it is the one refused.
// The refusal must be the sentence probeWritable's gives (naming the file and the fix), exit 2,
// and the commands that only read must still read the store. Real CLI processes; the read-only
// file binds only a user who is not root (test/helpers/otherUser.ts), the full disk is a small
// tmpfs (test/helpers/smallDisk.ts).
import { chmodSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { runCli } from "../helpers/gateway.js";
import { unprivilegedUser } from "../helpers/otherUser.js";
import { NODE } from "../helpers/paths.js";
import { smallDisk } from "../helpers/smallDisk.js";
import { newStateDir } from "../helpers/state.js";

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

/** The header's version set back to 0, as a portcullis from before the header left it. */
function headerAtZero(db: string): void {
  const store = new Database(db);
  store.pragma("user_version = 0");
  store.close();
}

function headerVersion(db: string): number {
  const store = new Database(db, { readonly: true });
  try {
    return Number(store.pragma("user_version", { simple: true }));
  } finally {
    store.close();
  }
}

describe("a store whose header says no version, which cannot be written", () => {
  it("read-only: run refuses it in probeWritable's sentence (exit 2); status reads it", async (ctx) => {
    const stateDir = newStateDir();
    const db = join(stateDir, "portcullis.db");
    headerAtZero(db);
    const user = unprivilegedUser([stateDir]);
    if (!user) return ctx.skip("no user whom file modes bind can run the built CLI here");
    const as = { stateDir, env: { HOME: stateDir }, ...user.spawn };
    chmodSync(db, 0o444);
    cleanup.push(() => chmodSync(db, 0o600));
    const fix = `To fix it: make it and its directory writable by their owner (chmod u+w ${db} ${stateDir}; on a read-only file system, remount it read-write).`;
    const r = await runCli(["run", "--label", "ro", "--", NODE, "-e", "setInterval(() => {}, 1000)"], as);
    expect(r.stderr).toBe(
      `portcullis run: the store ${db} cannot be written (the file, or its directory, is read-only). ${fix}\n`,
    );
    expect(r.code).toBe(2);
    const status = await runCli(["status"], as);
    expect(status.code).toBe(0);
    expect(status.stderr).toContain(
      `portcullis status: the store ${db} cannot be written (the file, or its directory, is read-only). Read as it is, without writing;`,
    );
    expect(status.stderr).toContain(fix);
    // nothing was written: the header still says no version
    expect(headerVersion(db)).toBe(0);
  });

  it("on a full disk: run refuses it in the disk's sentence (exit 2); status reads it", async (ctx) => {
    const disk = smallDisk(cleanup);
    if (typeof disk === "string") return ctx.skip(disk);
    const db = join(disk.stateDir, "portcullis.db");
    // kept open by another connection, as a running gateway keeps it: its -wal and -shm files are
    // there, so the opening gets past them to the header's write (a closed store on a full disk
    // is refused earlier, as its -shm file cannot be made)
    const holder = new Database(db);
    cleanup.push(() => {
      holder.close();
    });
    holder.pragma("user_version = 0");
    disk.fill();
    const fix = `To fix it: free space on the file system that holds ${disk.stateDir} (df -h ${disk.stateDir} shows what is left).`;
    const r = await runCli(["run", "--label", "full", "--", NODE, "-e", "setInterval(() => {}, 1000)"], {
      stateDir: disk.stateDir,
    });
    expect(r.stderr).toBe(`portcullis run: the store ${db} cannot be written: the disk is full. ${fix}\n`);
    expect(r.code).toBe(2);
    const status = await runCli(["status"], { stateDir: disk.stateDir });
    expect(status.code).toBe(0);
    expect(status.stderr).toContain(
      `portcullis status: the store ${db} cannot be written: the disk is full.`,
    );
    expect(status.stderr).toContain(fix);
    disk.free();
    // with space again, the next opening writes the header
    expect((await runCli(["status"], { stateDir: disk.stateDir })).stderr).toBe("");
    expect(Number(holder.pragma("user_version", { simple: true }))).toBeGreaterThan(0);
  });
});
