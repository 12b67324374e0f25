/**
 * Lock files that name their owner: a process (its pid and start time, so a reused pid is not
 * taken for it) holds the file from its exclusive creation until it removes it. A command killed
 * while holding one leaves it behind; the next command finds its owner gone and takes it over,
 * instead of waiting for a process that will never release it and telling a human to remove the
 * file by hand.
 */
import { closeSync, openSync, readFileSync, rmSync, statSync, writeSync } from "node:fs";
import { processStartTime } from "../identity/proc.js";
import { fileProblem } from "./errno.js";

export interface LockOwner {
  pid: number;
  startTime: string;
}

/** A lock file that names no owner this long after it was made was left half-written. */
const UNREADABLE_LOCK_MS = 5_000;

/**
 * Takes the lock at `path` (O_EXCL), waiting while a live owner holds it (`onWait` told once,
 * with its pid) and removing one whose owner is gone. Past `waitMs`, throws `busy(owner)`; a lock
 * file that cannot be written (the disk full, a read-only directory) throws `cannotWrite(problem)`,
 * the problem in words (src/util/errno.ts), and leaves no file behind.
 * Returns the release; the lock is released too if this process exits holding it.
 */
export async function takeOwnedLock(
  path: string,
  o: {
    waitMs: number;
    onWait?: (pid: number) => void;
    busy: (owner: LockOwner | null) => Error;
    cannotWrite: (problem: string) => Error;
  },
): Promise<() => void> {
  const deadline = Date.now() + o.waitMs;
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
      const code = (e as NodeJS.ErrnoException).code;
      if (code !== "EEXIST") throw code ? o.cannotWrite(fileProblem(code)) : e;
    }
    const owner = readOwner(path);
    // its owner is gone (killed), or died while writing it: the lock protects nothing any more
    const dead = owner === null ? olderThan(path, UNREADABLE_LOCK_MS) : gone(owner);
    if (dead) {
      let removed: boolean;
      try {
        removed = removeIfStill(path, owner);
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        throw code ? o.cannotWrite(fileProblem(code)) : e;
      }
      // (while another waiter takes it over, this one waits its turn as for a live owner)
      if (removed) continue;
    }
    if (owner !== null && !dead && !told) {
      o.onWait?.(owner.pid);
      told = true;
    }
    if (Date.now() >= deadline) throw o.busy(owner);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Whether a live process holds the lock at `path` now: its file names an owner whose pid has the
 * start time it recorded (a reused pid is another process), or it names none yet and is young (its
 * owner may be writing it). A file left by a dead owner, or none, is no hold.
 */
export function lockHeld(path: string): boolean {
  try {
    statSync(path);
  } catch {
    return false;
  }
  const owner = readOwner(path);
  if (owner === null) return !olderThan(path, UNREADABLE_LOCK_MS);
  return !gone(owner);
}

function gone(owner: LockOwner): boolean {
  return processStartTime(owner.pid) !== owner.startTime;
}

/**
 * Removes the lock at `path` if it still names `judged` (a dead owner, or none: unreadable and
 * old), under a guard file of its own (`PATH.takeover`, exclusive) that one waiter at a time
 * holds. Two waiters that both read the dead owner each removed "the lock" after the other had
 * taken it anew: the second removed the first's live lock and took its own, and both went on
 * (two keyring rewrites at once, the first's change lost). Under the guard the lock is read
 * again: a live owner's is left. A guard whose owner is gone (killed inside this function) is
 * removed, as a lock's is. false: another waiter holds the guard (this one waits a turn).
 */
function removeIfStill(path: string, judged: LockOwner | null): boolean {
  const guard = `${path}.takeover`;
  try {
    writeOwner(guard, { pid: process.pid, startTime: processStartTime(process.pid) ?? "unknown" }, "wx");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
    const holder = readOwner(guard);
    if (holder === null ? olderThan(guard, UNREADABLE_LOCK_MS) : gone(holder)) {
      rmSync(guard, { force: true });
      return true;
    }
    return false; // another waiter is taking it over: this one waits, then tries again
  }
  try {
    const now = readOwner(path);
    const same =
      judged === null
        ? now === null && olderThan(path, UNREADABLE_LOCK_MS)
        : now !== null && now.pid === judged.pid && now.startTime === judged.startTime;
    if (same) rmSync(path, { force: true });
    return true;
  } finally {
    rmSync(guard, { force: true });
  }
}

function olderThan(path: string, ms: number): boolean {
  try {
    return Date.now() - statSync(path).mtimeMs > ms;
  } catch {
    return true;
  }
}

/**
 * Writes `owner` to `path` (0600); `flags` "wx" creates it exclusively, and removes what it
 * created when the owner cannot be written into it (ENOSPC): an empty lock held the next command
 * back until it was 5 s old.
 */
export function writeOwner(path: string, owner: LockOwner, flags = "w"): void {
  const fd = openSync(path, flags, 0o600);
  let written = false;
  try {
    writeSync(fd, JSON.stringify(owner));
    written = true;
  } finally {
    closeSync(fd);
    if (!written && flags === "wx") rmSync(path, { force: true });
  }
}

/** The owner a file names; null when it is unreadable, being written, or not what we write. */
export function readOwner(path: string): LockOwner | null {
  try {
    const o = JSON.parse(readFileSync(path, "utf8")) as Partial<LockOwner>;
    if (typeof o.pid !== "number" || !Number.isInteger(o.pid) || o.pid <= 0) return null;
    if (typeof o.startTime !== "string" || o.startTime === "") return null;
    return { pid: o.pid, startTime: o.startTime };
  } catch {
    return null;
  }
}
