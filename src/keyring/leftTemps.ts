/**
 * The temporary files a killed rewrite of keyring.json left (each holds the keyring's keys,
 * sealed): which are left over, for doctor to report and the next rewrite to remove. Apart from
 * the writes that make them (atomicWrite.ts): finding them is about other processes' files.
 */
import { readdirSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { lockHeld } from "../util/ownedLock.js";
import { processExists } from "../util/processExists.js";
import { KEYRING_FILE } from "./file.js";

/**
 * The temporary files (syncedTemp) a rewrite of keyring.json left when its process was killed
 * before its rename: each holds the keyring's keys, sealed under a passphrase that may be the one
 * a killed change was given, and nothing reads them. Removed under the rewrite lock
 * (changePassphrase, addApproverKey): see leftKeyringTemps for which are left over.
 */
export function removeLeftTemps(path: string): void {
  for (const left of leftKeyringTemps(join(path, ".."), { lockHeldHere: true }))
    rmSync(left, { force: true });
}

/**
 * How old a temporary file of keyring.json must be to be taken for a leftover although the pid in
 * its name names a process now. A rewrite's file lives from its write to its rename, under the
 * rewrite lock; init's (no lock: it links its file to a keyring.json that does not exist yet)
 * from its write to its unlink, milliseconds. A pid is reused by another process in time (a
 * killed command's, the next boot's), which kept its file for good.
 */
export const LEFT_TEMP_MS = 60_000;

/**
 * The temporary files of keyring.json's rewrites in `stateDir` that no process is writing, by
 * path: what the next rewrite removes (removeLeftTemps), and `portcullis doctor` reports. One is
 * left over when the process its name names is gone, or, since that pid may name another process
 * by now, when it is older than LEFT_TEMP_MS and no live process holds the rewrite lock (a rewrite
 * stopped while it holds the lock may still rename its file; `lockHeldHere`: the caller holds it,
 * so no other rewrite is under way). A young file of a live pid is left alone: an init under way.
 */
export function leftKeyringTemps(stateDir: string, o: { lockHeldHere?: boolean } = {}): string[] {
  // syncedTemp's names: keyring.json.PID.HEX.tmp
  const own = /^keyring\.json\.(\d\d*)\.[0-9a-f]{12}\.tmp$/;
  let names: string[];
  try {
    names = readdirSync(stateDir);
  } catch {
    return [];
  }
  const rewriteUnderWay = () => !o.lockHeldHere && lockHeld(join(stateDir, `${KEYRING_FILE}.upgrade.lock`));
  const left: string[] = [];
  for (const name of names.sort()) {
    const m = own.exec(name);
    if (!m) continue;
    const path = join(stateDir, name);
    if (!processExists(Number(m[1])) || (olderThan(path, LEFT_TEMP_MS) && !rewriteUnderWay()))
      left.push(path);
  }
  return left;
}

/** Whether the file at `path` was last written more than `ms` ago (a file gone meanwhile: no). */
function olderThan(path: string, ms: number): boolean {
  try {
    return Date.now() - statSync(path).mtimeMs > ms;
  } catch {
    return false;
  }
}
