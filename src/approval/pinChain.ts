import { createPublicKey, type KeyObject } from "node:crypto";
import { openInOwnSession } from "../audit/ownSession.js";
import { parseHeader, splitRecord } from "../audit/record.js";
import {
  approverKeyId,
  derivedSessionPrivateKey,
  ed25519PublicKeyFromRaw,
  pinSessionPrivateKey,
  verifyApproverSignature,
} from "../keyring/approver.js";
import { auditKeyId, rawX25519PublicKey, x25519PublicKeyFromRaw } from "../keyring/x25519.js";
import type { Store } from "../store/db.js";
import { canonicalJson, sha256Tag } from "../util/canonical.js";
import { IS_PIN_RECORD } from "./pinSchema.js";

/**
 * The chain of approver key pins (docs/audit-format.md, "Approver key pin" and "Key rotation"):
 * the first pin in the audit chain, then each rotation record whose signature verifies under the
 * key current at that point. Every decision check follows it (src/approval/pin.ts's PinTracker,
 * DecisionVerifier): the key at its end is the one honoured, and only while keyring.json holds
 * that same key and the audit key the chain names with it.
 *
 * A rotation record is an `approver_key_pinned` record (found through the pins' partial index,
 * src/approval/pinSchema.ts) that also carries `rotation`, a statement naming the key it
 * replaces, the new approver and audit public keys, and `rotationSignature`, the replaced key's
 * signature over that statement. It is sealed to the audit key current before it, in a writer
 * session derived publicly from the key it replaces (ROTATION_LABEL): a gateway, which knows the
 * current key from the chain itself, finds and opens it without keyring.json's help, so a
 * keyring.json put back to an earlier copy cannot hide a rotation. A same-user writer without the
 * current private key cannot make one: records that do not verify are ignored and reported.
 */

export const ROTATION_LABEL = "portcullis approver key rotation v1\n";
export const ROTATION_STATEMENT = "portcullis-key-rotation/1";
/** The header type of pins and rotation records (pin.ts checks it against pinSchema.ts). */
export const PIN_EVENT_TYPE = "approver_key_pinned";
const PIN_EVENT = PIN_EVENT_TYPE;

/** What the replaced approver key signs: the digest of this statement's canonical JSON. */
export interface RotationStatement {
  v: typeof ROTATION_STATEMENT;
  /** the approver public key replaced, base64url */
  from: string;
  /** the new approver public key, base64url */
  to: string;
  /** the new audit public key, base64url */
  audit: string;
  at: string;
}

export function rotationDigest(s: RotationStatement): string {
  return sha256Tag(canonicalJson(s));
}

/** The writer session of a rotation away from `fromRaw` (derived publicly from it). */
export function rotationSessionPrivateKey(fromRaw: Uint8Array): KeyObject {
  return derivedSessionPrivateKey(ROTATION_LABEL, fromRaw);
}

/** One key of the chain: the record that made it current, the approver key, the audit key. */
export interface ChainLink {
  seq: number;
  approverRaw: Buffer;
  approverKeyId: string;
  auditRaw: Buffer;
}

/** The keys keyring.json names (current and earlier): the candidates for the first pin. */
export interface PinCandidates {
  approvers: readonly Uint8Array[];
  audits: readonly Uint8Array[];
}

export type ChainState =
  | { state: "none" }
  /** the first pin names no key among the candidates */
  | { state: "unopened"; seq: number }
  | { state: "head"; head: ChainLink; links: readonly ChainLink[] };

interface PinRecord {
  seq: number;
  record: Buffer;
}

/**
 * The pin records after a seq and, as a last row whose record is NULL, the chain's head seq: one
 * statement, so one read of the store. Read as two statements, a pin committed between them came
 * after the head read first yet was read already; the next look, starting after that head, read it
 * a second time and took the copy for a pin that is no rotation (a false "ignored" report).
 */
export const PIN_ROWS_AND_HEAD = `SELECT seq, record FROM audit_records WHERE seq > ? AND ${IS_PIN_RECORD}
  UNION ALL SELECT max(seq), NULL FROM audit_records`;

/**
 * Reads the chain's pin records incrementally (each call reads only those written since the
 * last) and follows them. What it has followed lives in this object only: a record rewritten in
 * the store later cannot take a link back (the hash chain and `audit verify` say it was edited).
 */
export class PinChain {
  private lastSeq = 0;
  private readonly records: PinRecord[] = [];
  private links: ChainLink[] = [];
  /** how many records after the first have been walked */
  private walked = 1;
  private readonly forged: number[] = [];
  private readonly rows: (after: number) => { seq: number | null; record: Buffer | null }[];

