import type { KeyObject } from "node:crypto";
import { AuditLog } from "../audit/log.js";
import { parseHeader, splitRecord } from "../audit/record.js";
import {
  type DecisionSigner,
  derivedSessionPrivateKey,
  verifyApproverSignature,
} from "../keyring/approver.js";
import type { Store } from "../store/db.js";
import { canonicalJson, sha256Tag } from "../util/canonical.js";
import { derivedEpk, openDerivedRecord } from "./pin.js";

/**
 * Passkeys in the audit chain (docs/audit-format.md, "Passkey pin and removal"). The passkeys
 * table is a cache; what gives a passkey authority is its pin record here, signed by the pinned
 * approver key (so only the passphrase adds one), and what takes it away is a removal record
 * (which anyone may write: removing authority needs no proof).
 *
 * Gateways cannot open sealed records, so both records are sealed in writer sessions of their
 * own whose ephemeral keys are derived publicly from the credential id, like the approver key's
 * pin: whoever knows a credential id finds its records by the header's `epk` and opens them.
 */

export const PASSKEY_PIN_EVENT = "passkey_pinned";
export const PASSKEY_REMOVED_EVENT = "passkey_removed";
const PIN_LABEL = "portcullis passkey pin v1\n";
const REMOVAL_LABEL = "portcullis passkey removal v1\n";
const TYPE_PREFIX = Buffer.from('"type":"passkey_', "latin1");

/** A passkey as its pin record names it. */
export interface PinnedPasskey {
  /** base64url, as the authenticator gives it */
  credentialId: string;
  /** COSE, base64url */
  publicKey: string;
  name: string;
  /** the signature counter at registration */
  counter: number;
  rpId: string;
  createdAt: string;
  /** the pin record's seq */
  seq: number;
}

type PinFields = Omit<PinnedPasskey, "seq">;

/** What the approver key signs to pin a passkey: the digest of this statement's canonical JSON. */
export function passkeyPinDigest(p: PinFields): string {
  return sha256Tag(
    canonicalJson({
      v: "portcullis-passkey-pin/1",
      credentialId: p.credentialId,
      publicKey: p.publicKey,
      name: p.name,
      counter: p.counter,
      rpId: p.rpId,
      createdAt: p.createdAt,
    }),
  );
}

const pinSession = (credentialId: string) =>
  derivedSessionPrivateKey(PIN_LABEL, Buffer.from(credentialId, "utf8"));
const removalSession = (credentialId: string) =>
  derivedSessionPrivateKey(REMOVAL_LABEL, Buffer.from(credentialId, "utf8"));

/** Appends the pin of a passkey, signed by `signer` (the pinned approver key). Returns its seq. */
export function writePasskeyPin(db: Store, stateDir: string, signer: DecisionSigner, p: PinFields): number {
  return AuditLog.open(db, stateDir).appendInOwnSession(
    {
      type: PASSKEY_PIN_EVENT,
      credentialId: p.credentialId,
      publicKey: p.publicKey,
      name: p.name,
      counter: p.counter,
      rpId: p.rpId,
      createdAt: p.createdAt,
      approverKeyId: signer.keyId,
      approverSignature: signer.sign(passkeyPinDigest(p)),
    },
    pinSession(p.credentialId),
  ).seq;
}

/** Appends the removal of a passkey (no proof needed: it only takes authority away). */
export function writePasskeyRemoval(
  db: Store,
  stateDir: string,
  credentialId: string,
  name: string | null,
  by: string,
): number {
  return AuditLog.open(db, stateDir).appendInOwnSession(
    { type: PASSKEY_REMOVED_EVENT, credentialId, name, by },
    removalSession(credentialId),
  ).seq;
}

export type PasskeyLookup =
  | { ok: true; pin: PinnedPasskey }
  | { ok: false; why: string; removed?: true; seq?: number };

interface ChainRecord {
  seq: number;
  type: string;
  record: Buffer;
}

/**
 * Reads the chain's passkey records incrementally (by header type, only records after the last
 * one read), indexed by the header's `epk`. One per DecisionVerifier: a gateway pays one scan of
 * the chain the first time it meets a passkey decision, then only the new records.
 */
