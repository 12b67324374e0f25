import {
  createHash,
  createPrivateKey,
  createPublicKey,
  type KeyObject,
  randomBytes,
  sign,
  verify,
} from "node:crypto";
import { lastBytes, x25519PrivateKeyFromRaw } from "./x25519.js";

/**
 * The approver key: an Ed25519 pair whose private half lives only sealed in the keyring
 * (under the data key, so only the passphrase opens it). Every human decision (approve for
 * the session, approve one call, deny) is signed with it; gateways honour only decisions that
 * verify against the public half pinned in the audit chain (src/approval/pin.ts).
 */

export const APPROVER_KEY_BYTES = 32;
// PKCS#8 prefix of an Ed25519 private key (RFC 8410): the raw 32-byte seed follows.
const PKCS8_ED25519_PREFIX = Buffer.from("302e020100300506032b657004220420", "hex");

export function ed25519PublicKeyFromRaw(raw: Uint8Array): KeyObject {
  if (raw.length !== APPROVER_KEY_BYTES) throw new Error("an Ed25519 public key is 32 bytes");
  return createPublicKey({
    key: { kty: "OKP", crv: "Ed25519", x: Buffer.from(raw).toString("base64url") },
    format: "jwk",
  });
}

export function ed25519PrivateKeyFromRaw(raw: Uint8Array): KeyObject {
  if (raw.length !== APPROVER_KEY_BYTES) throw new Error("an Ed25519 private key is 32 bytes");
  return createPrivateKey({ key: Buffer.concat([PKCS8_ED25519_PREFIX, raw]), format: "der", type: "pkcs8" });
}

/** The raw 32 bytes of an Ed25519 public key (from a public or a private KeyObject). */
// Raw bytes from DER, new keys from random bytes: see src/keyring/x25519.ts (a Node 20 deadlock).
export function rawEd25519PublicKey(key: KeyObject): Buffer {
  const pub = key.type === "private" ? createPublicKey(key) : key;
  if (pub.asymmetricKeyType !== "ed25519") throw new Error("not an Ed25519 key");
  return lastBytes(pub.export({ format: "der", type: "spki" }), APPROVER_KEY_BYTES);
}

export function rawEd25519PrivateKey(key: KeyObject): Buffer {
  if (key.type !== "private" || key.asymmetricKeyType !== "ed25519")
    throw new Error("not an Ed25519 private key");
  return lastBytes(key.export({ format: "der", type: "pkcs8" }), APPROVER_KEY_BYTES);
}

export function newApproverKeyPair(): { publicRaw: Buffer; privateRaw: Buffer } {
  // the seed: every 32 bytes are a valid Ed25519 private key
  const privateRaw = randomBytes(APPROVER_KEY_BYTES);
  return { publicRaw: rawEd25519PublicKey(ed25519PrivateKeyFromRaw(privateRaw)), privateRaw };
}

/** Key id of an approver public key: the first 16 bytes of SHA-256 over "approver\n" and its raw bytes, hex. */
export function approverKeyId(rawPublicKey: Uint8Array): string {
  return createHash("sha256").update("approver\n").update(rawPublicKey).digest("hex").slice(0, 32);
}

/** True when `signature` (base64url) is the approver's Ed25519 signature over `message`. */
export function verifyApproverSignature(publicKey: KeyObject, message: string, signature: string): boolean {
  if (typeof signature !== "string" || !/^[A-Za-z0-9_-]{86}$/.test(signature)) return false;
  try {
    return verify(null, Buffer.from(message, "utf8"), publicKey, Buffer.from(signature, "base64url"));
  } catch {
    return false;
  }
}

const PIN_LABEL = "portcullis approver key pin v1\n";

/**
 * The X25519 private key of the writer session that pins an approver key in the audit chain,
 * derived publicly from that key: SHA-256("portcullis approver key pin v1\n" || public key),
 * clamped (RFC 7748). Anyone who knows the candidate key can recompute the session's record
 * key and check the pin; it protects nothing secret (the pin's content is public).
 */
export function pinSessionPrivateKey(approverPublicRaw: Uint8Array): KeyObject {
  return derivedSessionPrivateKey(PIN_LABEL, approverPublicRaw);
}

/**
 * An X25519 private key derived publicly from `label` and `subject`: SHA-256(label || subject),
 * clamped (RFC 7748). For records that gateways must open without the audit private key (the
 * approver key pin; a passkey's pin and removal, src/approval/passkeyChain.ts).
 */
export function derivedSessionPrivateKey(label: string, subject: Uint8Array): KeyObject {
  const k = createHash("sha256").update(label).update(subject).digest();
  k[0] = (k[0] as number) & 248;
  k[31] = ((k[31] as number) & 127) | 64;
  return x25519PrivateKeyFromRaw(k);
}

/** Only this module mints signers: see DecisionSigner. */
const MINT = Symbol("approver signer");

/**
 * What signs decisions. There is no way to make one but `unlockKeyring` (src/keyring/keyring.ts)
 * with the right passphrase: the constructor wants a value private to this module, and the
 * private key sits in a #private field nothing outside can read.
 */
export class DecisionSigner {
  readonly #privateKey: KeyObject;
  readonly keyId: string;
  readonly publicKeyRaw: Buffer;

  constructor(mint: typeof MINT, privateRaw: Uint8Array) {
    if (mint !== MINT) throw new TypeError("a DecisionSigner comes only from an unlocked keyring");
    this.#privateKey = ed25519PrivateKeyFromRaw(privateRaw);
    this.publicKeyRaw = rawEd25519PublicKey(this.#privateKey);
    this.keyId = approverKeyId(this.publicKeyRaw);
  }

  /** The base64url Ed25519 signature of `message` (a decision digest). */
  sign(message: string): string {
    return sign(null, Buffer.from(message, "utf8"), this.#privateKey).toString("base64url");
  }
}

/** For src/keyring/keyring.ts only (not re-exported anywhere): a signer from an opened private key. */
export function mintSigner(privateRaw: Uint8Array): DecisionSigner {
  return new DecisionSigner(MINT, privateRaw);
}
