import { createPublicKey, type KeyObject } from "node:crypto";
import { AuditLog } from "../audit/log.js";
import { parseHeader, splitRecord } from "../audit/record.js";
import { approverKeyId, type DecisionSigner, pinSessionPrivateKey } from "../keyring/approver.js";
import { addApproverKey, loadPublicKeyring, type UnlockedKeyring } from "../keyring/keyring.js";
import { rawX25519PublicKey } from "../keyring/x25519.js";
import type { Store } from "../store/db.js";
import { pinRefusal } from "./chainHistory.js";
import { recordLateChange } from "./lateWrapping.js";
import { type ChainState, openDerivedRecord, PinChain } from "./pinChain.js";
import { IS_PIN_RECORD, PIN_TYPE_HEX } from "./pinSchema.js";
import { recordLateRotation } from "./rotation.js";

export { openDerivedRecord };

/**
 * The approver key pinned in the audit chain (docs/audit-format.md, "Approver key pin").
 *
 * Gateways never hold the passphrase and cannot open sealed records, and keyring.json can be
 * swapped by any process of the same user. So the approver public key is pinned by an
 * `approver_key_pinned` record sealed in a writer session of its own whose ephemeral X25519
 * key is derived publicly from the approver public key (pinSessionPrivateKey): whoever knows
 * a candidate key recomputes the session, checks that the header's `epk` is the derived one,
 * opens the record and confirms it names that key. The FIRST pin in the chain is the one
 * trusted, until a rotation record signed by it names the next (src/approval/pinChain.ts); a
 * later pin that is no such rotation is ignored and reported.
 */

export const PIN_EVENT = "approver_key_pinned";
if (Buffer.from(`"type":"${PIN_EVENT}"`, "latin1").toString("hex") !== PIN_TYPE_HEX)
  throw new Error("pinSchema.ts spells another event type than PIN_EVENT");

export class ApproverKeyMismatchError extends Error {
  override name = "ApproverKeyMismatchError";
  constructor(keyringKeyId: string) {
    super(
      `the keyring's approver key ${keyringKeyId} is not the one pinned in the audit chain: ` +
        "keyring.json was replaced or edited; no decision signed with it is honoured",
    );
  }
}

/**
 * The keyring's approver key is one the chain rotated away from: keyring.json is a copy made
 * before a rotation (a backup put back, or a thief's copy). A kind of mismatch.
 */
export class RotatedAwayError extends ApproverKeyMismatchError {
  override name = "RotatedAwayError";
  constructor(keyringKeyId: string, replacedAt: number) {
    super(keyringKeyId);
    this.message =
      `the keyring's approver key ${keyringKeyId} was rotated away (audit record ${replacedAt}): keyring.json is a copy made before that rotation; ` +
      "no decision signed with it is honoured; use the keyring the rotation wrote, with the passphrase it was given";
  }
}

/**
 * The keyring's approver key is the new key of a rotation the chain does not hold yet (its command
 * was killed before its record), and recording it now failed (the store's lock held by another
 * process, a read-only store): not a keyring replaced or edited. A kind of mismatch: nothing
 * signed with the key is honoured until the record is written.
 */
export class RotationUnrecordedError extends ApproverKeyMismatchError {
  override name = "RotationUnrecordedError";
  constructor(keyringKeyId: string, why: string) {
    super(keyringKeyId);
    this.message =
      `the keyring's approver key ${keyringKeyId} is the new key of a rotation not yet recorded in the audit chain, and it could not be recorded now (${why}); ` +
      "no decision signed with it is honoured until it is: run the command again once the store can be written";
  }
}

/** The mismatch error for `status` (an "other" pin status). */
export function mismatchError(keyId: string, status: PinStatus): ApproverKeyMismatchError {
  return status.state === "other" && status.rotatedAway
    ? new RotatedAwayError(keyId, status.rotatedAway.replacedAt)
    : new ApproverKeyMismatchError(keyId);
}

/** The mismatch error, saying so when it is a late rotation record that could not be written. */
function lateMismatch(keyId: string, status: PinStatus, unrecorded: Error | null): ApproverKeyMismatchError {
  return unrecorded ? new RotationUnrecordedError(keyId, unrecorded.message) : mismatchError(keyId, status);
}

/**
 * No approver key is pinned, and this one may not be: the store says a chain existed that no
 * longer accounts for it (src/approval/chainHistory.ts). A kind of mismatch: every command that
 * refuses a key not pinned refuses this one too.
 */
export class PinRefusedError extends ApproverKeyMismatchError {
  override name = "PinRefusedError";
  constructor(
    keyringKeyId: string,
    readonly problem: string,
  ) {
    super(keyringKeyId);
    this.message =
      `no approver key is pinned in the audit chain, and the keyring's (${keyringKeyId}) will not be: ${problem}; ` +
      "restore the state directory (store and keyring.json) from a backup, or start over in a new state directory with 'portcullis init'";
  }
}

