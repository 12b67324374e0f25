/**
 * The vault holder processes of a state directory, found without their socket, and the lock that
 * lets one `portcullis unlock` at a time start one.
 *
 * A holder that no socket leads to (it never listened, its unlock was interrupted, its socket
 * file was removed) still holds the opened secrets; `lock` must be able to end it all the same.
 * So `unlock` writes a file per holder it starts, `vault-holder-PID.pid` in the state directory
 * (0700), naming the process by pid and start time, before the holder receives anything; the
 * holder removes its own file when it ends. `endHolders` signals only a live process whose start
 * time is the one recorded (a reused pid has another) and whose arguments are a vault holder's:
 * a stale or damaged file is removed and never signals anything.
 */
import { closeSync, openSync, readdirSync, readFileSync, rmSync, statSync, writeSync } from "node:fs";
import { join } from "node:path";
import { describeOsProcess, processStartTime } from "../identity/proc.js";
import { VaultError } from "./secrets.js";

/** The hidden command a holder runs as (`portcullis __vault-holder`). */
export const HOLDER_COMMAND = "__vault-holder";
const PID_FILE = /^vault-holder-(\d+)\.pid$/;
const UNLOCK_LOCK = "vault-unlock.lock";
/** How long a second `unlock` waits for the first; the first holds it for 15 s at most. */
const UNLOCK_WAIT_MS = 30_000;
/** A lock file that names no owner this long after it was made was left half-written. */
const UNREADABLE_LOCK_MS = 5_000;

interface Owner {
  pid: number;
  startTime: string;
}

function pidFile(stateDir: string, pid: number): string {
  return join(stateDir, `vault-holder-${pid}.pid`);
}

/** Records a holder just spawned, before it is given anything. Throws when it cannot. */
export function recordHolder(stateDir: string, pid: number): void {
  const startTime = processStartTime(pid);
  // gone already: nothing to find later (the caller sees it exit)
  if (startTime === null) return;
  writeOwner(pidFile(stateDir, pid), { pid, startTime });
}

/** Removes a holder's file (the holder itself, as it ends). */
export function forgetHolder(stateDir: string, pid: number): void {
  rmSync(pidFile(stateDir, pid), { force: true });
}

/**
 * Ends (SIGTERM) every live holder process of this state directory, with its socket or without;
 * removes the files of those that are gone. Returns how many were signalled.
 */
export function endHolders(stateDir: string): number {
  let names: string[];
  try {
    names = readdirSync(stateDir);
  } catch {
    return 0;
  }
  let ended = 0;
  for (const name of names) {
    const m = PID_FILE.exec(name);
    if (!m) continue;
    const path = join(stateDir, name);
    const owner = readOwner(path);
    if (owner === null || owner.pid !== Number(m[1]) || !isHolder(owner)) {
      rmSync(path, { force: true });
      continue;
    }
    try {
      // the holder wipes what it holds on SIGTERM (or dies, before it holds anything)
      process.kill(owner.pid, "SIGTERM");
      ended++;
    } catch {
      rmSync(path, { force: true });
    }
  }
  return ended;
}

/** The same process that was recorded (pid and start time), and it runs a vault holder. */
function isHolder(owner: Owner): boolean {
  if (processStartTime(owner.pid) !== owner.startTime) return false;
  const described = describeOsProcess(owner.pid);
  return described?.startTime === owner.startTime && (described.argv ?? []).includes(HOLDER_COMMAND);
}

/**
 * Takes the state directory's unlock lock (O_EXCL), waiting while another live `unlock` holds
 * it (`onWait` is told once, with its pid) and removing one whose owner is gone. Returns the
 * release; the lock is released too if this process exits holding it.
 */
export async function takeUnlockLock(stateDir: string, onWait: (pid: number) => void): Promise<() => void> {
  const path = join(stateDir, UNLOCK_LOCK);
  const deadline = Date.now() + UNLOCK_WAIT_MS;
  let told = false;
  for (;;) {
    const startTime = processStartTime(process.pid) ?? "unknown";
    try {
      writeOwner(path, { pid: process.pid, startTime }, "wx");
      const release = () => {
        process.off("exit", release);
        if (readOwner(path)?.pid === process.pid) rmSync(path, { force: true });
      };
      process.on("exit", release);
      return release;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
    }
    const owner = readOwner(path);
    // its unlock is gone (killed), or died while writing it: the lock protects nothing any more
    if (
      owner === null ? olderThan(path, UNREADABLE_LOCK_MS) : processStartTime(owner.pid) !== owner.startTime
    ) {
      rmSync(path, { force: true });
      continue;
    }
    if (owner !== null && !told) {
      onWait(owner.pid);
      told = true;
    }
    if (Date.now() >= deadline)
      throw new VaultError(
        `another portcullis unlock${owner ? ` (pid ${owner.pid})` : ""} has been starting the vault holder for ${UNLOCK_WAIT_MS / 1000} s; try again once it has finished`,
      );
    await new Promise((r) => setTimeout(r, 50));
  }
}

function olderThan(path: string, ms: number): boolean {
  try {
    return Date.now() - statSync(path).mtimeMs > ms;
  } catch {
    return true;
  }
}

function writeOwner(path: string, owner: Owner, flags = "w"): void {
  const fd = openSync(path, flags, 0o600);
  try {
    writeSync(fd, JSON.stringify(owner));
  } finally {
    closeSync(fd);
  }
}

/** The owner a file names; null when it is unreadable, being written, or not what we write. */
function readOwner(path: string): Owner | null {
  try {
    const o = JSON.parse(readFileSync(path, "utf8")) as Partial<Owner>;
    if (typeof o.pid !== "number" || !Number.isInteger(o.pid) || o.pid <= 0) return null;
    if (typeof o.startTime !== "string" || o.startTime === "") return null;
    return { pid: o.pid, startTime: o.startTime };
  } catch {
    return null;
  }
}
