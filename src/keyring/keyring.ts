import {
  createCipheriv,
  createDecipheriv,
  createHash,
  createPublicKey,
  type KeyObject,
  randomBytes,
  scrypt,
} from "node:crypto";
import {
  closeSync,
  fsyncSync,
  linkSync,
  mkdirSync,
  openSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  unlinkSync,
} from "node:fs";
import { join } from "node:path";
import canonicalize from "canonicalize";
import { stateDirFlagFor } from "../store/stateDir.js";
import { closedDirectory, fileProblem } from "../util/errno.js";
import { lockHeld, takeOwnedLock } from "../util/ownedLock.js";
import { processExists } from "../util/processExists.js";
import { readSmallFile, SmallFileError } from "../util/smallFile.js";
import { unwrittenBecause, writeWhole } from "../util/writeWhole.js";
import { approverKeyId, type DecisionSigner, mintSigner, newApproverKeyPair } from "./approver.js";
import { KEYRING_FILE } from "./file.js";
import { type KeyringExposure, keyringOwnerOnly } from "./ownerOnly.js";
import {
  auditKeyId,
  newX25519PrivateKey,
  rawX25519PrivateKey,
  rawX25519PublicKey,
  x25519PrivateKeyFromRaw,
  x25519PublicKeyFromRaw,
} from "./x25519.js";

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
 */

export { KEYRING_FILE };
export const KEYRING_FORMAT = "portcullis-keyring/1";

/**
 * Set to "1" to derive the key-encryption key with cheap scrypt parameters
 * (N=2^10). For tests only: a keyring made this way resists passphrase guessing
 * far less. The parameters used are recorded in the keyring either way.
 */
export const INSECURE_TEST_KDF_ENV = "PORTCULLIS_INSECURE_TEST_KDF";

export interface ScryptParams {
  N: number;
  r: number;
  p: number;
}

/** Default cost: N=2^17, r=8, p=1 (128 MiB, OWASP's minimum for scrypt). */
export const DEFAULT_SCRYPT: ScryptParams = { N: 2 ** 17, r: 8, p: 1 };
const TEST_SCRYPT: ScryptParams = { N: 2 ** 10, r: 8, p: 1 };
// Bounds accepted when reading a keyring, so a tampered file cannot ask for gigabytes.
const MAX_SCRYPT_N = 2 ** 20;
const MAX_SCRYPT_R = 32;
const MAX_SCRYPT_P = 16;

const WRAP_ALG = "chacha20-poly1305";
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
const KEY_BYTES = 32;

export class KeyringError extends Error {
  override name = "KeyringError";
}
export class KeyringMissingError extends KeyringError {
  override name = "KeyringMissingError";
  constructor(stateDir: string) {
    // the command with the state directory when it is not the default: it pastes whole
    super(
      `there is no keyring in ${stateDir}; set it up first with: portcullis init${stateDirFlagFor(stateDir)}`,
    );
  }
}
export class KeyringExistsError extends KeyringError {
  override name = "KeyringExistsError";
  constructor(path: string) {
    super(
      `a keyring already exists at ${path}; portcullis init never overwrites it: this state directory is set up (its passphrase unlocks it), or give another one with --state-dir or PORTCULLIS_HOME`,
    );
  }
}
export class WrongPassphraseError extends KeyringError {
  override name = "WrongPassphraseError";
  constructor() {
    super("wrong passphrase: the keyring did not open");
  }
}
/**
 * A keyring others may read whose mode this user cannot change (ownerOnly.ts): not used. Not
 * damaged: `fix` says what makes it usable (doctor's next step).
 */
export class KeyringExposedError extends KeyringError {
  override name = "KeyringExposedError";
  readonly problem: string;
  readonly fix: string;
  constructor(exposure: KeyringExposure) {
    super(exposure.message);
    this.problem = exposure.problem;
    this.fix = exposure.fix;
  }
}
export class KeyringDamagedError extends KeyringError {
  override name = "KeyringDamagedError";
  constructor(
    message: string,
    /** the keyring file, when known: the commands point to `doctor` for it */
    readonly path?: string,
  ) {
    super(message);
  }
}
/**
 * The passphrase opened the keyring, but a part of it does not match the rest: a public half
 * changed, a wrapped key swapped. Something was changed: a check that failed (exit 1), as a wrong
 * passphrase is, where a keyring that cannot be read at all is the environment's (exit 2).
 */