export class PasskeyChain {
  private lastSeq = 0;
  private readonly byEpk = new Map<string, ChainRecord[]>();
  private readonly seen = new Set<number>();
  /** verified pins, per credential id (records never change) */
  private readonly pins = new Map<string, PinnedPasskey>();
  private readonly query: (after: number) => { seq: number; record: Buffer }[];
  private readonly head: () => number;
  /**
   * The `epk` of each credential's removal session, by credential id (a function of the id alone).
   * Deriving it is a PKCS#8 import and a DER export through OpenSSL's decoders and encoders, about
   * 600 µs of CPU here: a gateway looks for a passkey's removal before every call the passkey's
   * session grant covers (session 49). Only where to look is remembered, never whether a removal
   * was found. Bounded: the ids come from signatures in rows any process of the user can write.
   */
  private readonly removalEpks = new Map<string, string>();

  constructor(db: Store) {
    const stmt = db.prepare(
      `SELECT seq, record FROM audit_records
        WHERE seq > ? AND instr(substr(record, 1, 512), ?) > 0 ORDER BY seq`,
    );
    const maxSeq = db.prepare("SELECT max(seq) FROM audit_records").pluck();
    this.head = () => (maxSeq.get() as number | null) ?? 0;
    this.query = (after) => stmt.all(after, TYPE_PREFIX) as { seq: number; record: Buffer }[];
  }

  refresh(): void {
    const head = this.head();
    for (const r of this.query(this.lastSeq)) {
      if (this.seen.has(r.seq)) continue;
      this.seen.add(r.seq);
      const parts = splitRecord(r.record);
      const header = parts && parseHeader(parts.header);
      if (!header || (header.type !== PASSKEY_PIN_EVENT && header.type !== PASSKEY_REMOVED_EVENT)) continue;
      const list = this.byEpk.get(header.epk) ?? [];
      list.push({ seq: r.seq, type: header.type, record: r.record });
      this.byEpk.set(header.epk, list);
      this.lastSeq = Math.max(this.lastSeq, r.seq);
    }
    this.lastSeq = Math.max(this.lastSeq, head);
  }

  /**
   * The passkey `credentialId` as pinned in the chain by a record signed with `approverKey`,
   * unless a removal record names it; else why it has no authority.
   */
  lookup(credentialId: string, approverKey: KeyObject, auditPublic: KeyObject): PasskeyLookup {
    this.refresh();
    const removal = this.removal(credentialId);
    if (removal !== null) {
      return {
        ok: false,
        why: `passkey ${credentialId} was removed (record ${removal})`,
        removed: true,
        seq: removal,
      };
    }
    const known = this.pins.get(credentialId);
    if (known) return { ok: true, pin: known };
    const esk = pinSession(credentialId);
    for (const r of this.byEpk.get(derivedEpk(esk)) ?? []) {
      if (r.type !== PASSKEY_PIN_EVENT) continue;
      const event = openDerivedRecord(r.record, esk, auditPublic);
      const pin = readPin(event, credentialId, r.seq);
      const signature = event?.approverSignature;
      if (!pin || typeof signature !== "string") continue;
      if (!verifyApproverSignature(approverKey, passkeyPinDigest(pin), signature)) continue;
      this.pins.set(credentialId, pin);
      return { ok: true, pin };
    }
    return { ok: false, why: `passkey ${credentialId} is not pinned in the audit chain` };
  }

  /**
   * The seq of a removal record of `credentialId`, or null: any `passkey_removed` record sealed in
   * the session derived from it. It is not opened: removing needs no authority, and a record that
   * cannot be opened (another audit key put in keyring.json) must not bring a passkey back.
   */
  private removal(credentialId: string): number | null {
    let epk = this.removalEpks.get(credentialId);
    if (epk === undefined) {
      epk = derivedEpk(removalSession(credentialId));
      if (this.removalEpks.size >= MAX_REMEMBERED_EPKS) this.removalEpks.clear();
      this.removalEpks.set(credentialId, epk);
    }
    return this.byEpk.get(epk)?.find((r) => r.type === PASSKEY_REMOVED_EVENT)?.seq ?? null;
  }
}

/** Removal session epks remembered per PasskeyChain, at most (a human registers a few passkeys). */
const MAX_REMEMBERED_EPKS = 256;

function readPin(
  event: Record<string, unknown> | null,
  credentialId: string,
  seq: number,
): PinnedPasskey | null {
  if (!event || event.type !== PASSKEY_PIN_EVENT || event.credentialId !== credentialId) return null;
  const { publicKey, name, counter, rpId, createdAt } = event;
  if (typeof publicKey !== "string" || typeof name !== "string" || typeof rpId !== "string") return null;
  if (typeof createdAt !== "string" || typeof counter !== "number" || !Number.isInteger(counter)) return null;
  return { credentialId, publicKey, name, counter, rpId, createdAt, seq };
}
