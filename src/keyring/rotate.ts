import { randomBytes } from "node:crypto";
import type { DecisionSigner } from "./approver.js";
import { rotationParts as P, type UnlockedKeyring } from "./keyring.js";
import { KeyringError, KeyringMissingError, SamePassphraseError } from "./keyringErrors.js";
import type { AuditEntry, KeyringFile, PendingRotation } from "./keyringFormat.js";
import { keyringPath } from "./keyringRead.js";
import { auditKeyId, newX25519PrivateKey, rawX25519PrivateKey, rawX25519PublicKey } from "./x25519.js";

/**
 * Key rotation of the keyring (`portcullis rotate-keys`, docs/security.md "Key rotation"): a new
 * data key, wrapped under a key derived from a NEW passphrase, seals a new approver key pair and a
 * new audit key pair. The keys replaced are kept in `earlier`: the approver public keys (the chain
 * of pins starts at the first of them), the audit private keys and the data keys, each sealed
 * under the new data key. So a copy of the old keyring.json and the old passphrase open none of
 * the new keys, and the new keyring still reads every old record (and, until the vault is
 * resealed, every old secret).
 *
 * Under the lock every rewrite of keyring.json takes, read and opened again there; written whole
 * to a temporary file (0600, fsynced) and renamed over it: killed at any point, the old keyring
 * (the old passphrase) or the new one (the new passphrase) is keyring.json, never a mix.
 *
 * The new keyring carries the signed rotation record (`pendingRotation`: public keys and the old
 * key's signature, nothing secret), made before the rename: the command appends it to the audit
 * chain right after, and a command killed in between leaves it for the next command that takes
 * the passphrase to append late (src/approval/rotation.ts).
 */

export interface RotationSteps {
  /** Told the keyring as read and opened under the lock, before anything is written: throws to refuse. */
  accept?: (opened: UnlockedKeyring) => void;
  /**
   * Makes the rotation record: `signer` is the key replaced, `next` the new public keys (raw),
   * `sealTo` the audit public key replaced (raw). Called under the lock, before the rename.
   */
  sign: (
    signer: DecisionSigner,
    next: { approverRaw: Buffer; auditRaw: Buffer },
    sealTo: Buffer,
  ) => PendingRotation;
}

/** What rotateKeyring did. The data keys are secret: the caller uses them, then fills them with zeros. */
export interface KeyRotation {
  path: string;
  from: { approverKeyId: string; auditKeyId: string };
  to: { approverKeyId: string; auditKeyId: string };
  pending: PendingRotation;
  /** the new data key */
  dataKey: Buffer;
  /** every data key replaced, the one just replaced last */
  earlierDataKeys: Buffer[];
}

export async function rotateKeyring(
  stateDir: string,
  current: string,
  next: string,
  steps: RotationSteps,
): Promise<KeyRotation> {
  if (next.length === 0) throw new KeyringError("the new passphrase is empty");
  if (next.normalize("NFC") === current.normalize("NFC")) throw new SamePassphraseError();
  const path = keyringPath(stateDir);
  const lock = await P.takeLock(`${path}.upgrade.lock`);
  try {
    const text = P.readKeyringText(stateDir);
    if (text === null) throw new KeyringMissingError(stateDir);
    const file = P.parseKeyring(text, path);
    const opened = await P.openKeyringFile(file, path, current);
    const secrets: Buffer[] = [opened.dataKey, ...opened.earlierDataKeys];
    try {
      if (!file.approver || !opened.signer)
        throw new KeyringError(
          `${path} has no approver key yet; it is added by the passphrase commands first`,
        );
      steps.accept?.(opened);
      P.removeLeftTemps(path);

      const params = P.newCost(file.kdf);
      const salt = randomBytes(16);
      const kek = await P.deriveKek(next, salt, params);
      const kdf = { alg: "scrypt" as const, ...params, salt: salt.toString("base64url") };
      const dataKey = randomBytes(P.KEY_BYTES);
      secrets.push(dataKey);

      const auditPrivate = newX25519PrivateKey();
      const audit = auditEntry(dataKey, rawX25519PrivateKey(auditPrivate), rawX25519PublicKey(auditPrivate));
      const approver = P.newApproverEntry(dataKey);
      // the keys replaced, resealed under the new data key (the one just replaced last)
      const earlierAudits = [...opened.earlierAuditKeys, opened.auditPrivateKey].map((k) =>
        auditEntry(dataKey, rawX25519PrivateKey(k), rawX25519PublicKey(k)),
      );
      const earlierData = [...opened.earlierDataKeys, opened.dataKey];
      const sealTo = Buffer.from(file.audit.publicKey, "base64url");
      const pending = steps.sign(
        opened.signer,
        {
          approverRaw: Buffer.from(approver.publicKey, "base64url"),
          auditRaw: Buffer.from(audit.publicKey, "base64url"),
        },
        sealTo,
      );
      const rotated: KeyringFile = {
        ...file,
        kdf,
        dataKey: P.wrap(kek, dataKey, P.dataKeyAad(kdf)),
        audit,
        approver,
        earlier: {
          approvers: [
            ...(file.earlier?.approvers ?? []),
            { alg: "Ed25519", keyId: file.approver.keyId, publicKey: file.approver.publicKey },
          ],
          audit: earlierAudits,
          dataKeys: earlierData.map((k, i) => P.wrap(dataKey, k, P.earlierDataKeyAad(i))),
        },
        pendingRotation: pending,
      };
      kek.fill(0);
      P.replaceFile(path, `${JSON.stringify(rotated, null, 2)}\n`);
      const result: KeyRotation = {
        path,
        from: { approverKeyId: file.approver.keyId, auditKeyId: file.audit.keyId },
        to: { approverKeyId: approver.keyId, auditKeyId: audit.keyId },
        pending,
        dataKey: Buffer.from(dataKey),
        earlierDataKeys: earlierData.map((k) => Buffer.from(k)),
      };
      return result;
    } finally {
      for (const k of secrets) k.fill(0);
    }
  } finally {
    lock();
  }
}

/** An audit key pair's entry: the private half sealed under `dataKey` (then zeroed). */
function auditEntry(dataKey: Buffer, privateRaw: Buffer, publicRaw: Buffer): AuditEntry {
  const keyId = auditKeyId(publicRaw);
  const publicKey = publicRaw.toString("base64url");
  const entry: AuditEntry = {
    alg: "X25519",
    keyId,
    publicKey,
    privateKey: P.wrap(dataKey, privateRaw, P.privateKeyAad(keyId, publicKey)),
  };
  privateRaw.fill(0);
  return entry;
}
