/**
 * The keyring: `keyring.json` in the state directory (mode 0600). See
 * docs/audit-format.md, section "Keyring".
 *
 *   passphrase --scrypt--> key-encryption key (KEK)
 *   KEK  wraps (ChaCha20-Poly1305) a random 32-byte data key
 *   data key wraps the private half of an X25519 audit key pair
 *   the public half is stored in clear, so writers seal audit records without unlocking
 *   data key wraps the private half of an Ed25519 approver key pair (signs human decisions);
 *   its public half is in clear too, and pinned in the audit chain (src/approval/pin.ts)
 *
 * This file makes a keyring (initKeyring), opens it (unlockKeyring, loadPublicKeyring) and gives
 * an old one its approver key (addApproverKey). Its parts are files of their own: errors
 * (keyringErrors.ts), the sealing (keyWrapping.ts), the file's format (keyringFormat.ts), its read
 * (keyringRead.ts), its writes (atomicWrite.ts, rewriteLock.ts, leftTemps.ts), a passphrase
 * change (passphraseChange.ts), a rotation (rotate.ts).
 */
import { createPublicKey, type KeyObject, randomBytes } from "node:crypto";
import { mkdirSync } from "node:fs";
import { approverKeyId, type DecisionSigner, mintSigner, newApproverKeyPair } from "./approver.js";
import { replaceFile, writeFileExclusive } from "./atomicWrite.js";
import { KEYRING_FILE } from "./file.js";
import {
  KeyringError,
  KeyringExistsError,
  KeyringMissingError,
  KeyringTamperedError,
  WrongPassphraseError,
} from "./keyringErrors.js";
import { type ApproverEntry, type KeyringFile, type PendingRotation, parseKeyring } from "./keyringFormat.js";
import { keyringExists, keyringPath, readKeyringText } from "./keyringRead.js";
import {
  approverKeyAad,
  DEFAULT_SCRYPT,
  dataKeyAad,
  deriveKek,
  earlierDataKeyAad,
  INSECURE_TEST_KDF_ENV,
  KEY_BYTES,
  KEYRING_FORMAT,
  newCost,
  privateKeyAad,
  TEST_SCRYPT,
  unwrap,
  unwrapOrDamaged,
  wrap,
} from "./keyWrapping.js";
import { removeLeftTemps } from "./leftTemps.js";
import { takeLock } from "./rewriteLock.js";
import {
  auditKeyId,
  newX25519PrivateKey,
  rawX25519PrivateKey,
  rawX25519PublicKey,
  x25519PrivateKeyFromRaw,
  x25519PublicKeyFromRaw,
} from "./x25519.js";

// KeyringError and keyringPath are still to be had from here: src/console imports them so.
export { KeyringError } from "./keyringErrors.js";
export { keyringPath } from "./keyringRead.js";
export { KEYRING_FILE };

export interface PublicKeyring {
  path: string;
  keyId: string;
  /** The audit public key, for sealing. */
  publicKey: KeyObject;
  publicKeyRaw: Buffer;
  /** the approver public key as keyring.json states it (null in an old keyring) */
  approver: { keyId: string; publicKeyRaw: Buffer } | null;
  /** the approver and audit public keys a rotation replaced, oldest first (raw) */
  earlierApprovers: Buffer[];
  earlierAudits: Buffer[];
  pendingRotation: PendingRotation | null;
}

export interface UnlockedKeyring {
  keyId: string;
  /** 32 random bytes; wraps the audit private key (and later the vault's secrets). */
  dataKey: Buffer;
  auditPrivateKey: KeyObject;
  /** signs decisions; null when this keyring has no approver key yet (see addApproverKey) */
  signer: DecisionSigner | null;
  /** the audit private keys a rotation replaced (records sealed to them are read with them) */
  earlierAuditKeys: KeyObject[];
  /** the data keys a rotation replaced (what is still sealed under one is opened with it) */
  earlierDataKeys: Buffer[];
}

