// A vault holder's pid file (`vault-holder-PID.pid`, src/vault/holderProcs.ts) naming, with its
// true start time, a live process of the user whose arguments hold `__vault-holder` but which is
// not portcullis's holder: any process of the user can write the file, and the word among a
// process's arguments is that process's to choose. `lock` and `unlock` signal only node running
// this package's CLI as `__vault-holder` (src/identity/procPortcullis.ts), say of each other pid
// that it is not a portcullis vault holder and was not signalled, and keep its file for the human
// (docs/security.md, "The vault"). A real holder beside them is still ended.
//
// The decoys are real processes this test starts: `sleep` whose argv[0] is the word (`exec -a`),
// a `node -e` script given the word and this state directory, and node running a build-shaped
// `dist/cli/main.cjs __vault-holder` of a package named otherwise.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { processStartTime } from "../../src/identity/procRead.js";
import { alive, removeDir, tempDir, waitFor } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { CLI, NODE } from "../helpers/paths.js";
import { passphraseEnv } from "../helpers/state.js";
import { vaultWith } from "../helpers/vaultState.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const PID_FILE = /^vault-holder-(\d+)\.pid$/;

function pidFiles(stateDir: string): string[] {
  return readdirSync(stateDir)
    .filter((n) => PID_FILE.test(n))
    .sort();
}

/** A long-lived process the test owns, once its command line shows the word; killed in cleanup. */
async function decoy(command: string, args: string[]): Promise<ChildProcess> {
  const child = spawn(command, args, { stdio: "ignore" });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  cleanup.push(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    await exited;
  });
  // after its exec: the command line is the decoy's own, not bash's
  await waitFor(
    () => readFileSync(`/proc/${child.pid}/cmdline`, "utf8").split("\0").includes("__vault-holder"),
    10_000,
    `the decoy ${command}'s command line`,
  );
  return child;
}

/** A pid file as `unlock` writes it, naming `pid` with its true start time. */
async function nameInPidFile(stateDir: string, pid: number): Promise<string> {
  const startTime = await waitFor(() => processStartTime(pid), 10_000, `the start time of ${pid}`);
  const name = `vault-holder-${pid}.pid`;
  writeFileSync(join(stateDir, name), JSON.stringify({ pid, startTime }), { mode: 0o600 });
  return name;
}

/** The live processes running this state directory's holder as portcullis's CLI starts it. */
function holderPids(stateDir: string): number[] {
  const out: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const argv = readFileSync(`/proc/${name}/cmdline`, "utf8").split("\0");
      if (/^\d+ \(.*\) Z/s.test(readFileSync(`/proc/${name}/stat`, "utf8"))) continue;
      if (argv[1] === CLI && argv[2] === "__vault-holder" && argv.includes(stateDir)) out.push(Number(name));
    } catch {}
  }
  return out;
}

/** The three decoys, each named by a pid file of `stateDir`. */
async function decoys(stateDir: string) {
  const pkg = tempDir("portcullis-decoy-pkg-");
  cleanup.push(() => removeDir(pkg));
  mkdirSync(join(pkg, "dist", "cli"), { recursive: true });
  writeFileSync(join(pkg, "package.json"), JSON.stringify({ name: "other-tool" }));
  const entry = join(pkg, "dist", "cli", "main.cjs");
  writeFileSync(entry, "setInterval(() => {}, 1e9);\n");
  const procs = [
    await decoy("bash", ["-c", "exec -a __vault-holder sleep 1000"]),
    await decoy(NODE, ["-e", "setInterval(() => {}, 1e9)", "__vault-holder", "--state-dir", stateDir]),
    await decoy(NODE, [entry, "__vault-holder", "--state-dir", stateDir]),
  ];
  const files: string[] = [];
  for (const p of procs) files.push(await nameInPidFile(stateDir, p.pid!));
  return { procs, files: files.sort() };
}

function expectAlive(procs: ChildProcess[]): void {
  for (const d of procs) {
    expect(d.signalCode, `decoy ${d.pid} (${d.spawnargs.join(" ")}) was signalled`).toBeNull();
    expect(alive(d.pid!), `decoy ${d.pid} (${d.spawnargs.join(" ")})`).toBe(true);
  }
}

/** The one stderr line a command gives per decoy, naming its pid and its file. */
function expectSaid(stderr: string, command: string, stateDir: string, procs: ChildProcess[]): void {
  const lines = stderr.trim().split("\n");
  expect(lines, stderr).toHaveLength(procs.length);
  for (const p of procs) {
    const file = join(stateDir, `vault-holder-${p.pid}.pid`);
    expect(lines).toContain(
      `portcullis ${command}: pid ${p.pid} is not a portcullis vault holder by its command line (the record naming it may have been written by another process): do not end that process for this; it was not signalled, and ${file}, which names it, was left for you to look at and remove`,
    );
  }
}

describe("a holder pid file naming a live process that only says __vault-holder", () => {
  it("lock ends the real holder, signals none of the decoys, says so of each and keeps their files; unlock too", async () => {
    const stateDir = await vaultWith("api", "holder-decoy-value-5d2a", (c) => cleanup.push(c));
    const [holder] = holderPids(stateDir);
    expect(holder, "the real holder").toBeDefined();
    const { procs, files } = await decoys(stateDir);
    expect(pidFiles(stateDir)).toEqual([...files, `vault-holder-${holder}.pid`].sort());

    const lock = await runCli(["lock"], { stateDir });
    expect(lock.code, lock.stderr).toBe(0);
    expect(lock.stdout).toBe("vault locked\n");
    await waitFor(() => holderPids(stateDir).length === 0, 10_000, "the real holder to end");
    expectAlive(procs);
    expectSaid(lock.stderr, "lock", stateDir, procs);
    expect(pidFiles(stateDir)).toEqual(files);

    // unlock replaces holders the same way: its own holder runs, the decoys live
    const unlock = await runCli(["unlock", "--for", "10m"], { stateDir, env: passphraseEnv() });
    expect(unlock.code, unlock.stderr).toBe(0);
    expect(unlock.stdout).toMatch(/^vault unlocked until \S+ \(1 secret\); /);
    expectSaid(unlock.stderr, "unlock", stateDir, procs);
    expectAlive(procs);
    const [second] = holderPids(stateDir);
    expect(second, "unlock's holder").toBeDefined();

    // and with only the decoys' files left (the holder ended), lock says the vault was locked
    const again = await runCli(["lock"], { stateDir });
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toBe("vault locked\n");
    await waitFor(() => holderPids(stateDir).length === 0, 10_000, "unlock's holder to end");
    expectAlive(procs);
    const last = await runCli(["lock"], { stateDir });
    expect(last.stdout).toBe("the vault was already locked\n");
    expectSaid(last.stderr, "lock", stateDir, procs);
    expectAlive(procs);
  });
});
