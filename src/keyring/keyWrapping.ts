/**
 * How keyring.json seals its keys: passphrase -> scrypt -> key-encryption key (the cost, its test
 * value and the bounds a file may ask for), ChaCha20-Poly1305 wrapping, and the associated data
 * each sealed key is bound to. Apart from the file's format and its reads and writes: the
 * cryptography alone, which init, unlock, a passphrase change and a rotation all use.
 */
import { createCipheriv, createDecipheriv, randomBytes, scrypt } from "node:crypto";
import canonicalize from "canonicalize";
import { KeyringTamperedError } from "./keyringErrors.js";

export const KEYRING_FORMAT = "portcullis-keyring/1";

/**
 * Set to "1" to derive the key-encryption key with cheap scrypt parameters
 * (N=2^10). For tests only: a keyring made this way resists passphrase guessing
 * far less. The parameters used are recorded in the keyring either way.
 */
export const INSECURE_TEST_KDF_ENV = "PORTCULLIS_INSECURE_TEST_KDF";

export interface ScryptParams {
  N: number;
  r: number;
  p: number;
}

/** Default cost: N=2^17, r=8, p=1 (128 MiB, OWASP's minimum for scrypt). */
export const DEFAULT_SCRYPT: ScryptParams = { N: 2 ** 17, r: 8, p: 1 };
export const TEST_SCRYPT: ScryptParams = { N: 2 ** 10, r: 8, p: 1 };
// Bounds accepted when reading a keyring, so a tampered file cannot ask for gigabytes.
export const MAX_SCRYPT_N = 2 ** 20;
export const MAX_SCRYPT_R = 32;
export const MAX_SCRYPT_P = 16;

export const WRAP_ALG = "chacha20-poly1305";
export const NONCE_BYTES = 12;
export const TAG_BYTES = 16;
export const KEY_BYTES = 32;

export interface Wrapped {
  alg: typeof WRAP_ALG;
  nonce: string; // base64url, 12 bytes
  sealed: string; // base64url, ciphertext || 16-byte tag
}

/**
 * The scrypt cost of a changed passphrase's key: init's (the test cost under
 * PORTCULLIS_INSECURE_TEST_KDF=1, else the default), so an older, cheaper keyring gets the current
 * cost; but never lower than the keyring's own (one made by a later version with a higher default,
 * or by hand), which a change must not weaken. Its parameters opened the keyring a moment ago (they
 * are bound to the data key's wrapping), so they are within the bounds parseKeyring accepts.
 */
export function newCost(was: ScryptParams): ScryptParams {
  const chosen = process.env[INSECURE_TEST_KDF_ENV] === "1" ? TEST_SCRYPT : DEFAULT_SCRYPT;
  const cost = (k: ScryptParams) => k.N * k.r * k.p;
  return cost(was) > cost(chosen) ? { N: was.N, r: was.r, p: was.p } : chosen;
}

export function deriveKek(passphrase: string, salt: Buffer, { N, r, p }: ScryptParams): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(passphrase.normalize("NFC"), salt, KEY_BYTES, { N, r, p, maxmem: 256 * N * r * p }, (err, key) =>
      err ? reject(err) : resolve(key),
    );
  });
}

/**
 * keyring.json's `kdf`, the derivation the data key's wrapping was made with: declared here, and
 * named by KeyringFile, so that the sealing does not import the file's format (which imports it).
 */
export interface KdfRecord {
  alg: "scrypt";
  N: number;
  r: number;
  p: number;
  salt: string;
}

export function dataKeyAad(kdf: KdfRecord): Buffer {
  return Buffer.from(`${KEYRING_FORMAT}\ndata-key\n${canonicalize(kdf)}`);
}

export function privateKeyAad(keyId: string, publicKey: string): Buffer {
  return Buffer.from(`${KEYRING_FORMAT}\naudit-private-key\n${keyId}\n${publicKey}`);
}

export function earlierDataKeyAad(index: number): Buffer {
  return Buffer.from(`${KEYRING_FORMAT}\nearlier-data-key\n${index}`);
}

export function approverKeyAad(keyId: string, publicKey: string): Buffer {
  return Buffer.from(`${KEYRING_FORMAT}\napprover-private-key\n${keyId}\n${publicKey}`);
}

export function wrap(key: Buffer, plain: Buffer, aad: Buffer): Wrapped {
  const nonce = randomBytes(NONCE_BYTES);
  const c = createCipheriv(WRAP_ALG, key, nonce, { authTagLength: TAG_BYTES });
  c.setAAD(aad, { plaintextLength: plain.length });
  const sealed = Buffer.concat([c.update(plain), c.final(), c.getAuthTag()]);
  return { alg: WRAP_ALG, nonce: nonce.toString("base64url"), sealed: sealed.toString("base64url") };
}

/**
 * A key sealed under the data key, which the passphrase already opened: a tag failure here means
 * the file was edited (a public half changed, a wrapped key swapped), or damaged in a way that
 * left the data key whole.
 */
export function unwrapOrDamaged(key: Buffer, w: Wrapped, aad: Buffer, damaged: string): Buffer {
  try {
    return unwrap(key, w, aad);
  } catch {
    throw new KeyringTamperedError(damaged);
  }
}

export function unwrap(key: Buffer, w: Wrapped, aad: Buffer): Buffer {
  const sealed = Buffer.from(w.sealed, "base64url");
  const d = createDecipheriv(WRAP_ALG, key, Buffer.from(w.nonce, "base64url"), { authTagLength: TAG_BYTES });
  d.setAAD(aad, { plaintextLength: sealed.length - TAG_BYTES });
  d.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
  return Buffer.concat([d.update(sealed.subarray(0, sealed.length - TAG_BYTES)), d.final()]);
}
