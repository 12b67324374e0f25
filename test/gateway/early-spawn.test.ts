// The server is spawned before the gateway loads the rest of itself and opens its store
// (src/supervisor/earlyStart.ts), so that it boots meanwhile. That process serves under the first
// epoch as if launched later; a gateway that cannot start ends it; a state directory without a
// keyring, or a store file whose header says no schema version this portcullis knows, never
// starts it; a signal before the gateway's own handlers does not leave it running.
import { chmodSync, existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, it } from "vitest";
import { KNOWN_SCHEMA_VERSION } from "../../src/store/schemaVersion.js";
import { verifiedAuditEvents } from "../helpers/approvals.js";
import { completeLines } from "../helpers/completeLines.js";
import { alive, removeDir, tempDir, waitFor } from "../helpers/files.js";
import { holdStoreLock } from "../helpers/lock.js";
import { NODE } from "../helpers/paths.js";
import { makeProject } from "../helpers/project.js";
import { rawGateway } from "../helpers/raw.js";
import { newKeyringOnlyStateDir, newStateDir } from "../helpers/state.js";
import { type Cleanup, teardownOf } from "../helpers/teardown.js";

/** A server command that appends its pid to a file, then becomes `then` (exec: same pid). */
function recordedStarts(dir: string, then: string): { wrapper: string; pids: () => number[] } {
  const starts = join(dir, "state", "early-starts");
  const wrapper = join(dir, "scripts", "recorded.sh");
  writeFileSync(wrapper, `#!/bin/sh\necho "$$" >> ${JSON.stringify(starts)}\nexec ${then}\n`);
  chmodSync(wrapper, 0o755);
  const pids = () =>
    existsSync(starts) ? completeLines(readFileSync(starts, "utf8")).filter(Boolean).map(Number) : [];
  return { wrapper, pids };
}

/**
 * A gateway started in front of a server that sleeps (its starts recorded) while another process
 * holds `stateDir`'s store lock, each write waiting `busyMs` for it; resolves once the server runs.
 */
async function startedUnderLock(stateDir: string, busyMs: number, cleanup: Cleanup) {
  const project = makeProject("A");
  cleanup.push(() => project.cleanup());
  const { wrapper, pids } = recordedStarts(project.dir, "sleep 60");
  const lock = await holdStoreLock(stateDir);
  cleanup.push(() => lock.release());
  const gw = rawGateway({
    args: ["--label", "inventory", "--", wrapper],
    cwd: project.dir,
    // the server (sleep) ignores its input: its stop is the grace, then SIGTERM; a short grace,
    // since these tests look at whether it ends, not how long it is given
    env: { ...project.env, PORTCULLIS_BUSY_TIMEOUT_MS: String(busyMs), PORTCULLIS_SHUTDOWN_GRACE_MS: "300" },
    stateDir,
  });
  cleanup.push(() => gw.close());
  await waitFor(() => pids().length === 1, 20_000, "the server's start");
  return { gw, pids };
}