export type PinStatus =
  | { state: "none" }
  | { state: "match"; seq: number }
  /** `rotatedAway`: the candidate is a key the chain rotated away from, at record `replacedAt` */
  | { state: "other"; seq: number; rotatedAway?: { keyId: string; replacedAt: number } }
  | { state: "no-keyring" };

/** The pins after a seq, in order: answered by the partial index audit_records_pins (pinSchema.ts). */
export const PIN_QUERY = `SELECT seq, record FROM audit_records WHERE seq > ? AND ${IS_PIN_RECORD} ORDER BY seq`;

/** keyring.json's earlier keys (a rotation's), as candidates for the chain's first pin. */
export interface EarlierKeys {
  approvers: readonly Uint8Array[];
  audits: readonly Uint8Array[];
}
const NO_EARLIER: EarlierKeys = { approvers: [], audits: [] };

/** The earlier keys a public keyring names (src/keyring/keyring.ts, a rotation's). */
export function earlierOf(k: { earlierApprovers: Buffer[]; earlierAudits: Buffer[] }): EarlierKeys {
  return { approvers: k.earlierApprovers, audits: k.earlierAudits };
}

/**
 * Follows the chain of pins (src/approval/pinChain.ts: the first pin, then each rotation that
 * verifies), reading at each look only the pin records written since the last one, through a
 * partial index that holds only the pins' seq numbers (src/approval/pinSchema.ts), however long
 * the chain.
 */
export class PinTracker {
  private readonly chain: PinChain;

  constructor(db: Store) {
    this.chain = new PinChain(db);
  }

  /** Later pins that are no verified rotation (ignored): their seq numbers. */
  get ignored(): readonly number[] {
    return this.chain.ignored;
  }

  /**
   * The chain as followed now (keyring.json's keys are the candidates for its first pin). The audit
   * key comes as its raw 32 bytes: a gateway follows the chain before every call a session grant
   * covers, and reading them out of a KeyObject (a DER export through OpenSSL's encoders) cost
   * about 90 µs of CPU per call here, more than the rest of the grant's checks together (session 49).
   */
  follow(candidate: Uint8Array, auditRaw: Uint8Array, earlier: EarlierKeys = NO_EARLIER): ChainState {
    return this.chain.follow({
      approvers: [candidate, ...earlier.approvers],
      audits: [auditRaw, ...earlier.audits],
    });
  }

  /**
   * Whether `candidate` (raw Ed25519 public key) and `auditPublic` are the keys at the end of the
   * chain: its first pin, or the key the last rotation that verifies made current.
   */
  status(candidate: Uint8Array, auditPublic: KeyObject, earlier: EarlierKeys = NO_EARLIER): PinStatus {
    const auditRaw = rawX25519PublicKey(auditPublic);
    const s = this.follow(candidate, auditRaw, earlier);
    if (s.state === "none") return { state: "none" };
    if (s.state === "unopened") return { state: "other", seq: s.seq };
    if (s.head.approverRaw.equals(candidate) && s.head.auditRaw.equals(auditRaw))
      return { state: "match", seq: s.head.seq };
    const i = s.links.findIndex((l) => l.approverRaw.equals(candidate));
    const replaced = i >= 0 && i < s.links.length - 1 ? s.links[i + 1] : undefined;
    return replaced
      ? {
          state: "other",
          seq: s.head.seq,
          rotatedAway: { keyId: s.links[i]!.approverKeyId, replacedAt: replaced.seq },
        }
      : { state: "other", seq: s.head.seq };
  }
}

function headerOfPin(record: Buffer) {
  const parts = splitRecord(record);
  const header = parts && parseHeader(parts.header);
  return header && header.type === PIN_EVENT ? { parts, header } : null;
}

/** True when `record` is a pin of `candidate`, sealed in the session derived from it to `auditPublic`. */
export function pinNames(record: Buffer, candidate: Uint8Array, auditPublic: KeyObject): boolean {
  if (!headerOfPin(record)) return false;
  const event = openDerivedRecord(record, pinSessionPrivateKey(candidate), auditPublic);
  return (
    event?.type === PIN_EVENT &&
    event.approverPublicKey === Buffer.from(candidate).toString("base64url") &&
    event.approverKeyId === approverKeyId(candidate)
  );
}

/** The public half of a derived session key, base64url: what the header's `epk` of its records holds. */
export function derivedEpk(esk: KeyObject): string {
  return rawX25519PublicKey(createPublicKey(esk)).toString("base64url");
}

