// doctor on a store that cannot be used says which cause it is, in --json too (`cause`, added
// beside ok/what/next), and the one thing to do for that cause: not one generic piece of advice
// ("move it aside") for a store another process holds locked, another program's database, a
// newer portcullis's store or a store link whose file is gone. A store that opens but another
// process keeps locked read as healthy. The real CLI; the lock held by a real SQLite connection
// in another process.
import { symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { lockHolders } from "../../src/identity/procLocks.js";
import { removeDir, sleep, tempDir, waitFor } from "../helpers/files.js";
import { runCli, startInventory } from "../helpers/gateway.js";
import { holdStoreLock } from "../helpers/lock.js";
import { makeProject } from "../helpers/project.js";
import { newKeyringOnlyStateDir, newStateDir } from "../helpers/state.js";

interface Finding {
  ok: boolean;
  what: string;
  next: string;
  cause?: string;
}

async function doctorOf(stateDir: string): Promise<{ code: number | null; findings: Finding[] }> {
  const r = await runCli(["doctor", "--json"], { stateDir });
  expect(r.stderr).toBe("");
  return { code: r.code, findings: (JSON.parse(r.stdout) as { findings: Finding[] }).findings };
}

/** The store's finding: the one that has a cause. */
function storeFinding(findings: Finding[]): Finding {
  const found = findings.filter((f) => f.cause !== undefined);
  expect(found, JSON.stringify(findings)).toHaveLength(1);
  return found[0]!;
}

/** A state directory whose store a command made, as a gateway leaves it. */
async function withStore(): Promise<{ stateDir: string; db: string }> {
  const stateDir = newStateDir();
  expect((await runCli(["vault", "list"], { stateDir })).code).toBe(0);
  return { stateDir, db: join(stateDir, "portcullis.db") };
}

describe("doctor on a store that cannot be used", () => {
  it("locked by another process: said, with the process holding it (not the gateways that have it open)", async () => {
    const { stateDir, db } = await withStore();
    // a gateway with the store open holds shared locks on it for its whole life: it is not named
    const project = makeProject("A");
    // (its heartbeat, a write, out of the way of the lock held below)
    const gw = await startInventory(project, ["--approval", "none"], {
      stateDir,
      env: { PORTCULLIS_STORE_CHECK_MS: "600000" },
    });
    await gw.client.listTools();
    const held = await holdStoreLock(stateDir);
    try {
      const { code, findings } = await doctorOf(stateDir);
      expect(code).toBe(1);
      expect(storeFinding(findings)).toEqual({
        ok: false,
        what: `the store ${db} is locked by another process: gateways cannot record calls or decisions until it lets go`,
        next: `end the program that holds it (pid ${held.pid} node), or finish its transaction (an sqlite3 shell inside BEGIN: COMMIT or ROLLBACK), then run doctor again`,
        cause: "locked",
      });
    } finally {
      await held.release();
    }
    // let go: nothing to report about the store
    const after = await doctorOf(stateDir);
    expect(after.findings.filter((f) => f.cause !== undefined)).toEqual([]);
    await gw.close();
    project.cleanup();
    removeDir(stateDir);
  }, 60_000);

  it.runIf(process.platform === "linux")(
    "busy: a gateway of this store holding the write lock past doctor's wait is said busy, not locked, and passes",
    async () => {
      const { stateDir, db } = await withStore();
      const project = makeProject("A");
      // (its heartbeat, a write, out of the way of the lock held below)
      const gw = await startInventory(project, ["--approval", "none"], {
        stateDir,
        env: { PORTCULLIS_STORE_CHECK_MS: "600000" },
      });
      await gw.client.listTools();
      // calls without end, so that the gateway is often inside a write: stopped (SIGSTOP) until it
      // is stopped inside one, its write lock held as in a long write (a large catalog, a slow disk)
      let flooding = true;
      const flood = (async () => {
        while (flooding)
          await Promise.all(
            Array.from({ length: 8 }, () =>
              gw.client.callTool({ name: "read_status", arguments: {} }).catch(() => null),
            ),
          );
      })();
      let stopped = false;
      const resume = () => {
        if (stopped) gw.kill("SIGCONT");
        stopped = false;
      };
      try {
        await waitFor(
          async () => {
            resume();
            await sleep(Math.random() * 10);
            gw.kill("SIGSTOP");
            stopped = true;
            await sleep(5); // the stop is delivered
            return lockHolders(db).includes(gw.pid);
          },
          60_000,
          "the gateway stopped inside a write",
        );
        const { code, findings } = await doctorOf(stateDir);
        expect(storeFinding(findings)).toEqual({
          ok: true,
          what: `the store ${db} is busy: a gateway of this store (pid ${gw.pid}) holds its write lock, longer than doctor's 2 s wait (a long write, which other gateways wait out)`,
          next: "nothing: other gateways wait up to their busy timeout (10 s) for it; run doctor again in a moment to see it let go",
          cause: "busy",
        });
        expect(code, JSON.stringify(findings)).toBe(0);
      } finally {
        resume();
        flooding = false;
        await flood;
        await gw.close();
        project.cleanup();
      }
      removeDir(stateDir);
    },
    120_000,
  );

  it("not a database, another program's database, a newer portcullis's: each its cause and its one step", async () => {
    const garbage = newKeyringOnlyStateDir();
    const garbageDb = join(garbage, "portcullis.db");
    writeFileSync(garbageDb, "not a database\n".repeat(100));
    expect(storeFinding((await doctorOf(garbage)).findings)).toMatchObject({
      ok: false,
      cause: "not-a-database",
      next: `restore ${garbageDb} from a backup of the state directory; without one, move it aside and keep it (mv ${garbageDb} ${garbageDb}.damaged): the next command creates a new, empty store and audit log`,
    });

    const other = newKeyringOnlyStateDir();
    const otherDb = join(other, "portcullis.db");
    const notes = new Database(otherDb);
    notes.exec("CREATE TABLE notes (body TEXT)");
    notes.close();
    expect(storeFinding((await doctorOf(other)).findings)).toMatchObject({
      ok: false,
      cause: "not-a-store",
      next: `it is another program's SQLite database: move it back where that program keeps it (mv ${otherDb} …); the next command creates a portcullis store in its place`,
    });

    const { stateDir: newer, db: newerDb } = await withStore();
    const later = new Database(newerDb);
    later.prepare("INSERT INTO schema_migrations (version, applied_at) VALUES (9999, 'later')").run();
    later.close();
    expect(storeFinding((await doctorOf(newer)).findings)).toMatchObject({
      ok: false,
      cause: "newer-schema",
      next: "run the newer portcullis, the one that upgraded it, for every command on this state directory, and point each MCP client's server entry at it (a gateway this older one started refuses the store once restarted); this one could misread or damage it",
    });
    for (const d of [garbage, other, newer]) removeDir(d);
  });

  it("missing: a link to a store that is gone is a problem; no store beside a keyring is said, not a failure", async () => {
    const linked = newKeyringOnlyStateDir();
    const db = join(linked, "portcullis.db");
    const gone = join(tempDir(), "moved-away.db");
    symlinkSync(gone, db);
    const broken = await doctorOf(linked);
    expect(broken.code).toBe(1);
    expect(storeFinding(broken.findings)).toEqual({
      ok: false,
      what: `the store ${db} is a symbolic link to ${gone}, which does not exist`,
      next: `put the store back at ${gone} (from where it was moved, or a backup); only without one, remove the link (rm ${db}): the next command then starts a new, empty store and audit log`,
      cause: "missing",
    });

    const fresh = newKeyringOnlyStateDir();
    const none = await doctorOf(fresh);
    expect(none.code).toBe(0);
    expect(storeFinding(none.findings)).toMatchObject({
      ok: true,
      what: `no store in ${fresh} yet (portcullis.db)`,
      cause: "missing",
    });
    for (const d of [linked, fresh]) removeDir(d);
  });
});
