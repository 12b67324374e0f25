import { createHash, createPrivateKey, createPublicKey, type KeyObject } from "node:crypto";

/**
 * Raw 32-byte X25519 keys <-> node:crypto KeyObjects. The keyring and the audit
 * records carry raw keys (base64url); KeyObjects are what node:crypto computes with.
 */

// PKCS#8 prefix of an X25519 private key (RFC 8410): the raw 32-byte scalar follows.
const PKCS8_X25519_PREFIX = Buffer.from("302e020100300506032b656e04220420", "hex");

export const X25519_KEY_BYTES = 32;

export function x25519PublicKeyFromRaw(raw: Uint8Array): KeyObject {
  if (raw.length !== X25519_KEY_BYTES) throw new Error("an X25519 public key is 32 bytes");
  return createPublicKey({
    key: { kty: "OKP", crv: "X25519", x: Buffer.from(raw).toString("base64url") },
    format: "jwk",
  });
}

export function x25519PrivateKeyFromRaw(raw: Uint8Array): KeyObject {
  if (raw.length !== X25519_KEY_BYTES) throw new Error("an X25519 private key is 32 bytes");
  return createPrivateKey({ key: Buffer.concat([PKCS8_X25519_PREFIX, raw]), format: "der", type: "pkcs8" });
}

/** The raw 32 bytes of an X25519 public key (from a public or a private KeyObject). */
export function rawX25519PublicKey(key: KeyObject): Buffer {
  const pub = key.type === "private" ? createPublicKey(key) : key;
  const { x } = pub.export({ format: "jwk" });
  if (typeof x !== "string") throw new Error("not an X25519 key");
  return Buffer.from(x, "base64url");
}

/** The raw 32 bytes of an X25519 private key. */
export function rawX25519PrivateKey(key: KeyObject): Buffer {
  const { d } = key.export({ format: "jwk" });
  if (typeof d !== "string") throw new Error("not an X25519 private key");
  return Buffer.from(d, "base64url");
}

/**
 * Key id of an audit public key: the first 16 bytes of SHA-256 over its raw
 * 32 bytes, in lowercase hex. Written in every audit header.
 */
export function auditKeyId(rawPublicKey: Uint8Array): string {
  return createHash("sha256").update(rawPublicKey).digest("hex").slice(0, 32);
}
