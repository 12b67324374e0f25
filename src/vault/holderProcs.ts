/**
 * The vault holder processes of a state directory, found without their socket, and the lock that
 * lets one `portcullis unlock` at a time start one.
 *
 * A holder that no socket leads to (it never listened, its unlock was interrupted, its socket
 * file was removed) still holds the opened secrets; `lock` must be able to end it all the same.
 * So `unlock` writes a file per holder it starts, `vault-holder-PID.pid` in the state directory
 * (0700), naming the process by pid and start time, before the holder receives anything; the
 * holder removes its own file when it ends. `endHolders` signals only a live process whose start
 * time is the one recorded (a reused pid has another) and that runs portcullis's own CLI as a vault
 * holder by its command line (liveHolders.ts, `holderFileNames`): a stale or damaged file is
 * removed and never signals anything; one naming a live process that is no holder (any process of
 * this user can write the file) is left for the human to read, and the process named is not
 * signalled but returned, for the command to say so.
 */
import { readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { notPortcullisPhrase, processStartTime } from "../identity/proc.js";
import { readOwner, takeOwnedLock, writeOwner } from "../util/ownedLock.js";
import { holderFileNames, liveHolderPids, PID_FILE } from "./liveHolders.js";
import { VaultError } from "./secrets.js";

export { HOLDER_COMMAND } from "./liveHolders.js";

const VAULT_LOCK = "vault.lock";
/** How long a vault command waits for another to finish (an unlock holds it while its holder starts). */
const VAULT_LOCK_WAIT_MS = 30_000;

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

/** What `endHolders` did: how many holders it signalled, and the files it would not act on. */
export interface EndedHolders {
  ended: number;
  /** files naming a live process that is not a portcullis vault holder: kept, nothing signalled */
  notHolders: { pid: number; file: string }[];
}

/**
 * Ends (SIGTERM) every live holder process of this state directory, with its socket or without;
 * removes the files of those that are gone. A file naming a live process that is not a holder is
 * kept and returned, its process left alone.
 */
export function endHolders(stateDir: string): EndedHolders {
  const out: EndedHolders = { ended: 0, notHolders: [] };
  let names: string[];
  try {
    names = readdirSync(stateDir);
  } catch {
    return out;
  }
  for (const name of names.sort()) {
    const m = PID_FILE.exec(name);
    if (!m) continue;
    const path = join(stateDir, name);
    const owner = readOwner(path);
    const named = owner === null || owner.pid !== Number(m[1]) ? "stale" : holderFileNames(owner);
    if (named === "not-holder") {
      out.notHolders.push({ pid: owner!.pid, file: path });
      continue;
    }
    if (named === "stale") {
      rmSync(path, { force: true });
      continue;
    }
    try {
      // the holder wipes what it holds on SIGTERM (or dies, before it holds anything)
      process.kill(owner!.pid, "SIGTERM");
      out.ended++;
    } catch {
      rmSync(path, { force: true });
    }
  }
  return out;
}

/**
 * The notice for a holder file naming a live process that is not a holder: said by `lock` and
 * `unlock`, which left that process alone, and the file for the human to look at.
 */
export function notHolderNotice(named: { pid: number; file: string }): string {
  return `${notPortcullisPhrase(named.pid, "vault holder")}; it was not signalled, and ${named.file}, which names it, was left for you to look at and remove`;
}

/**
 * Waits (polling) until no holder process of this state directory is alive, up to `ms`: a holder
 * asked to lock, or signalled, writes its vault_locked record as it ends, and what comes next
 * (the command's own answer, a new holder's vault_unlocked) comes after it. Returns whether none
 * is left.
 */
export async function holdersGone(stateDir: string, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  for (;;) {
    if (liveHolders(stateDir) === 0) return true;
    if (Date.now() >= deadline) return false;
    await new Promise((r) => setTimeout(r, 20));
  }
}

function liveHolders(stateDir: string): number {
  return liveHolderPids(stateDir).length;
}

/**
 * Takes the state directory's vault lock: one command that changes what the vault holds at a
 * time (`unlock`, `vault set`, `vault rm`), each from its read of the store to the holder's answer.
 * Without it an unlock's snapshot of the secrets went to its new holder after a `vault rm` or a
 * rotation had finished, a `vault rm` ran between a `vault set`'s store and its holder, and two
 * first HTTP secrets each made a local CA. Waits while another live command holds it (`onWait`
 * told once, with its pid), removes one whose owner is gone. Returns the release; released too if
 * this process exits holding it.
 */
export function takeVaultLock(stateDir: string, onWait: (pid: number) => void): Promise<() => void> {
  return takeOwnedLock(join(stateDir, VAULT_LOCK), {
    waitMs: VAULT_LOCK_WAIT_MS,
    onWait,
    busy: (owner) =>
      new VaultError(
        `another vault command${owner ? ` (pid ${owner.pid})` : ""} has been changing the vault for ${VAULT_LOCK_WAIT_MS / 1000} s; try again once it has finished`,
      ),
    cannotWrite: (problem) =>
      new VaultError(
        `cannot take the vault's lock ${join(stateDir, VAULT_LOCK)}: ${problem}; nothing was changed`,
      ),
  });
}
