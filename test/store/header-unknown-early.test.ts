// `run` spawns its server before it opens the store only when the store's header says a schema
// version this portcullis knows (src/cli/run.ts, knownStore; src/store/headerVersion.ts). A store
// last migrated by a portcullis from before the header was written says 0 there, whatever its
// schema_migrations table says since: a newer such portcullis may have brought it past this one.
// Such a store is judged by the opening before any server runs: newer, it is refused and the
// server never starts; current, the gateway runs, and its opening writes the version into the
// header (src/store/db.ts, writeHeaderVersion), after which `run` spawns early again.
//
// Whether the server was spawned before the opening is told as test/gateway/early-spawn.test.ts
// tells it: another process holds the store's write lock and the gateway's busy timeout is a
// minute, so a gateway spawning its server only once its store is set up would not spawn it
// before the lock is released; a server spawned early runs (and leaves its marker file) while the
// lock is held. The server is /bin/sh writing a marker file outside the state directory, then
// sleeping.
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { headerSchemaVersion } from "../../src/store/headerVersion.js";
import { KNOWN_SCHEMA_VERSION } from "../../src/store/schemaVersion.js";
import { removeDir, waitFor } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { holdStoreLock } from "../helpers/lock.js";
import { newStateDir } from "../helpers/state.js";

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

/** A state directory whose store's header says `header`; its table records `recorded` too when given. */
function storeSaying(header: number, recorded?: number): string {
  const stateDir = newStateDir();
  cleanup.push(() => removeDir(stateDir));
  const db = new Database(join(stateDir, "portcullis.db"));
  if (recorded !== undefined)
    db.prepare("INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)").run(
      recorded,
      new Date().toISOString(),
    );
  db.pragma(`user_version = ${header}`);
  db.close();
  expect(headerSchemaVersion(join(stateDir, "portcullis.db"))).toBe(header);
  return stateDir;
}

/** A marker path outside any state directory, and `run`'s server command that makes it first. */
function markedServer(): { marker: string; command: string[] } {
  const dir = mkdtempSync(join(tmpdir(), "portcullis-header-early-"));
  cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
  const marker = join(dir, "server-ran");
  return { marker, command: ["/bin/sh", "-c", `: > '${marker}'; exec sleep 30`] };
}

/**
 * `run` in front of the marked server while another process holds the store's write lock (the
 * gateway waiting up to a minute for it): resolves once the server has run; the lock is then
 * released and the gateway, its input closed, ends.
 */
async function serverRunsUnderLock(stateDir: string): Promise<void> {
  const server = markedServer();
  const lock = await holdStoreLock(stateDir);
  let run: Promise<unknown> | null = null;
  try {
    run = runCli(["run", "--label", "x", "--", ...server.command], {
      stateDir,
      env: { PORTCULLIS_BUSY_TIMEOUT_MS: "60000", PORTCULLIS_SHUTDOWN_GRACE_MS: "300" },
      input: "",
    });
    await waitFor(() => existsSync(server.marker), 20_000, "the server to run while the store is locked");
  } finally {
    await lock.release();
    await run;
  }
}

describe("a store whose header says no schema version (0)", () => {
  it("that its table says a newer portcullis migrated: run refuses it and its server never starts", async () => {
    const newer = KNOWN_SCHEMA_VERSION + 1;
    const stateDir = storeSaying(0, newer);
    const server = markedServer();
    const r = await runCli(["run", "--label", "x", "--", ...server.command], { stateDir });
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toMatch(
      new RegExp(
        `^portcullis run: the store \\S+ was written by a newer portcullis \\(schema version ${newer};`,
      ),
    );
    expect(existsSync(server.marker), "run's server ran").toBe(false);
  });

  it("that is current: the gateway's opening writes its version there, and run spawns early again", async () => {
    const stateDir = storeSaying(0);
    const server = markedServer();
    const opened = await runCli(["run", "--label", "x", "--", ...server.command], { stateDir, input: "" });
    expect(opened.code, opened.stderr).toBe(0);
    expect(headerSchemaVersion(join(stateDir, "portcullis.db"))).toBe(KNOWN_SCHEMA_VERSION);
    // from then on the server is spawned before the opening, as on any current store
    await serverRunsUnderLock(stateDir);
  });
});

describe("a store whose header says this portcullis's version (as init leaves it)", () => {
  it("has its server spawned before the opening: it runs while the gateway waits for the lock", async () => {
    await serverRunsUnderLock(storeSaying(KNOWN_SCHEMA_VERSION));
  });
});
