// Choosing the next pid (Linux, root in the PID namespace: /proc/sys/kernel/ns_last_pid), for the
// tests of a pid reused by an unrelated process: what a dead gateway or server's pid may become.
import { type ChildProcess, type StdioOptions, spawn } from "node:child_process";
import { accessSync, constants, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Leader, leaderOf, recordLeader } from "../../src/supervisor/groupSignal.js";
import { alive } from "./files.js";

const NS_LAST_PID = "/proc/sys/kernel/ns_last_pid";

/**
 * Held by the test process choosing a pid, across the test workers: two choosing at once each
 * write ns_last_pid between the other's write and fork, and both spent their 1000 tries (a
 * minute of synchronous spawns on a loaded machine: the tests timed out, and their throwaway
 * processes took the pids other tests were waiting to see freed).
 */
const CHOOSING_LOCK = join(tmpdir(), "portcullis-test-ns-last-pid.lock");
const CHOOSING_WAIT_MS = 30_000;

/** Runs `choose` holding CHOOSING_LOCK; null when another test process held it all the while. */
function whileChoosing<T>(choose: () => T): T | null {
  const deadline = Date.now() + CHOOSING_WAIT_MS;
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (;;) {
    try {
      writeFileSync(CHOOSING_LOCK, String(process.pid), { flag: "wx" });
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
    }
    // the file of a test process that died holding it (killed) is taken over; an empty one is
    // being written by its holder
    let holder = "";
    try {
      holder = readFileSync(CHOOSING_LOCK, "utf8");
    } catch {
      continue; // released meanwhile
    }
    if (holder !== "" && !alive(Number(holder))) {
      rmSync(CHOOSING_LOCK, { force: true });
      continue;
    }
    if (Date.now() > deadline) return null;
    Atomics.wait(pause, 0, 0, 5); // synchronous: the callers choose from an exit listener
  }
  try {
    return choose();
  } finally {
    rmSync(CHOOSING_LOCK, { force: true });
  }
}

/** Whether this process can choose the next pid (root in its PID namespace, on Linux). */
export function canChoosePids(): boolean {
  if (process.platform !== "linux") return false;
  try {
    accessSync(NS_LAST_PID, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * A long-lived unrelated process (`sleep`, leading a process group of its own) started under
 * `pid`; null when not obtained. Its end (the group SIGKILLed) is handed to `onCleanup`.
 */
export function sleeperUnder(pid: number, onCleanup: (end: () => void) => void): number | null {
  return sleepingChildUnder(pid, onCleanup)?.pid ?? null;
}

/**
 * sleeperUnder's process as this process's child: its exit (and the signal that ended it, which
 * tells whose it was: the first fatal signal sent decides it) can be waited for.
 */
export function sleepingChildUnder(pid: number, onCleanup: (end: () => void) => void): ChildProcess | null {
  const other = childUnder(pid, "sleep", ["1000"], "ignore");
  if (other !== null)
    onCleanup(() => {
      if (alive(pid)) process.kill(-pid, "SIGKILL");
    });
  return other;
}

/**
 * `command` started under `pid` as this process's child, leading a process group (and session) of
 * its own, as a detached spawn does; null when not obtained. Ending it is the caller's.
 */
export function childUnder(
  pid: number,
  command: string,
  args: string[],
  stdio: StdioOptions,
): ChildProcess | null {
  return whileChoosing(() => tryUnder(pid, () => spawn(command, args, { detached: true, stdio })));
}

function tryUnder(pid: number, start: () => ChildProcess): ChildProcess | null {
  // Another process may take the pid between the write and the fork: try again. 50 tries were
  // not enough in a clean-clone run whose other test files forked all the while.
  for (let attempt = 0; attempt < 1000; attempt++) {
    writeFileSync(NS_LAST_PID, String(pid - 1));
    const other = start();
    if (other.pid === pid) return other;
    // its whole group: a command may have forked already
    try {
      if (other.pid !== undefined) process.kill(-other.pid, "SIGKILL");
    } catch {
      // gone already
    }
  }
  return null;
}

/** Resolves once `child` has exited (at once if it has). */
export function exited(child: ChildProcess): Promise<void> {
  return new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once("exit", () => resolve());
  });
}

/**
 * What ended `child` (a process standing for someone else's under a chosen pid): SIGHUP, the
 * test's own, sent now, unless something else (a signal meant for another group) came first.
 */
export async function endedBy(child: ChildProcess): Promise<NodeJS.Signals | null> {
  if (child.exitCode === null && child.signalCode === null) process.kill(child.pid!, "SIGHUP");
  await exited(child);
  return child.signalCode;
}

/** `child`'s leader record, made right after the spawn as spawnServer makes it. */
export function recorded(child: ChildProcess): Leader {
  recordLeader(child);
  return leaderOf(child)!;
}
