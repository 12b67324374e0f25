// The files `unlock` keeps of its holders (`vault-holder-PID.pid`, src/vault/holderProcs.ts) as a
// same-user agent or a reused pid leaves them: `lock`, and the next `unlock`, signal only a live
// process whose start time is the recorded one AND whose arguments are a vault holder's
// (docs/security.md, "The vault": "checked by start time and by its command line, so a reused pid
// is never signalled ... A holder killed with SIGKILL leaves its pid file behind; it names a
// process that is gone, and is removed unused"). A file naming a live process with its true start
// time that is no holder is kept and said (test/vault/holder-decoy.test.ts covers those).
//
// Decoys are real processes this test starts: one whose arguments are a holder's (`__vault-holder`
// and this state directory) named with another start time, one with its true start time whose
// arguments are not a holder's, and a real holder SIGKILLed whose pid an unrelated `sleep` then
// takes. Each must outlive `lock` and `unlock`; the file naming it must be gone afterwards, but for
// the one naming the live `sleep` with its true start time, kept and named on stderr.
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { processStartTime } from "../../src/identity/procRead.js";
import { alive, waitFor } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { NODE } from "../helpers/paths.js";
import { canChoosePids, sleeperUnder } from "../helpers/pids.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";
import { vaultWith } from "../helpers/vaultState.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const PID_FILE = /^vault-holder-(\d+)\.pid$/;

/** The vault-holder-PID.pid files of a state directory, sorted. */
function pidFiles(stateDir: string): string[] {
  return readdirSync(stateDir)
    .filter((n) => PID_FILE.test(n))
    .sort();
}

/** A pid file as `unlock` writes it (writeOwner: `{"pid":N,"startTime":"..."}`, 0600). */
function writePidFile(stateDir: string, pid: number, content: string): string {
  const name = `vault-holder-${pid}.pid`;
  writeFileSync(join(stateDir, name), content, { mode: 0o600 });
  return name;
}

/** A long-lived process the test owns; killed (SIGKILL) in cleanup. */
function decoy(command: string, args: string[]): ChildProcess {
  const child = spawn(command, args, { stdio: "ignore" });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  cleanup.push(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    await exited;
  });
  return child;
}

/** A process that looks like this state directory's holder by its arguments alone. */
function holderLookalike(stateDir: string): ChildProcess {
  return decoy(NODE, ["-e", "setInterval(() => {}, 1e9)", "__vault-holder", "--state-dir", stateDir]);
}

/** The recorded start time, once /proc shows the process. */
async function startTimeOf(pid: number): Promise<string> {
  return waitFor(() => processStartTime(pid), 10_000, `the start time of ${pid}`);
}

/** A pid that was used and is now free (its process exited and was reaped), with its start time. */
async function deadPid(): Promise<{ pid: number; startTime: string }> {
  const child = spawn("sleep", ["1000"], { stdio: "ignore" });
  const pid = child.pid!;
  const startTime = await startTimeOf(pid);
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  child.kill("SIGKILL");
  await exited;
  await waitFor(() => !existsSync(`/proc/${pid}`), 10_000, "the dead process to be reaped");
  return { pid, startTime };
}

/** The pids of the live holder processes of a state directory, found by their arguments. */
function holderPids(stateDir: string): number[] {
  const out: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const argv = readFileSync(`/proc/${name}/cmdline`, "utf8").split("\0");
      if (/^\d+ \(.*\) Z/s.test(readFileSync(`/proc/${name}/stat`, "utf8"))) continue;
      // the lookalike runs under `node -e`: a holder runs the CLI
      if (argv.includes("__vault-holder") && argv.includes(stateDir) && !argv.includes("-e"))
        out.push(Number(name));
    } catch {}
  }
  return out;
}

/**
 * The four kinds of file the promise covers, each naming a live decoy or nothing: a holder's
 * arguments with another start time, the true start time of a process that is no holder, a
 * damaged file (not JSON; JSON naming another pid than its name's, that pid a holder lookalike
 * with its true start time), and a pid that is gone. Returns the decoys and the file names.
 */
