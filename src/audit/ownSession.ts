/**
 * Records sealed in a writer session of their own, whose ephemeral private key is derived publicly
 * from what the record is about (docs/audit-format.md, "Approver key pin" and "Catalog revision
 * records"): a process that cannot open the sealed chain (a gateway: it holds the audit public
 * key only) derives that key again and opens that one record, and no other. The approver key's
 * and passkeys' pins are so (src/approval/pinChain.ts), and a catalog revision's
 * `catalog_revised` (src/catalog/revisionRecords.ts).
 */
import { createPublicKey, diffieHellman, type KeyObject } from "node:crypto";
import { auditKeyId, rawX25519PublicKey } from "../keyring/x25519.js";
import { type AuditHeader, parseHeader, splitRecord } from "./record.js";
import { deriveRecordKey, unseal } from "./seal.js";

/**
 * The header and event of `record` when it was sealed to `auditPublic` in the writer session whose
 * ephemeral private key is `esk`, else null. Header type not checked.
 */
export function openInOwnSession(
  record: Uint8Array,
  esk: KeyObject,
  auditPublic: KeyObject,
): { header: AuditHeader; event: Record<string, unknown> } | null {
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
      ? { header, event: event as Record<string, unknown> }
      : null;
  } catch {
    return null;
  }
}
