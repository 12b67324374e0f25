import { createHash, createPrivateKey, createPublicKey, type KeyObject, randomBytes } from "node:crypto";

/**
 * Raw 32-byte X25519 keys <-> node:crypto KeyObjects. The keyring and the audit
 * records carry raw keys (base64url); KeyObjects are what node:crypto computes with.
 *
 * New keys are made from random bytes, never with node:crypto's key-pair generator, and raw bytes are read
 * from the DER encodings, never from a JWK export. Node 20 can deadlock otherwise: exporting a key
 * as JWK holds the key's lock while it allocates, a garbage collection then destroys the finished
 * key-generation job that made it, and that job's destructor waits for the same lock (seen as a
 * gateway whose main thread never came back from an audit writer session's first record: gdb showed
 * ExportJWKEdKey → GC → ~KeyGenJob → pthread_mutex_lock).
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

/** A new X25519 private key: 32 random bytes (every 32-byte string is a valid X25519 scalar). */
export function newX25519PrivateKey(): KeyObject {
  const raw = randomBytes(X25519_KEY_BYTES);
  try {
    return x25519PrivateKeyFromRaw(raw);
  } finally {
    raw.fill(0);
  }
}

export function x25519PrivateKeyFromRaw(raw: Uint8Array): KeyObject {
  if (raw.length !== X25519_KEY_BYTES) throw new Error("an X25519 private key is 32 bytes");
  return createPrivateKey({ key: Buffer.concat([PKCS8_X25519_PREFIX, raw]), format: "der", type: "pkcs8" });
}

/** The raw 32 bytes of an X25519 public key (from a public or a private KeyObject). */
export function rawX25519PublicKey(key: KeyObject): Buffer {
  const pub = key.type === "private" ? createPublicKey(key) : key;
  if (pub.asymmetricKeyType !== "x25519") throw new Error("not an X25519 key");
  return lastBytes(pub.export({ format: "der", type: "spki" }), X25519_KEY_BYTES);
}

/** The raw 32 bytes of an X25519 private key. */
export function rawX25519PrivateKey(key: KeyObject): Buffer {
  if (key.type !== "private" || key.asymmetricKeyType !== "x25519")
    throw new Error("not an X25519 private key");
  return lastBytes(key.export({ format: "der", type: "pkcs8" }), X25519_KEY_BYTES);
}

/**
 * The raw key at the end of an RFC 8410 DER encoding (SubjectPublicKeyInfo: a BIT STRING of the
 * key; PKCS#8 as node writes it, without attributes or public key: an OCTET STRING of the key).
 */
export function lastBytes(der: Buffer, n: number): Buffer {
  if (der.length < n) throw new Error("a DER key shorter than its raw key");
  return Buffer.from(der.subarray(der.length - n));
}

/**
 * Key id of an audit public key: the first 16 bytes of SHA-256 over its raw
 * 32 bytes, in lowercase hex. Written in every audit header.
 */
export function auditKeyId(rawPublicKey: Uint8Array): string {
  return createHash("sha256").update(rawPublicKey).digest("hex").slice(0, 32);
}