/** Creates the keyring; refuses (KeyringExistsError) when one is there already. */
export async function initKeyring(stateDir: string, passphrase: string): Promise<PublicKeyring> {
  if (passphrase.length === 0) throw new KeyringError("the passphrase is empty");
  const path = keyringPath(stateDir);
  mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  if (keyringExists(stateDir)) throw new KeyringExistsError(path);

  const params = process.env[INSECURE_TEST_KDF_ENV] === "1" ? TEST_SCRYPT : DEFAULT_SCRYPT;
  const salt = randomBytes(16);
  const kek = await deriveKek(passphrase, salt, params);
  const dataKey = randomBytes(KEY_BYTES);
  const privateKey = newX25519PrivateKey();
  const publicRaw = rawX25519PublicKey(privateKey);
  const privateRaw = rawX25519PrivateKey(privateKey);
  const keyId = auditKeyId(publicRaw);
  const kdf = { alg: "scrypt" as const, ...params, salt: salt.toString("base64url") };
  const publicKey = publicRaw.toString("base64url");
  const file: KeyringFile = {
    format: KEYRING_FORMAT,
    createdAt: new Date().toISOString(),
    kdf,
    dataKey: wrap(kek, dataKey, dataKeyAad(kdf)),
    audit: {
      alg: "X25519",
      keyId,
      publicKey,
      privateKey: wrap(dataKey, privateRaw, privateKeyAad(keyId, publicKey)),
    },
    approver: newApproverEntry(dataKey),
  };
  kek.fill(0);
  dataKey.fill(0);
  privateRaw.fill(0);
  writeFileExclusive(path, `${JSON.stringify(file, null, 2)}\n`);
  return {
    path,
    keyId,
    publicKey: x25519PublicKeyFromRaw(publicRaw),
    publicKeyRaw: publicRaw,
    approver: approverOf(file),
    earlierApprovers: [],
    earlierAudits: [],
    pendingRotation: null,
  };
}

function newApproverEntry(dataKey: Buffer): ApproverEntry {
  const { publicRaw, privateRaw } = newApproverKeyPair();
  const keyId = approverKeyId(publicRaw);
  const publicKey = publicRaw.toString("base64url");
  const entry: ApproverEntry = {
    alg: "Ed25519",
    keyId,
    publicKey,
    privateKey: wrap(dataKey, privateRaw, approverKeyAad(keyId, publicKey)),
  };
  privateRaw.fill(0);
  return entry;
}

function approverOf(file: KeyringFile): PublicKeyring["approver"] {
  const a = file.approver;
  return a ? { keyId: a.keyId, publicKeyRaw: Buffer.from(a.publicKey, "base64url") } : null;
}

/**
 * Gives a keyring made before decisions were signed its approver key (sealed under the data
 * key, which the passphrase opens) and rewrites keyring.json atomically. Returns the unlocked
 * keyring with its signer; a keyring that has one already is returned as it is.
 */
export async function addApproverKey(stateDir: string, passphrase: string): Promise<UnlockedKeyring> {
  const unlocked = await unlockKeyring(stateDir, passphrase);
  if (unlocked.signer) return unlocked;
  unlocked.dataKey.fill(0);
  const path = keyringPath(stateDir);
  // Two commands upgrading at once would each make a key, and the pin would name only one:
  // one at a time, and the second finds the key the first added.
  const lock = await takeLock(`${path}.upgrade.lock`);
  try {
    // what an upgrade or a change killed before its rename left (the keyring's keys, sealed)
    removeLeftTemps(path);
    const again = await unlockKeyring(stateDir, passphrase);
    if (again.signer) return again;
    const file = parseKeyring(readKeyringText(stateDir) ?? "", path);
    file.approver = newApproverEntry(again.dataKey);
    again.dataKey.fill(0);
    replaceFile(path, `${JSON.stringify(file, null, 2)}\n`);
    // opened again under the lock: a passphrase change waiting for it cannot come in between
    return await unlockKeyring(stateDir, passphrase);
  } finally {
    lock();
  }
}

