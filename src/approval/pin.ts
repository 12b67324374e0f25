import { createPublicKey, diffieHellman, type KeyObject } from "node:crypto";
import { AuditLog } from "../audit/log.js";
import { parseHeader, splitRecord } from "../audit/record.js";
import { deriveRecordKey, unseal } from "../audit/seal.js";
import { approverKeyId, type DecisionSigner, pinSessionPrivateKey } from "../keyring/approver.js";
import { addApproverKey, loadPublicKeyring, type UnlockedKeyring } from "../keyring/keyring.js";
import { auditKeyId, rawX25519PublicKey } from "../keyring/x25519.js";
import type { Store } from "../store/db.js";
import { pinRefusal } from "./chainHistory.js";
import { recordLateChange } from "./lateWrapping.js";
import { IS_PIN_RECORD, PIN_TYPE_HEX } from "./pinSchema.js";

/**
 * The approver key pinned in the audit chain (docs/audit-format.md, "Approver key pin").
 *
 * Gateways never hold the passphrase and cannot open sealed records, and keyring.json can be
 * swapped by any process of the same user. So the approver public key is pinned by an
 * `approver_key_pinned` record sealed in a writer session of its own whose ephemeral X25519
 * key is derived publicly from the approver public key (pinSessionPrivateKey): whoever knows
 * a candidate key recomputes the session, checks that the header's `epk` is the derived one,
 * opens the record and confirms it names that key. The FIRST pin in the chain is the one
 * trusted; a later pin is ignored and reported (there is no rotation yet).
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
  | { state: "other"; seq: number }
  | { state: "no-keyring" };

/** The pins after a seq, in order: answered by the partial index audit_records_pins (pinSchema.ts). */
export const PIN_QUERY = `SELECT seq, record FROM audit_records WHERE seq > ? AND ${IS_PIN_RECORD} ORDER BY seq`;

interface PinRecord {
  seq: number;
  record: Buffer;
}

/**
 * Reads the chain's pin records, incrementally (only records after the last one read), by their
 * header type: a gateway calls this when it has no pin yet, and it costs one read of a partial
 * index that holds only the pins' seq numbers (src/approval/pinSchema.ts), however long the chain.
 */
export class PinTracker {
  private lastSeq = 0;
  private first: PinRecord | null = null;
  private later: number[] = [];
  private readonly query: (after: number) => PinRecord[];

  constructor(db: Store) {
    const stmt = db.prepare(PIN_QUERY);
    const maxSeq = db.prepare("SELECT max(seq) FROM audit_records").pluck();
    this.query = (after) => {
      const head = (maxSeq.get() as number | null) ?? 0;
      const rows = stmt.all(after) as PinRecord[];
      this.lastSeq = Math.max(after, head);
      return rows;
    };
  }

  /** Later pins seen (ignored): their seq numbers. */
  get ignored(): readonly number[] {
    return this.later;
  }

  refresh(): void {
    for (const r of this.query(this.lastSeq)) {
      const header = headerOfPin(r.record);
      if (!header) continue;
      if (!this.first) this.first = r;
      else if (r.seq !== this.first.seq && !this.later.includes(r.seq)) this.later.push(r.seq);
    }
  }

  /** Whether `candidate` (raw Ed25519 public key) is the first pinned key. */
  status(candidate: Uint8Array, auditPublic: KeyObject): PinStatus {
    if (!this.first) this.refresh();
    if (!this.first) return { state: "none" };
    const ok = pinNames(this.first.record, candidate, auditPublic);
    return { state: ok ? "match" : "other", seq: this.first.seq };
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

/**
 * The event of `record` when it was sealed to `auditPublic` in the writer session whose
 * ephemeral private key is `esk` (derived publicly: pins), else null. Header type not checked.
 */
export function openDerivedRecord(
  record: Uint8Array,
  esk: KeyObject,
  auditPublic: KeyObject,
): Record<string, unknown> | null {
  const parts = splitRecord(record);
  const header = parts && parseHeader(parts.header);
  if (!parts || !header) return null;
  const auditRaw = rawX25519PublicKey(auditPublic);
  if (header.key !== auditKeyId(auditRaw)) return null;
  const epkRaw = rawX25519PublicKey(createPublicKey(esk));
  if (header.epk !== epkRaw.toString("base64url")) return null;
  try {
    const shared = diffieHellman({ privateKey: esk, publicKey: auditPublic });
    const key = deriveRecordKey(shared, epkRaw, auditRaw);
    const event = JSON.parse(
      unseal(key, Buffer.from(header.nonce, "base64url"), parts.header, parts.sealed).toString("utf8"),
    ) as unknown;
    return event && typeof event === "object" && !Array.isArray(event)
      ? (event as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
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
  const keyring = loadPublicKeyring(stateDir);
  if (!keyring) throw new Error("the keyring disappeared");
  const status = new PinTracker(db).status(signer.publicKeyRaw, keyring.publicKey);
  if (status.state === "other") throw new ApproverKeyMismatchError(signer.keyId);
  if (status.state === "none") {
    const refused = pinRefusal(db, keyring.keyId);
    if (refused) throw new PinRefusedError(signer.keyId, refused);
    // Looked at again under the write lock, with the pin's write: two commands taking the
    // passphrase at once (an old keyring's first upgrade) each found none and each pinned.
    const tracker = new PinTracker(db);
    const stillNone = () => tracker.status(signer.publicKeyRaw, keyring.publicKey).state === "none";
    const seq = writePinIf(db, stateDir, signer, "no approver key was pinned yet", stillNone);
    if (seq !== null) notice(`approver key ${signer.keyId} pinned in the audit chain (record ${seq})`);
    // another process pinned first: this key, or another (refused as any mismatch is)
    else if (new PinTracker(db).status(signer.publicKeyRaw, keyring.publicKey).state === "other")
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
  const keyring = loadPublicKeyring(stateDir);
  if (!keyring) return;
  const status = new PinTracker(db).status(unlocked.signer.publicKeyRaw, keyring.publicKey);
  if (status.state === "other") throw new ApproverKeyMismatchError(unlocked.signer.keyId);
  // a passphrase change its command left unrecorded is recorded now, late
  await recordLateChange(db, stateDir, unlocked.auditPrivateKey, notice);
}
