/**
 * The lock every rewrite of keyring.json takes (an old keyring's approver key added, a passphrase
 * changed, the keys rotated), one naming its owner and taken over once it is gone. Apart so that
 * each rewrite and the late records of src/approval/lateWrapping.ts take the same lock.
 */
import { takeOwnedLock } from "../util/ownedLock.js";
import { KeyringError } from "./keyringErrors.js";
import { keyringPath } from "./keyringRead.js";

/**
 * `fn` under the lock of every rewrite of keyring.json (takeLock): no change or upgrade of the
 * keyring is under way meanwhile (src/approval/lateWrapping.ts reads a change's mark under it).
 */
export async function underRewriteLock<T>(stateDir: string, fn: () => T | Promise<T>): Promise<T> {
  const lock = await takeLock(`${keyringPath(stateDir)}.upgrade.lock`);
  try {
    return await fn();
  } finally {
    lock();
  }
}

/**
 * The lock of every rewrite of keyring.json (an old keyring's approver key added, a passphrase
 * changed, the keys rotated): one naming its owner, so that a command killed while rewriting
 * leaves nothing the next one must wait out (or a human remove): its owner gone, the lock is
 * taken over. Its name stays `keyring.json.upgrade.lock`, the one older versions take to add the
 * approver key.
 */
export function takeLock(lock: string): Promise<() => void> {
  return takeOwnedLock(lock, {
    waitMs: 10_000,
    busy: (owner) =>
      new KeyringError(
        `another command${owner ? ` (pid ${owner.pid})` : ""} has been rewriting the keyring (adding its approver key, changing its passphrase, or rotating its keys) for 10 s; try again once it has finished`,
      ),
    cannotWrite: (problem) =>
      new KeyringError(`cannot take the lock ${lock}: ${problem}; nothing was changed`),
  });
}
