/**
 * keyring.json's shape (KeyringFile and its entries) and its parse, which refuses anything else
 * in one sentence naming the file (KeyringDamagedError), the scrypt cost within bounds. Apart
 * from where the text comes from (keyringRead.ts) and what is done with it (keyring.ts).
 */
import { approverKeyId } from "./approver.js";
import { KeyringDamagedError } from "./keyringErrors.js";
import {
  type KdfRecord,
  KEY_BYTES,
  KEYRING_FORMAT,
  MAX_SCRYPT_N,
  MAX_SCRYPT_P,
  MAX_SCRYPT_R,
  NONCE_BYTES,
  TAG_BYTES,
  WRAP_ALG,
  type Wrapped,
} from "./keyWrapping.js";
import { auditKeyId } from "./x25519.js";

export interface KeyringFile {
  format: typeof KEYRING_FORMAT;
  createdAt: string;
  kdf: KdfRecord;
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

export interface AuditEntry {
  alg: "X25519";
  keyId: string;
  publicKey: string;
  privateKey: Wrapped;
}

export interface ApproverEntry {
  alg: "Ed25519";
  keyId: string;
  publicKey: string;
  privateKey: Wrapped;
}

const B64URL = /^[A-Za-z0-9_-]+$/;
/** At most this many earlier keys of each kind: a keyring rotated more often is not read. */
const MAX_EARLIER = 64;

/** A name short and plain enough to print as it is (the file is not ours to trust). */
const PLAIN_ALG = /^[A-Za-z0-9_.-]{1,32}$/;

/**
 * Why a keyring whose key derivation is not scrypt is refused, naming the one it has: a keyring
 * made elsewhere with Argon2id (which the key derivation could have been) reads as that, never as
 * a file damaged in some unsaid way.
 */
function otherKdf(alg: unknown): string {
  const named = typeof alg === "string" && PLAIN_ALG.test(alg) ? `"${alg}"` : "not scrypt";
  return `its kdf.alg is ${named}; this portcullis derives the keyring's key with scrypt only`;
}

export function parseKeyring(text: string, path: string): KeyringFile {
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
  if (!obj(kdf)) throw damaged("bad kdf");
  if (kdf.alg !== "scrypt") throw damaged(otherKdf(kdf.alg));
  if (!b64(kdf.salt, null)) throw damaged("bad kdf");
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
