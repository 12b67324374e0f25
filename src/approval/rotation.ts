import { AuditLog } from "../audit/log.js";
import { approverKeyId, type DecisionSigner } from "../keyring/approver.js";
import { loadPublicKeyring } from "../keyring/keyring.js";
import type { PendingRotation } from "../keyring/keyringFormat.js";
import type { Store } from "../store/db.js";
import {
  PIN_EVENT_TYPE,
  PinChain,
  ROTATION_STATEMENT,
  type RotationStatement,
  rotationDigest,
  rotationSessionPrivateKey,
} from "./pinChain.js";

/**
 * The audit chain's side of a key rotation (src/keyring/rotate.ts writes the keyring's):
 * the rotation record (an `approver_key_pinned` record of the new key that carries the old key's
 * signature over the rotation statement: src/approval/pinChain.ts follows it), appended right
 * after the new keyring is in place, or late by the next command that takes the passphrase when
 * the rotating command was killed in between.
 */

/** The rotation record of `signer`'s key to `next`, signed by `signer` (kept in the new keyring). */
export function signedRotation(
  signer: DecisionSigner,
  next: { approverRaw: Buffer; auditRaw: Buffer },
  sealTo: Buffer,
  at: string,
): PendingRotation {
  const statement: RotationStatement = {
    v: ROTATION_STATEMENT,
    from: signer.publicKeyRaw.toString("base64url"),
    to: next.approverRaw.toString("base64url"),
    audit: next.auditRaw.toString("base64url"),
    at,
  };
  return {
    event: {
      type: PIN_EVENT_TYPE,
      approverKeyId: approverKeyId(next.approverRaw),
      approverPublicKey: statement.to,
      why: "keys rotated (portcullis rotate-keys)",
      rotation: { ...statement, fromKeyId: signer.keyId },
      rotationSignature: signer.sign(rotationDigest(statement)),
    },
    sealTo: sealTo.toString("base64url"),
  };
}

/**
 * Appends `pending` to the chain when the key it rotates away from is the chain's current key,
 * looked at under the write lock; the seq, or null when the chain has moved on (appended already,
 * or another rotation came first: the keyring then holds a key the chain does not honour).
 */
export function appendRotation(db: Store, stateDir: string, pending: PendingRotation): number | null {
  const rot = pending.event.rotation as RotationStatement;
  const fromRaw = Buffer.from(rot.from, "base64url");
  const keyring = loadPublicKeyring(stateDir);
  if (!keyring?.approver) return null;
  const candidates = {
    approvers: [keyring.approver.publicKeyRaw, ...keyring.earlierApprovers],
    audits: [keyring.publicKeyRaw, ...keyring.earlierAudits],
  };
  const sealTo = Buffer.from(pending.sealTo, "base64url");
  const headIsFrom = () => {
    const s = new PinChain(db).follow(candidates);
    return s.state === "head" && s.head.approverRaw.equals(fromRaw) && s.head.auditRaw.equals(sealTo);
  };
  // looked at first without the write lock: a rotation recorded already costs no transaction
  if (!headIsFrom()) return null;
  const log = AuditLog.openSealingTo(db, sealTo);
  try {
    return (
      log.appendInOwnSessionIf(
        pending.event as { type: typeof PIN_EVENT_TYPE; [k: string]: unknown },
        rotationSessionPrivateKey(fromRaw),
        headIsFrom,
      )?.seq ?? null
    );
  } finally {
    log.close();
  }
}

/**
 * A rotation whose command was killed after writing the new keyring and before its record: the
 * record the keyring carries is appended now (by a command that took the passphrase, so the
 * keyring is the one the human holds). Nothing when it is in the chain already. The error when
 * it could not be written (the caller says so with its refusal), else null.
 */
export function recordLateRotation(
  db: Store,
  stateDir: string,
  notice: (line: string) => void,
): Error | null {
  const keyring = loadPublicKeyring(stateDir);
  const pending = keyring?.pendingRotation;
  if (!keyring?.approver || !pending) return null;
  if (pending.event.approverPublicKey !== keyring.approver.publicKeyRaw.toString("base64url")) return null;
  let seq: number | null;
  try {
    seq = appendRotation(db, stateDir, pending);
  } catch (e) {
    // the command goes on; the keyring's key is then not the chain's, and the caller refuses it
    // saying why (pin.ts RotationUnrecordedError), not as a keyring replaced or edited
    return e as Error;
  }
  if (seq !== null)
    notice(
      `the key rotation its command left unrecorded is recorded now (audit record ${seq}): approver key ${keyring.approver.keyId} is honoured from now on`,
    );
  return null;
}