/** The public half, for writers. null when there is no keyring. */
export function loadPublicKeyring(stateDir: string): PublicKeyring | null {
  const text = readKeyringText(stateDir);
  if (text === null) return null;
  const path = keyringPath(stateDir);
  const file = parseKeyring(text, path);
  const publicKeyRaw = Buffer.from(file.audit.publicKey, "base64url");
  return {
    path,
    keyId: file.audit.keyId,
    publicKey: x25519PublicKeyFromRaw(publicKeyRaw),
    publicKeyRaw,
    approver: approverOf(file),
    earlierApprovers: (file.earlier?.approvers ?? []).map((a) => Buffer.from(a.publicKey, "base64url")),
    earlierAudits: (file.earlier?.audit ?? []).map((a) => Buffer.from(a.publicKey, "base64url")),
    pendingRotation: file.pendingRotation ?? null,
  };
}

/** Opens the keyring with the passphrase; WrongPassphraseError when it does not fit. */
export async function unlockKeyring(stateDir: string, passphrase: string): Promise<UnlockedKeyring> {
  const text = readKeyringText(stateDir);
  if (text === null) throw new KeyringMissingError(stateDir);
  const path = keyringPath(stateDir);
  return openKeyringFile(parseKeyring(text, path), path, passphrase);
}

/** Opens a parsed keyring with the passphrase (unlockKeyring, changePassphrase). */
export async function openKeyringFile(
  file: KeyringFile,
  path: string,
  passphrase: string,
): Promise<UnlockedKeyring> {
  const kek = await deriveKek(passphrase, Buffer.from(file.kdf.salt, "base64url"), file.kdf);
  let dataKey: Buffer;
  try {
    dataKey = unwrap(kek, file.dataKey, dataKeyAad(file.kdf));
  } catch {
    throw new WrongPassphraseError();
  } finally {
    kek.fill(0);
  }
  const privateRaw = unwrapOrDamaged(
    dataKey,
    file.audit.privateKey,
    privateKeyAad(file.audit.keyId, file.audit.publicKey),
    `${path}: the audit private key does not open with the data key`,
  );
  const auditPrivateKey = x25519PrivateKeyFromRaw(privateRaw);
  privateRaw.fill(0);
  const derivedPublic = rawX25519PublicKey(createPublicKey(auditPrivateKey)).toString("base64url");
  if (derivedPublic !== file.audit.publicKey) {
    throw new KeyringTamperedError(`${path}: the audit public key does not match its private half`);
  }
  let signer: DecisionSigner | null = null;
  if (file.approver) {
    const approverRaw = unwrapOrDamaged(
      dataKey,
      file.approver.privateKey,
      approverKeyAad(file.approver.keyId, file.approver.publicKey),
      `${path}: the approver private key does not open with the data key (or its public half was changed)`,
    );
    signer = mintSigner(approverRaw);
    approverRaw.fill(0);
    if (signer.publicKeyRaw.toString("base64url") !== file.approver.publicKey) {
      throw new KeyringTamperedError(`${path}: the approver public key does not match its private half`);
    }
  }
  const earlierAuditKeys = (file.earlier?.audit ?? []).map((a) => {
    const raw = unwrapOrDamaged(
      dataKey,
      a.privateKey,
      privateKeyAad(a.keyId, a.publicKey),
      `${path}: an earlier audit private key does not open with the data key`,
    );
    const key = x25519PrivateKeyFromRaw(raw);
    raw.fill(0);
    if (rawX25519PublicKey(createPublicKey(key)).toString("base64url") !== a.publicKey)
      throw new KeyringTamperedError(`${path}: an earlier audit public key does not match its private half`);
    return key;
  });
  const earlierDataKeys = (file.earlier?.dataKeys ?? []).map((w, i) =>
    unwrapOrDamaged(
      dataKey,
      w,
      earlierDataKeyAad(i),
      `${path}: an earlier data key does not open with the data key`,
    ),
  );
  return { keyId: file.audit.keyId, dataKey, auditPrivateKey, signer, earlierAuditKeys, earlierDataKeys };
}

/**
 * For src/keyring/rotate.ts only (not re-exported anywhere): what a rotation builds a keyring
 * from, and writes it with, under the same lock and the same atomic replacement as every rewrite.
 */
export const rotationParts = {
  readKeyringText,
  parseKeyring,
  openKeyringFile,
  deriveKek,
  newCost,
  wrap,
  dataKeyAad,
  privateKeyAad,
  earlierDataKeyAad,
  newApproverEntry,
  removeLeftTemps,
  replaceFile,
  takeLock,
  KEY_BYTES,
};