async function staleFiles(stateDir: string) {
  const lookalike = holderLookalike(stateDir);
  const lookalikeStart = await startTimeOf(lookalike.pid!);
  const sleeper = decoy("sleep", ["1000"]);
  const sleeperStart = await startTimeOf(sleeper.pid!);
  // a second lookalike, named by a file whose name says another pid
  const named = holderLookalike(stateDir);
  const namedStart = await startTimeOf(named.pid!);
  const dead = await deadPid();
  const files = [
    // (1) a holder's arguments, the wrong start time: a pid reused by a process that looks like a holder
    writePidFile(
      stateDir,
      lookalike.pid!,
      JSON.stringify({ pid: lookalike.pid, startTime: String(Number(lookalikeStart) + 1) }),
    ),
    // (2) the right start time, arguments that are not a holder's
    writePidFile(stateDir, sleeper.pid!, JSON.stringify({ pid: sleeper.pid, startTime: sleeperStart })),
    // (3) damaged: not JSON, and JSON naming a live lookalike under another pid's file name
    writePidFile(stateDir, sleeper.pid! + 100_000, "\u0000garbage{"),
    writePidFile(stateDir, dead.pid + 200_000, JSON.stringify({ pid: named.pid, startTime: namedStart })),
    // (4) a pid that is gone (a holder SIGKILLed leaves this)
    writePidFile(stateDir, dead.pid, JSON.stringify(dead)),
  ].sort();
  expect(pidFiles(stateDir)).toEqual(expect.arrayContaining(files));
  // the one file naming a live process as it is (pid, start time) that is no holder: kept, said
  return {
    decoys: [lookalike, sleeper, named],
    files,
    kept: `vault-holder-${sleeper.pid}.pid`,
    sleeper: sleeper.pid!,
  };
}

/** The notice a command gives of the sleeper's file, which it keeps. */
function notHolderLine(command: string, stateDir: string, pid: number): string {
  return `portcullis ${command}: pid ${pid} is not a portcullis vault holder by its command line (the record naming it may have been written by another process): do not end that process for this; it was not signalled, and ${join(stateDir, `vault-holder-${pid}.pid`)}, which names it, was left for you to look at and remove\n`;
}

function expectAlive(decoys: ChildProcess[]): void {
  for (const d of decoys) {
    expect(d.signalCode, `decoy ${d.pid} (${d.spawnargs.join(" ")}) was signalled`).toBeNull();
    expect(alive(d.pid!), `decoy ${d.pid} (${d.spawnargs.join(" ")})`).toBe(true);
  }
}