/** Appends the pin of `signer`'s public key to the chain. */
export function writePin(db: Store, stateDir: string, signer: DecisionSigner, why: string): number {
  return writePinIf(db, stateDir, signer, why)!;
}

/** writePin, only if `condition` holds under the write lock; null when it did not. */
function writePinIf(
  db: Store,
  stateDir: string,
  signer: DecisionSigner,
  why: string,
  condition?: () => boolean,
): number | null {
  const log = AuditLog.open(db, stateDir);
  return (
    log.appendInOwnSessionIf(
      {
        type: PIN_EVENT,
        approverKeyId: signer.keyId,
        approverPublicKey: signer.publicKeyRaw.toString("base64url"),
        why,
      },
      pinSessionPrivateKey(signer.publicKeyRaw),
      condition,
    )?.seq ?? null
  );
}

/**
 * What a command that took the passphrase signs with: the keyring's approver key, added first
 * to a keyring made before decisions were signed, and pinned in the audit chain when no key is
 * pinned yet (both recorded there). Throws ApproverKeyMismatchError when the chain pins another
 * key. `notice` is told what was done (for stderr).
 */
export async function pinnedSigner(
  db: Store,
  stateDir: string,
  passphrase: string,
  notice: (line: string) => void = () => {},
): Promise<DecisionSigner> {
  const unlocked = await addApproverKey(stateDir, passphrase);
  unlocked.dataKey.fill(0);
  for (const k of unlocked.earlierDataKeys) k.fill(0);
  const signer = unlocked.signer!;
  ensurePinned(db, stateDir, signer, notice);
  // a passphrase change its command left unrecorded is recorded now, late
  await recordLateChange(db, stateDir, unlocked.auditPrivateKey, notice);
  return signer;
}

/**
 * The signer's key is the pinned approver key, pinning it when no key is pinned yet (trust on
 * first pin); another pinned key is ApproverKeyMismatchError. For every holder of a signer made
 * from the passphrase (the CLI, the console).
 */
export function ensurePinned(
  db: Store,
  stateDir: string,
  signer: DecisionSigner,
  notice: (line: string) => void = () => {},
): void {
  // a rotation whose command was killed before its record: recorded now, before the key is checked
  const unrecorded = recordLateRotation(db, stateDir, notice);
  const keyring = loadPublicKeyring(stateDir);
  if (!keyring) throw new Error("the keyring disappeared");
  const status = new PinTracker(db).status(signer.publicKeyRaw, keyring.publicKey, earlierOf(keyring));
  if (status.state === "other") throw lateMismatch(signer.keyId, status, unrecorded);
  if (status.state === "none") {
    const refused = pinRefusal(db, keyring.keyId);
    if (refused) throw new PinRefusedError(signer.keyId, refused);
    // Looked at again under the write lock, with the pin's write: two commands taking the
    // passphrase at once (an old keyring's first upgrade) each found none and each pinned.
    const tracker = new PinTracker(db);
    const stillNone = () =>
      tracker.status(signer.publicKeyRaw, keyring.publicKey, earlierOf(keyring)).state === "none";
    const seq = writePinIf(db, stateDir, signer, "no approver key was pinned yet", stillNone);
    if (seq !== null) notice(`approver key ${signer.keyId} pinned in the audit chain (record ${seq})`);
    // another process pinned first: this key, or another (refused as any mismatch is)
    else if (
      new PinTracker(db).status(signer.publicKeyRaw, keyring.publicKey, earlierOf(keyring)).state === "other"
    )
      throw new ApproverKeyMismatchError(signer.keyId);
  }
}

/**
 * For a command that took the passphrase for another purpose (reading the audit): a keyring
 * without an approver key gets one, pinned; a keyring whose approver key is not the pinned one
 * is refused (ApproverKeyMismatchError). A keyring with its key and no pin yet is left alone:
 * its first decision pins it.
 */
export async function checkApproverKey(
  db: Store,
  stateDir: string,
  passphrase: string,
  unlocked: UnlockedKeyring,
  notice: (line: string) => void,
): Promise<void> {
  if (!unlocked.signer) {
    await pinnedSigner(db, stateDir, passphrase, (line) => notice(`keyring upgraded: ${line}`));
    return;
  }
  const unrecorded = recordLateRotation(db, stateDir, notice);
  const keyring = loadPublicKeyring(stateDir);
  if (!keyring) return;
  const status = new PinTracker(db).status(
    unlocked.signer.publicKeyRaw,
    keyring.publicKey,
    earlierOf(keyring),
  );
  if (status.state === "other") throw lateMismatch(unlocked.signer.keyId, status, unrecorded);
  // a passphrase change its command left unrecorded is recorded now, late
  await recordLateChange(db, stateDir, unlocked.auditPrivateKey, notice);
}
