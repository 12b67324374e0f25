// Choosing the next pid (Linux, root in the PID namespace: /proc/sys/kernel/ns_last_pid), for the
// tests of a pid reused by an unrelated process: what a dead gateway or server's pid may become.
import { type ChildProcess, spawn } from "node:child_process";
import { accessSync, constants, writeFileSync } from "node:fs";
import { alive } from "./files.js";

const NS_LAST_PID = "/proc/sys/kernel/ns_last_pid";

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
  // Another process may take the pid between the write and the fork: try again. 50 tries were
  // not enough in a clean-clone run whose other test files forked all the while.
  for (let attempt = 0; attempt < 1000; attempt++) {
    writeFileSync(NS_LAST_PID, String(pid - 1));
    const other = spawn("sleep", ["1000"], { detached: true, stdio: "ignore" });
    if (other.pid === pid) {
      onCleanup(() => {
        if (alive(pid)) process.kill(-pid, "SIGKILL");
      });
      return other;
    }
    if (other.pid !== undefined) process.kill(other.pid, "SIGKILL");
  }
  return null;
}