export class KeyringTamperedError extends KeyringDamagedError {
  override name = "KeyringTamperedError";
}

interface Wrapped {
  alg: typeof WRAP_ALG;
  nonce: string; // base64url, 12 bytes
  sealed: string; // base64url, ciphertext || 16-byte tag
}

interface KeyringFile {
  format: typeof KEYRING_FORMAT;
  createdAt: string;
  kdf: { alg: "scrypt"; N: number; r: number; p: number; salt: string };
  dataKey: Wrapped;
  audit: { alg: "X25519"; keyId: string; publicKey: string; privateKey: Wrapped };
  /** absent in keyrings made before decisions were signed: added at the next passphrase command */
  approver?: ApproverEntry;
  /** the keys a rotation replaced (src/keyring/rotate.ts); absent in a keyring never rotated */
  earlier?: EarlierKeys;
  /**
   * The signed rotation record of the rotation that made this keyring (public: a signature and
   * public keys), kept for a command to append late when its own was not written (rotate.ts).
   */
  pendingRotation?: PendingRotation;
}

/**
 * What a rotation keeps of the keys it replaced: the approver public keys (in clear: the chain's
 * first pin names the first of them, and gateways open it with it), the audit key pairs (their
 * private halves sealed under the current data key: the records sealed to them stay readable),
 * and the data keys (sealed under the current data key: what a rotation killed before it resealed
 * the vault left sealed under an earlier one stays readable). Oldest first.
 */
export interface EarlierKeys {
  approvers: { alg: "Ed25519"; keyId: string; publicKey: string }[];
  audit: AuditEntry[];
  dataKeys: Wrapped[];
}

/** A rotation's pin record as signed, and the audit public key it is sealed to (both public). */
export interface PendingRotation {
  event: Record<string, unknown>;
  /** the audit public key the chain trusted before the rotation, base64url */
  sealTo: string;
}

interface AuditEntry {
  alg: "X25519";
  keyId: string;
  publicKey: string;
  privateKey: Wrapped;
}

interface ApproverEntry {
  alg: "Ed25519";
  keyId: string;
  publicKey: string;
  privateKey: Wrapped;
}

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

export function keyringPath(stateDir: string): string {
  return join(stateDir, KEYRING_FILE);
}

