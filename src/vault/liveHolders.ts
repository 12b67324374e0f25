/**
 * The vault holder processes of a state directory that are alive, found by the pid files `unlock`
 * writes for them (`vault-holder-PID.pid`: holderProcs.ts, which writes, ends and forgets them).
 * Its own module, reading only, so that the store's upgrade warning (store/olderProcesses.ts) can
 * name a holder without loading the vault.
 */
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { processStartTime } from "../identity/proc.js";
import { runsPortcullisCommand } from "../identity/procPortcullis.js";
import { type LockOwner, readOwner } from "../util/ownedLock.js";

/** The hidden command a holder runs as (`portcullis __vault-holder`). */
export const HOLDER_COMMAND = "__vault-holder";
export const PID_FILE = /^vault-holder-(\d+)\.pid$/;

/**
 * The pids of the live holder processes of this state directory, as their files record them (the
 * same process, pid and start time, running a vault holder). Writes and removes nothing.
 */
export function liveHolderPids(stateDir: string): number[] {
  let names: string[];
  try {
    names = readdirSync(stateDir);
  } catch {
    return [];
  }
  const live: number[] = [];
  for (const name of names) {
    const m = PID_FILE.exec(name);
    if (!m) continue;
    const owner = readOwner(join(stateDir, name));
    if (owner !== null && owner.pid === Number(m[1]) && isHolder(owner)) live.push(owner.pid);
  }
  return live.sort((a, b) => a - b);
}

/** What a holder's file names (holderFileNames). */
export type HolderFile = "holder" | "stale" | "not-holder";

/**
 * What a holder's file names: `holder`, the very process recorded (pid and start time) running
 * this package's CLI as a vault holder; `stale`, a process that is gone or another one under a
 * reused pid (another start time); `not-holder`, the process recorded, alive, that is not a
 * portcullis vault holder by its command line. Any process of this user can write the file, and
 * `__vault-holder` among a process's arguments is the process's own to write (a `node -e` script,
 * `exec -a`): only node running portcullis's own `dist/cli/main.cjs __vault-holder`
 * (src/identity/procPortcullis.ts) is one. A process whose command line cannot be read (no
 * /proc/PID entry, another PID namespace, macOS's `ps` splitting a path with spaces) is none:
 * deny first, `lock` never signals what it cannot tell to be ours.
 */
export function holderFileNames(owner: LockOwner): HolderFile {
  if (processStartTime(owner.pid) !== owner.startTime) return "stale";
  return runsPortcullisCommand(owner.pid, HOLDER_COMMAND, owner.startTime) ? "holder" : "not-holder";
}

/** The same process that was recorded (pid and start time), and it runs portcullis's vault holder. */
export function isHolder(owner: LockOwner): boolean {
  return holderFileNames(owner) === "holder";
}