// Each case has its own project, state directory and gateway, and most wait (for a locked
// store's busy timeout, a signal's end, a capture held open): they run side by side.
describe.concurrent("the server is spawned before the gateway opens its store", () => {
  it("it runs while the gateway waits for a locked store, and that process serves the first epoch", async ({
    expect,
    onTestFinished,
  }) => {
    const cleanup = teardownOf(onTestFinished);
    const project = makeProject("A");
    cleanup.push(() => project.cleanup());
    const { wrapper, pids } = recordedStarts(
      project.dir,
      `${JSON.stringify(NODE)} "$(dirname "$0")/../dist/server.js"`,
    );
    const stateDir = newStateDir();
    const lock = await holdStoreLock(stateDir);
    let held = true;
    cleanup.push(() => (held ? lock.release() : undefined));
    const gw = rawGateway({
      args: ["--label", "inventory", "--approval", "none", "--", wrapper],
      cwd: project.dir,
      // the store cannot be set up until the lock goes: the gateway waits for it (a minute at most)
      env: { ...project.env, PORTCULLIS_BUSY_TIMEOUT_MS: "60000" },
      stateDir,
    });
    cleanup.push(() => gw.close());
    // Spawned after the store was open, the server would not start before the lock is released.
    await waitFor(() => pids().length === 1, 20_000, "the server's start while the store is locked");
    expect(gw.stderr()).not.toMatch(/serving /);
    await lock.release();
    held = false;

    await gw.initialize({}, 60_000);
    const res = await gw.request("tools/call", { name: "read_status", arguments: {} }, 30_000);
    expect(res.error).toBeUndefined();
    const status = JSON.parse((res.result as { content: { text: string }[] }).content[0]!.text);
    // the process spawned early answered: not killed and launched again
    expect(status).toMatchObject({ revision: "A", pid: pids()[0] });
    expect(pids()).toHaveLength(1);
    gw.closeStdin();
    await gw.exited;
    const started = (await verifiedAuditEvents(stateDir)).filter((e) => e.type === "server_started");
    expect(started).toHaveLength(1);
    expect((started[0]!.record as { processId: number }).processId).toBe(pids()[0]);
  }, 120_000);

  it("a state directory without a keyring: the gateway refuses to start, and the server never starts", async ({
    expect,
    onTestFinished,
  }) => {
    const cleanup = teardownOf(onTestFinished);
    const project = makeProject("A");
    cleanup.push(() => project.cleanup());
    const { wrapper, pids } = recordedStarts(project.dir, "sleep 60");
    const stateDir = tempDir("portcullis-no-keyring-");
    const gw = rawGateway({
      args: ["--label", "inventory", "--", wrapper],
      cwd: project.dir,
      env: project.env,
      stateDir,
    });
    cleanup.push(() => gw.close());
    const exit = await gw.exited;
    expect(exit.code).toBe(2);
    // the command to paste names this directory: a bare init would set up the default one
    expect(gw.stderr()).toContain(
      `no keyring in ${stateDir}; set it up first (it asks for a passphrase once) with: portcullis init --state-dir ${stateDir}\n`,
    );
    expect(pids()).toEqual([]);
  });

  it("a file that is no SQLite database where the store goes: the gateway refuses it, and the server never starts", async ({
    expect,
    onTestFinished,
  }) => {
    const cleanup = teardownOf(onTestFinished);
    const project = makeProject("A");
    cleanup.push(() => project.cleanup());
    const { wrapper, pids } = recordedStarts(project.dir, "sleep 60");
    const stateDir = newStateDir();
    writeFileSync(
      join(stateDir, "portcullis.db"),
      "not a database, and longer than a header would be".repeat(20),
    );
    const gw = rawGateway({
      args: ["--label", "inventory", "--", wrapper],
      cwd: project.dir,
      env: project.env,
      stateDir,
    });
    cleanup.push(() => gw.close());
    expect((await gw.exited).code).toBe(2);
    expect(gw.stderr()).toContain(join(stateDir, "portcullis.db"));
    // its header says no schema version: nothing is spawned before the opening judges it
    expect(pids()).toEqual([]);
  });

  it("a gateway that cannot open its store ends the server it spawned, which never got a byte", async ({
    expect,
    onTestFinished,
  }) => {
    const cleanup = teardownOf(onTestFinished);
    const project = makeProject("A");
    cleanup.push(() => project.cleanup());
    // sleep ignores its input: only the gateway ending it ends it before a minute
    const { wrapper, pids } = recordedStarts(project.dir, "sleep 60");
    const stateDir = newStateDir();
    // an SQLite database whose header says this portcullis's schema (so the server is spawned
    // early) but that is no portcullis store (no schema_migrations table): the opening refuses it
    rmSync(join(stateDir, "portcullis.db"));
    const db = new Database(join(stateDir, "portcullis.db"));
    db.exec("CREATE TABLE notes (text TEXT)");
    db.pragma(`user_version = ${KNOWN_SCHEMA_VERSION}`);
    db.close();
    const gw = rawGateway({
      args: ["--label", "inventory", "--", wrapper],
      cwd: project.dir,
      env: project.env,
      stateDir,
    });
    cleanup.push(() => gw.close());
    const exit = await gw.exited;
    expect(exit.code).toBe(2);
    expect(gw.stderr()).toContain(join(stateDir, "portcullis.db"));
    expect(pids()).toHaveLength(1);
    await waitFor(() => !alive(pids()[0]!), 10_000, "the early server to be ended");
  });

  it("a signal while the gateway still waits for its store ends the gateway and the server it spawned", async ({
    expect,
    onTestFinished,
  }) => {
    const cleanup = teardownOf(onTestFinished);
    // no store yet: the holder's lock is on the one being made, which the gateway waits for
    const { gw, pids } = await startedUnderLock(newKeyringOnlyStateDir(), 2000, cleanup);
    gw.kill("SIGTERM");
    // Usually the gateway dies of the signal (its default action, once the server's group is
    // ended). A test slow to send it may find the gateway inside SQLite's wait for the lock, which
    // holds the event loop: the start then fails on the locked store (exit 2) before the signal is
    // read. Either way the server must not outlive it.
    const exit = await gw.exited;
    expect(exit.signal === "SIGTERM" || exit.code === 2, JSON.stringify(exit)).toBe(true);
    await waitFor(() => !alive(pids()[0]!), 10_000, "the early server to be ended");
  }, 60_000);

  it("a signal that comes while another process holds a made store's lock is not lost: the gateway ends its server and itself", async ({
    expect,
    onTestFinished,
  }) => {
    const cleanup = teardownOf(onTestFinished);
    // The store exists (as after init): its write lock held, the gateway's first writes wait out
    // their busy timeout with the event loop held, and the signal comes then. It was lost when the
    // early start's guard stopped listening before the gateway's own handlers listened: the
    // gateway served on, and its server ran to its end and was respawned.
    const { gw, pids } = await startedUnderLock(newStateDir(), 1500, cleanup);
    gw.kill("SIGTERM");
    // with the lock still held: each of the gateway's writes (its status row, its records) waits
    // out the busy timeout and gives up, then it ends
    const exit = await gw.exited;
    expect(exit.signal === "SIGTERM" || exit.code === 0 || exit.code === 2, JSON.stringify(exit)).toBe(true);
    await waitFor(() => !alive(pids()[0]!), 10_000, "the server to be ended");
    expect(pids()).toHaveLength(1); // never respawned
  }, 60_000);

  it("a signal during the capture, the gateway's own handlers in place: an orderly end that ends the server too", async ({
    expect,
    onTestFinished,
  }) => {
    const cleanup = teardownOf(onTestFinished);
    // The server runs under a `node` of its own, a script whose `--version` (the capture's last
    // question, after every file is digested) says it was asked and answers only once told: the
    // capture is held open, with the server spawned and the gateway set up. The server itself
    // ignores its input (sleep): only the gateway ending its group ends it.
    const dir = tempDir("portcullis-held-capture-");
    cleanup.push(() => removeDir(dir));
    const at = (name: string) => JSON.stringify(join(dir, name));
    writeFileSync(
      join(dir, "node"),
      [
        "#!/bin/sh",
        'if [ "$1" = "--version" ]; then',
        `  echo "$$" > ${at("asked")}`,
        "  i=0",
        `  while [ ! -e ${at("answer")} ] && [ $i -lt 1000 ]; do sleep 0.01; i=$((i+1)); done`,
        `  exec ${JSON.stringify(NODE)} --version`,
        "fi",
        `echo "$$" >> ${at("starts")}`,
        "exec sleep 60",
        "",
      ].join("\n"),
    );
    chmodSync(join(dir, "node"), 0o755);
    writeFileSync(join(dir, "server.mjs"), "");
    cleanup.push(() => writeFileSync(join(dir, "answer"), ""));
    const gw = rawGateway({
      args: ["--label", "held", "--", join(dir, "node"), "server.mjs"],
      cwd: dir,
      // a cold cache, so that the runtime's version is asked
      env: { PORTCULLIS_CACHE_DIR: tempDir("portcullis-cold-cache-") },
    });
    cleanup.push(() => gw.close());
    const asked = join(dir, "asked");
    await waitFor(
      () => existsSync(asked) && readFileSync(asked, "utf8").trim() !== "",
      20_000,
      "the question",
    );
    const question = Number(readFileSync(asked, "utf8").trim());
    const pid = Number(readFileSync(join(dir, "starts"), "utf8").trim());
    expect(alive(pid)).toBe(true);
    gw.kill("SIGTERM");
    // ended at once, while the capture still waits for its answer (not once the capture gives up
    // on the question, 5 s later, and finds the launch abandoned)
    await waitFor(() => !alive(pid), 10_000, "the server to be ended");
    expect(alive(question)).toBe(true);
    expect(await gw.exited).toMatchObject({ code: 0 }); // the gateway's own shutdown, not the guard's
  }, 60_000);
});