export function keyringExists(stateDir: string): boolean {
  return readKeyringText(stateDir) !== null;
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

/** The new passphrase is the current one: a change that changes nothing is refused. */
export class SamePassphraseError extends KeyringError {
  override name = "SamePassphraseError";
  constructor() {
    super("the new passphrase is the current one; nothing was changed");
  }
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
 * The scrypt cost of a changed passphrase's key: init's (the test cost under
 * PORTCULLIS_INSECURE_TEST_KDF=1, else the default), so an older, cheaper keyring gets the current
 * cost; but never lower than the keyring's own (one made by a later version with a higher default,
 * or by hand), which a change must not weaken. Its parameters opened the keyring a moment ago (they
 * are bound to the data key's wrapping), so they are within the bounds parseKeyring accepts.
 */
function newCost(was: ScryptParams): ScryptParams {
  const chosen = process.env[INSECURE_TEST_KDF_ENV] === "1" ? TEST_SCRYPT : DEFAULT_SCRYPT;
  const cost = (k: ScryptParams) => k.N * k.r * k.p;
  return cost(was) > cost(chosen) ? { N: was.N, r: was.r, p: was.p } : chosen;
}

/**
 * The lock of every rewrite of keyring.json (an old keyring's approver key added, a passphrase
 * changed, the keys rotated): one naming its owner, so that a command killed while rewriting
 * leaves nothing the next one must wait out (or a human remove): its owner gone, the lock is
 * taken over. Its name stays `keyring.json.upgrade.lock`, the one older versions take to add the
 * approver key.
 */
function takeLock(lock: string): Promise<() => void> {
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
async function openKeyringFile(
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

/** A keyring is about 1.5 KB; anything much larger is not one (and is not read into memory). */
const MAX_KEYRING_BYTES = 64 * 1024;

/**
 * keyring.json's text, or null when there is none. Anything else that is not a readable regular
 * file of keyring size is a KeyringError naming the file: opened non-blocking and checked before
 * reading, so a FIFO, /dev/zero or a directory in its place neither hangs a command nor crashes it.
 */
function readKeyringText(stateDir: string): string | null {
  const path = keyringPath(stateDir);
  try {
    let st = { mode: 0o600, uid: 0 };
    const text = readSmallFile(path, MAX_KEYRING_BYTES, "a keyring", {
      refuse: (read) => {
        st = { mode: read.mode, uid: read.uid };
        return null;
      },
    });
    // its mode as the file read has it; made 0600 again, saying so when it holds keys (a damaged
    // one, refused next in its own sentence, holds none to guess at), and refused when it cannot
    // be: ownerOnly.ts
    if ((st.mode & 0o077) !== 0) {
      const exposed = keyringOwnerOnly(path, st, holdsKeys(text, path));
      if (exposed) throw new KeyringExposedError(exposed);
    }
    return text;
  } catch (err) {
    if (!(err instanceof SmallFileError)) throw err;
    const p = err.problem;
    if ("code" in p && p.code === "ENOENT") return null;
    if (("code" in p && p.code === "EISDIR") || "special" in p)
      throw new KeyringDamagedError(`${path} is not a usable keyring: it is not a regular file`, path);
    if (!("code" in p))
      throw new KeyringDamagedError(`${path} is not a usable keyring: ${err.message}`, path);
    throw unreadableKeyring(path, p.code);
  }
}

/**
 * keyring.json could not be opened. Permission denied is as often a directory on its way that
 * this user may not enter (the state directory of another user, mode 0700) as the file's own
 * mode: the sentence blamed the file, and its mode was fine. The directory is named when it is
 * the one that refuses.
 */
function unreadableKeyring(path: string, code: string | undefined): KeyringError {
  const closed = code === "EACCES" || code === "EPERM" ? closedDirectory(path) : null;
  if (closed)
    return new KeyringError(
      `${path} cannot be read: this user may not enter the directory ${closed.dir} (mode ${closed.mode}: no search permission for it), so no file in it can be opened (${code}); ` +
        `run the command as the user the directory belongs to (ls -ld ${closed.dir} shows who), or give a state directory of your own (--state-dir or PORTCULLIS_HOME)`,
    );
  return new KeyringError(`${path} cannot be read: ${fileProblem(code)}`);
}

/** Whether the text reads as a keyring, with its sealed keys (parseKeyring, nothing thrown). */
function holdsKeys(text: string, path: string): boolean {
  try {
    parseKeyring(text, path);
    return true;
  } catch {
    return false;
  }
}

const B64URL = /^[A-Za-z0-9_-]+$/;
/** At most this many earlier keys of each kind: a keyring rotated more often is not read. */
const MAX_EARLIER = 64;

function parseKeyring(text: string, path: string): KeyringFile {
  const damaged = (what: string) => new KeyringDamagedError(`${path} is not a usable keyring: ${what}`, path);
  if (text.trim() === "")
    throw damaged("it is empty (as a crash while it was written, a full disk or a bad restore leaves it)");
  let f: unknown;
  try {
    f = JSON.parse(text);
  } catch {
    throw damaged("it is not JSON");
  }
  const obj = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null;
  const b64 = (v: unknown, bytes: number | null): v is string =>
    typeof v === "string" &&
    B64URL.test(v) &&
    (bytes === null ? v.length > 0 : Buffer.from(v, "base64url").length === bytes);
  const wrapped = (v: unknown, plainBytes: number): v is Wrapped =>
    obj(v) && v.alg === WRAP_ALG && b64(v.nonce, NONCE_BYTES) && b64(v.sealed, plainBytes + TAG_BYTES);
  if (!obj(f) || f.format !== KEYRING_FORMAT) throw damaged(`format is not ${KEYRING_FORMAT}`);
  const { kdf, dataKey, audit } = f;
  if (!obj(kdf) || kdf.alg !== "scrypt" || !b64(kdf.salt, null)) throw damaged("bad kdf");
  const { N, r, p } = kdf;
  const int = (v: unknown, max: number): v is number =>
    Number.isSafeInteger(v) && (v as number) >= 1 && (v as number) <= max;
  if (
    !int(N, MAX_SCRYPT_N) ||
    N < 2 ||
    (N & (N - 1)) !== 0 ||
    !int(r, MAX_SCRYPT_R) ||
    !int(p, MAX_SCRYPT_P)
  ) {
    throw damaged("scrypt parameters out of bounds");
  }
  if (!wrapped(dataKey, KEY_BYTES)) throw damaged("bad dataKey");
  if (!obj(audit) || audit.alg !== "X25519" || !b64(audit.publicKey, 32) || !wrapped(audit.privateKey, 32)) {
    throw damaged("bad audit key");
  }
  if (audit.keyId !== auditKeyId(Buffer.from(audit.publicKey, "base64url")))
    throw damaged("keyId does not match");
  const { approver } = f;
  if (approver !== undefined) {
    if (
      !obj(approver) ||
      approver.alg !== "Ed25519" ||
      !b64(approver.publicKey, 32) ||
      !wrapped(approver.privateKey, 32)
    ) {
      throw damaged("bad approver key");
    }
    if (approver.keyId !== approverKeyId(Buffer.from(approver.publicKey, "base64url")))
      throw damaged("approver keyId does not match");
  }
  const { earlier, pendingRotation } = f;
  if (earlier !== undefined) {
    const list = (v: unknown): v is unknown[] => Array.isArray(v) && v.length <= MAX_EARLIER;
    if (!obj(earlier) || !list(earlier.approvers) || !list(earlier.audit) || !list(earlier.dataKeys))
      throw damaged("bad earlier keys");
    for (const a of earlier.approvers)
      if (
        !obj(a) ||
        a.alg !== "Ed25519" ||
        !b64(a.publicKey, 32) ||
        a.keyId !== approverKeyId(Buffer.from(a.publicKey, "base64url"))
      )
        throw damaged("bad earlier approver key");
    for (const a of earlier.audit)
      if (
        !obj(a) ||
        a.alg !== "X25519" ||
        !b64(a.publicKey, 32) ||
        !wrapped(a.privateKey, 32) ||
        a.keyId !== auditKeyId(Buffer.from(a.publicKey, "base64url"))
      )
        throw damaged("bad earlier audit key");
    for (const d of earlier.dataKeys) if (!wrapped(d, KEY_BYTES)) throw damaged("bad earlier data key");
  }
  if (
    pendingRotation !== undefined &&
    (!obj(pendingRotation) || !obj(pendingRotation.event) || !b64(pendingRotation.sealTo, 32))
  )
    throw damaged("bad pendingRotation");
  return f as unknown as KeyringFile;
}

function deriveKek(passphrase: string, salt: Buffer, { N, r, p }: ScryptParams): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(passphrase.normalize("NFC"), salt, KEY_BYTES, { N, r, p, maxmem: 256 * N * r * p }, (err, key) =>
      err ? reject(err) : resolve(key),
    );
  });
}

function dataKeyAad(kdf: KeyringFile["kdf"]): Buffer {
  return Buffer.from(`${KEYRING_FORMAT}\ndata-key\n${canonicalize(kdf)}`);
}

function privateKeyAad(keyId: string, publicKey: string): Buffer {
  return Buffer.from(`${KEYRING_FORMAT}\naudit-private-key\n${keyId}\n${publicKey}`);
}

function earlierDataKeyAad(index: number): Buffer {
  return Buffer.from(`${KEYRING_FORMAT}\nearlier-data-key\n${index}`);
}

function approverKeyAad(keyId: string, publicKey: string): Buffer {
  return Buffer.from(`${KEYRING_FORMAT}\napprover-private-key\n${keyId}\n${publicKey}`);
}

function wrap(key: Buffer, plain: Buffer, aad: Buffer): Wrapped {
  const nonce = randomBytes(NONCE_BYTES);
  const c = createCipheriv(WRAP_ALG, key, nonce, { authTagLength: TAG_BYTES });
  c.setAAD(aad, { plaintextLength: plain.length });
  const sealed = Buffer.concat([c.update(plain), c.final(), c.getAuthTag()]);
  return { alg: WRAP_ALG, nonce: nonce.toString("base64url"), sealed: sealed.toString("base64url") };
}

/**
 * A key sealed under the data key, which the passphrase already opened: a tag failure here means
 * the file was edited (a public half changed, a wrapped key swapped), or damaged in a way that
 * left the data key whole.
 */
function unwrapOrDamaged(key: Buffer, w: Wrapped, aad: Buffer, damaged: string): Buffer {
  try {
    return unwrap(key, w, aad);
  } catch {
    throw new KeyringTamperedError(damaged);
  }
}

function unwrap(key: Buffer, w: Wrapped, aad: Buffer): Buffer {
  const sealed = Buffer.from(w.sealed, "base64url");
  const d = createDecipheriv(WRAP_ALG, key, Buffer.from(w.nonce, "base64url"), { authTagLength: TAG_BYTES });
  d.setAAD(aad, { plaintextLength: sealed.length - TAG_BYTES });
  d.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
  return Buffer.concat([d.update(sealed.subarray(0, sealed.length - TAG_BYTES)), d.final()]);
}

/**
 * The temporary files (syncedTemp) a rewrite of keyring.json left when its process was killed
 * before its rename: each holds the keyring's keys, sealed under a passphrase that may be the one
 * a killed change was given, and nothing reads them. Removed under the rewrite lock
 * (changePassphrase, addApproverKey): see leftKeyringTemps for which are left over.
 */
function removeLeftTemps(path: string): void {
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

/**
 * `text` in a new 0600 file beside `path`, fsynced; returns its path. Every byte is written, or the
 * file is removed and a KeyringError names why (writeWhole): a part renamed over keyring.json is a
 * keyring no passphrase opens, its keys and all they seal gone.
 */
function syncedTemp(path: string, text: string): string {
  const tmp = `${path}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`;
  const fd = openSync(tmp, "wx", 0o600);
  try {
    writeWhole(fd, text);
    fsyncSync(fd);
  } catch (err) {
    closeSync(fd);
    rmSync(tmp, { force: true });
    throw new KeyringError(
      `cannot write the new ${path}: ${unwrittenBecause((err as NodeJS.ErrnoException).code)}`,
    );
  }
  closeSync(fd);
  return tmp;
}

/**
 * Writes `path` atomically and only if it does not exist: the bytes go to a
 * temporary file (0600, fsynced), which is then hard-linked to `path` — link(2)
 * fails with EEXIST rather than replacing — and the directory is fsynced.
 */
function writeFileExclusive(path: string, text: string): void {
  const tmp = syncedTemp(path, text);
  try {
    linkSync(tmp, path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EEXIST") throw new KeyringExistsError(path);
    throw err;
  } finally {
    unlinkSync(tmp);
  }
  fsyncDir(join(path, ".."));
}

/** Replaces `path` atomically (temporary file, fsync, rename over it, directory fsync). */
function replaceFile(path: string, text: string): void {
  const tmp = syncedTemp(path, text);
  renameSync(tmp, path);
  fsyncDir(join(path, ".."));
}

function fsyncDir(dir: string): void {
  let fd: number | undefined;
  try {
    fd = openSync(dir, "r");
    fsyncSync(fd);
  } catch {
    // Not every platform lets a directory be opened or fsynced (Windows); the link is done either way.
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
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
export type { AuditEntry, KeyringFile };
