/**
 * A passphrase change (`portcullis passphrase`): the same data key wrapped anew under the new
 * passphrase, under the rewrite lock, with the steps the command takes around the rename; and the
 * fingerprint that names a wrapping in the audit chain without its salt (wrappingFingerprint,
 * keyringWrapping). Apart from keyring.ts: only the change rewraps, and the late records read it.
 */
import { createHash, type KeyObject, randomBytes } from "node:crypto";
import canonicalize from "canonicalize";
import { replaceFile } from "./atomicWrite.js";
import { openKeyringFile, type UnlockedKeyring } from "./keyring.js";
import { KeyringError, KeyringMissingError, SamePassphraseError } from "./keyringErrors.js";
import { type KeyringFile, parseKeyring } from "./keyringFormat.js";
import { keyringPath, readKeyringText } from "./keyringRead.js";
import { dataKeyAad, deriveKek, KEYRING_FORMAT, newCost, type ScryptParams, wrap } from "./keyWrapping.js";
import { removeLeftTemps } from "./leftTemps.js";
import { takeLock } from "./rewriteLock.js";
import { x25519PublicKeyFromRaw } from "./x25519.js";

/** What changePassphrase did: nothing secret (no passphrase, no key). */
export interface PassphraseChange {
  path: string;
  /** the audit key id and the approver key id: the same before and after */
  keyId: string;
  approverKeyId: string;
  /** the scrypt parameters of the new key-encryption key (its salt is new) */
  kdf: ScryptParams;
  /** the new wrapping's fingerprint (wrappingFingerprint): what its record names */
  wrapping: string;
}

/**
 * What a passphrase change does around its rename of keyring.json, under the rewrite lock: said
 * before (`beforeRename`, the new wrapping's fingerprint: the change may be made from then on)
 * and after (`afterRename`: it is made). The command marks the change as not yet recorded, and
 * records it (src/approval/lateWrapping.ts), while no other rewrite or late record can come in.
 */
export interface ChangeSteps {
  /**
   * Told the keyring as read and opened under the lock, before anything is written: throws to
   * refuse it. The caller checked a keyring before (its approver key against the pin); the file
   * may have been replaced since, by a process that takes no lock, and the one rewrapped is the
   * one read here.
   */
  accept?: (opened: UnlockedKeyring, auditPublicKey: KeyObject) => void;
  beforeRename?: (wrapping: string) => void;
  afterRename?: (change: PassphraseChange) => void;
}

/**
 * Wraps the data key under a key-encryption key derived from `next` with a fresh salt, and
 * replaces keyring.json atomically (replaceFile). Only the data key's wrapping changes: the data
 * key, the audit and approver key pairs and what they seal stay as they are, so the audit chain,
 * the pin, grants, the vault's secrets and a running vault holder keep working. The scrypt cost is
 * init's, or the keyring's own when that is higher (newCost).
 *
 * Under the lock every rewrite of keyring.json takes (addApproverKey's): the file is read and
 * opened with `current` again there, so two changes at once, or a change and an old keyring's
 * upgrade, never write over each other: the second finds the first's file (a change made by the
 * first: `current` no longer opens it, WrongPassphraseError). The keyring must have its approver
 * key already (addApproverKey, pinned by the caller): an old keyring is upgraded first.
 */
export async function changePassphrase(
  stateDir: string,
  current: string,
  next: string,
  steps: ChangeSteps = {},
): Promise<PassphraseChange> {
  if (next.length === 0) throw new KeyringError("the new passphrase is empty");
  if (next.normalize("NFC") === current.normalize("NFC")) throw new SamePassphraseError();
  const path = keyringPath(stateDir);
  const lock = await takeLock(`${path}.upgrade.lock`);
  try {
    const text = readKeyringText(stateDir);
    if (text === null) throw new KeyringMissingError(stateDir);
    const file = parseKeyring(text, path);
    const unlocked = await openKeyringFile(file, path, current);
    if (!file.approver) {
      unlocked.dataKey.fill(0);
      throw new KeyringError(`${path} has no approver key yet; it is added by the passphrase commands first`);
    }
    try {
      steps.accept?.(unlocked, x25519PublicKeyFromRaw(Buffer.from(file.audit.publicKey, "base64url")));
    } catch (e) {
      unlocked.dataKey.fill(0);
      throw e;
    }
    removeLeftTemps(path);
    const params = newCost(file.kdf);
    const salt = randomBytes(16);
    const kek = await deriveKek(next, salt, params);
    const kdf = { alg: "scrypt" as const, ...params, salt: salt.toString("base64url") };
    const rewrapped: KeyringFile = { ...file, kdf, dataKey: wrap(kek, unlocked.dataKey, dataKeyAad(kdf)) };
    kek.fill(0);
    unlocked.dataKey.fill(0);
    const wrapping = wrappingFingerprint(kdf);
    steps.beforeRename?.(wrapping);
    replaceFile(path, `${JSON.stringify(rewrapped, null, 2)}\n`);
    const change = {
      path,
      keyId: file.audit.keyId,
      approverKeyId: file.approver.keyId,
      kdf: params,
      wrapping,
    };
    steps.afterRename?.(change);
    return change;
  } finally {
    lock();
  }
}

/**
 * The fingerprint of the data key's wrapping: sha256 over its key derivation (cost and salt),
 * which a passphrase change always renews (a new random salt). Names a wrapping in the audit
 * chain (`passphrase_changed`'s `wrapping`) without the salt itself.
 */
export function wrappingFingerprint(kdf: KeyringFile["kdf"]): string {
  return `sha256:${createHash("sha256")
    .update(`${KEYRING_FORMAT}\nwrapping\n${canonicalize(kdf)}`)
    .digest("hex")}`;
}

/** What the keyring's current wrapping is, named without a secret (null: no keyring). */
export interface KeyringWrapping {
  path: string;
  keyId: string;
  /** null in a keyring made before decisions were signed */
  approverKeyId: string | null;
  kdf: ScryptParams;
  wrapping: string;
}

/** keyring.json's current wrapping (wrappingFingerprint), read now; null when there is no keyring. */
export function keyringWrapping(stateDir: string): KeyringWrapping | null {
  const text = readKeyringText(stateDir);
  if (text === null) return null;
  const path = keyringPath(stateDir);
  const file = parseKeyring(text, path);
  return {
    path,
    keyId: file.audit.keyId,
    approverKeyId: file.approver?.keyId ?? null,
    kdf: { N: file.kdf.N, r: file.kdf.r, p: file.kdf.p },
    wrapping: wrappingFingerprint(file.kdf),
  };
}
