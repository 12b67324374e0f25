/**
 * The vault holder processes of a state directory that are alive, found by the pid files `unlock`
 * writes for them (`vault-holder-PID.pid`: holderProcs.ts, which writes, ends and forgets them).
 * Its own module, reading only, so that the store's upgrade warning (store/olderProcesses.ts) can
 * name a holder without loading the vault.
 */
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { describeOsProcess, processStartTime } from "../identity/proc.js";
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

/** The same process that was recorded (pid and start time), and it runs a vault holder. */
export function isHolder(owner: LockOwner): boolean {
  if (processStartTime(owner.pid) !== owner.startTime) return false;
  const described = describeOsProcess(owner.pid);
  return described?.startTime === owner.startTime && (described.argv ?? []).includes(HOLDER_COMMAND);
}