describe("vault holder pid files that do not name this state directory's holder", () => {
  it("lock signals none of the processes they name, removes the stale ones, and says the vault was already locked", async () => {
    const stateDir = newStateDir();
    const { decoys, kept, sleeper } = await staleFiles(stateDir);

    const lock = await runCli(["lock"], { stateDir });
    expect(lock.code, lock.stderr).toBe(0);
    // "ended N vault holder processes" would say a decoy was signalled
    expect(lock.stdout).toBe("the vault was already locked\n");
    expect(lock.stderr).toBe(notHolderLine("lock", stateDir, sleeper));
    expectAlive(decoys);
    expect(pidFiles(stateDir)).toEqual([kept]);
  });

  it("beside a real holder, lock ends only the holder and removes the stale files", async () => {
    const stateDir = await vaultWith("api", "holder-pid-reused-value-7c1e", (c) => cleanup.push(c));
    const [holder] = holderPids(stateDir);
    expect(holder).toBeDefined();
    const holderFile = `vault-holder-${holder}.pid`;
    expect(pidFiles(stateDir)).toEqual([holderFile]);
    const { decoys, kept } = await staleFiles(stateDir);

    const lock = await runCli(["lock"], { stateDir });
    expect(lock.code, lock.stderr).toBe(0);
    expect(lock.stdout).toBe("vault locked\n");
    await waitFor(() => holderPids(stateDir).length === 0, 10_000, "the holder to end");
    expectAlive(decoys);
    expect(pidFiles(stateDir)).toEqual([kept]);
  });

  it("unlock signals none of them either, removes the stale ones, and adds exactly its own holder's file", async () => {
    const stateDir = await vaultWith("api", "holder-pid-reused-value-7c1e", (c) => cleanup.push(c), false);
    const { decoys, kept, sleeper } = await staleFiles(stateDir);

    const unlock = await runCli(["unlock", "--for", "10m"], { stateDir, env: passphraseEnv() });
    expect(unlock.code, unlock.stderr).toBe(0);
    expect(unlock.stdout).toMatch(/^vault unlocked until \S+ \(1 secret\); /);
    expect(unlock.stderr).toBe(notHolderLine("unlock", stateDir, sleeper));
    expectAlive(decoys);
    const holders = holderPids(stateDir);
    expect(holders).toHaveLength(1);
    expect(pidFiles(stateDir)).toEqual([`vault-holder-${holders[0]}.pid`, kept].sort());

    // and the lock after it ends that holder, still none of the decoys
    const lock = await runCli(["lock"], { stateDir });
    expect(lock.stdout).toBe("vault locked\n");
    await waitFor(() => holderPids(stateDir).length === 0, 10_000, "the holder to end");
    expectAlive(decoys);
    expect(pidFiles(stateDir)).toEqual([kept]);
  });
});

describe("a holder killed with SIGKILL", () => {
  it("leaves its pid file, which lock removes unused", async () => {
    const stateDir = await vaultWith("api", "holder-pid-reused-value-7c1e", (c) => cleanup.push(c));
    const [holder] = holderPids(stateDir);
    expect(holder).toBeDefined();
    process.kill(holder!, "SIGKILL");
    await waitFor(() => !alive(holder!), 10_000, "the holder to die");
    expect(pidFiles(stateDir)).toEqual([`vault-holder-${holder}.pid`]);

    const lock = await runCli(["lock"], { stateDir });
    expect(lock.code, lock.stderr).toBe(0);
    expect(lock.stdout).toBe("the vault was already locked\n");
    expect(pidFiles(stateDir)).toEqual([]);
  });

  it.skipIf(!canChoosePids())(
    "whose pid an unrelated process then takes: neither lock nor unlock signals that process",
    async () => {
      const stateDir = await vaultWith("api", "holder-pid-reused-value-7c1e", (c) => cleanup.push(c));
      const [holder] = holderPids(stateDir);
      expect(holder).toBeDefined();
      process.kill(holder!, "SIGKILL");
      // the holder is detached: whoever adopted it reaps it; its pid is free once /proc forgets it
      await waitFor(() => !existsSync(`/proc/${holder}`), 10_000, "the holder to be reaped");
      const file = `vault-holder-${holder}.pid`;
      expect(pidFiles(stateDir)).toEqual([file]);
      const recorded = readFileSync(join(stateDir, file), "utf8");
      const other = sleeperUnder(holder!, (end) => cleanup.push(end));
      expect(other, "a process under the killed holder's pid").toBe(holder);

      const lock = await runCli(["lock"], { stateDir });
      expect(lock.code, lock.stderr).toBe(0);
      expect(lock.stdout).toBe("the vault was already locked\n");
      expect(alive(holder!)).toBe(true);
      expect(pidFiles(stateDir)).toEqual([]);

      // the same file put back (as the killed holder left it): the next unlock
      writeFileSync(join(stateDir, file), recorded, { mode: 0o600 });
      const unlock = await runCli(["unlock", "--for", "10m"], { stateDir, env: passphraseEnv() });
      expect(unlock.code, unlock.stderr).toBe(0);
      expect(alive(holder!)).toBe(true);
      expect(pidFiles(stateDir)).not.toContain(file);
    },
  );
});