  constructor(db: Store) {
    const stmt = db.prepare(PIN_ROWS_AND_HEAD);
    this.rows = (after) => stmt.all(after) as { seq: number | null; record: Buffer | null }[];
  }

  /** Later pin records that are no verified rotation (ignored): their seq numbers. */
  get ignored(): readonly number[] {
    return this.forged;
  }

  /** Reads the pin records written since the last read, and follows the chain as far as it can. */
  follow(candidates: PinCandidates): ChainState {
    let head = 0;
    const read: PinRecord[] = [];
    for (const { seq, record } of this.rows(this.lastSeq)) {
      if (record === null) head = seq ?? 0;
      else if (pinHeader(record)) read.push({ seq: seq!, record });
    }
    // a compound statement's rows come in no promised order: the chain is followed by seq
    if (read.length > 1) read.sort((a, b) => a.seq - b.seq);
    this.records.push(...read);
    this.lastSeq = Math.max(this.lastSeq, head);
    const first = this.records[0];
    if (!first) return { state: "none" };
    if (this.links.length === 0) {
      const link = firstLink(first, candidates);
      if (!link) return { state: "unopened", seq: first.seq };
      this.links = [link];
      this.walked = 1;
    }
    for (; this.walked < this.records.length; this.walked++) {
      const r = this.records[this.walked]!;
      const next = rotationLink(r, this.links[this.links.length - 1]!);
      if (next) this.links.push(next);
      else if (!this.forged.includes(r.seq)) this.forged.push(r.seq);
    }
    return { state: "head", head: this.links[this.links.length - 1]!, links: this.links };
  }
}

function pinHeader(record: Uint8Array) {
  const parts = splitRecord(record);
  const header = parts && parseHeader(parts.header);
  return header && header.type === PIN_EVENT ? header : null;
}

/** The first pin opened with one of the candidates, or null when none opens it. */
function firstLink(r: PinRecord, c: PinCandidates): ChainLink | null {
  const header = pinHeader(r.record)!;
  const audit = c.audits.find((a) => auditKeyId(a) === header.key);
  if (!audit) return null;
  for (const approver of c.approvers) {
    const esk = pinSessionPrivateKey(approver);
    if (rawX25519PublicKey(createPublicKey(esk)).toString("base64url") !== header.epk) continue;
    const event = openSealed(r.record, esk, audit);
    const raw = Buffer.from(approver);
    if (
      event?.type === PIN_EVENT &&
      event.approverPublicKey === raw.toString("base64url") &&
      event.approverKeyId === approverKeyId(raw)
    )
      return {
        seq: r.seq,
        approverRaw: raw,
        approverKeyId: approverKeyId(raw),
        auditRaw: Buffer.from(audit),
      };
  }
  return null;
}

/** The link a rotation record makes from `from`, or null when it is none (forged, or another pin). */
function rotationLink(r: PinRecord, from: ChainLink): ChainLink | null {
  const event = openSealed(r.record, rotationSessionPrivateKey(from.approverRaw), from.auditRaw);
  if (!event || event.type !== PIN_EVENT) return null;
  const rot = event.rotation as Partial<RotationStatement> | undefined;
  const signature = event.rotationSignature;
  if (!rot || typeof rot !== "object" || typeof signature !== "string") return null;
  const { to, audit, at } = rot;
  if (typeof to !== "string" || typeof audit !== "string" || typeof at !== "string") return null;
  if (rot.v !== ROTATION_STATEMENT || rot.from !== from.approverRaw.toString("base64url")) return null;
  if (event.approverPublicKey !== to) return null;
  let toRaw: Buffer;
  let auditRaw: Buffer;
  try {
    toRaw = Buffer.from(to, "base64url");
    auditRaw = Buffer.from(audit, "base64url");
    ed25519PublicKeyFromRaw(toRaw);
    x25519PublicKeyFromRaw(auditRaw);
  } catch {
    return null;
  }
  if (toRaw.toString("base64url") !== to || auditRaw.toString("base64url") !== audit) return null;
  const statement: RotationStatement = { v: ROTATION_STATEMENT, from: rot.from, to, audit, at };
  const key = ed25519PublicKeyFromRaw(from.approverRaw);
  if (!verifyApproverSignature(key, rotationDigest(statement), signature)) return null;
  return { seq: r.seq, approverRaw: toRaw, approverKeyId: approverKeyId(toRaw), auditRaw };
}

/** The event of a record sealed in the derived session `esk` to the audit key `auditRaw`, or null. */
function openSealed(
  record: Uint8Array,
  esk: KeyObject,
  auditRaw: Uint8Array,
): Record<string, unknown> | null {
  return openDerivedRecord(record, esk, x25519PublicKeyFromRaw(auditRaw));
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
  return openInOwnSession(record, esk, auditPublic)?.event ?? null;
}
