import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import type { Store } from "../store/db.js";

/**
 * The vault's secrets, at rest: one row per secret NAME (the credential scope that grants,
 * reviews and audit records name), the value sealed with ChaCha20-Poly1305 under the keyring's
 * data key. The associated data binds a sealed value to its name, so a row's ciphertext cannot
 * be moved under another name without failing to open. Nothing here is readable without the
 * data key, and nothing here ever returns a value to a caller that does not hold it.
 */

export const SECRET_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
const MAX_VALUE_BYTES = 64 * 1024;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;

export class VaultError extends Error {
  override name = "VaultError";
}

export interface SecretInfo {
  name: string;
  createdAt: string;
  rotatedAt: string | null;
  bytes: number;
}

export function checkSecretName(name: string): string {
  if (!SECRET_NAME.test(name)) {
    throw new VaultError(
      `${JSON.stringify(name)} is not a secret name: use letters, digits, '.', '_' or '-' (at most 128, starting with a letter or digit)`,
    );
  }
  return name;
}

/** A value the vault accepts: not empty, no line break at either end, at most 64 KiB. */
export function checkSecretValue(value: string): string {
  if (value.length === 0) throw new VaultError("the value is empty; nothing was stored");
  if (Buffer.byteLength(value) > MAX_VALUE_BYTES)
    throw new VaultError(`the value is over ${MAX_VALUE_BYTES} bytes; nothing was stored`);
  return value;
}

function aad(name: string): Buffer {
  return Buffer.from(`portcullis-vault/1\nsecret\n${name}`, "utf8");
}

export function sealSecret(dataKey: Buffer, name: string, value: string): Buffer {
  const nonce = randomBytes(NONCE_BYTES);
  const cipher = createCipheriv("chacha20-poly1305", dataKey, nonce, { authTagLength: TAG_BYTES });
  cipher.setAAD(aad(name), { plaintextLength: Buffer.byteLength(value) });
  const body = Buffer.concat([cipher.update(value, "utf8"), cipher.final()]);
  return Buffer.concat([nonce, body, cipher.getAuthTag()]);
}

export function openSecret(dataKey: Buffer, name: string, sealed: Buffer): string {
  if (sealed.length < NONCE_BYTES + TAG_BYTES) throw new VaultError(`the stored secret ${name} is damaged`);
  const nonce = sealed.subarray(0, NONCE_BYTES);
  const tag = sealed.subarray(sealed.length - TAG_BYTES);
  const body = sealed.subarray(NONCE_BYTES, sealed.length - TAG_BYTES);
  const decipher = createDecipheriv("chacha20-poly1305", dataKey, nonce, { authTagLength: TAG_BYTES });
  decipher.setAAD(aad(name), { plaintextLength: body.length });
  decipher.setAuthTag(tag);
  try {
    return Buffer.concat([decipher.update(body), decipher.final()]).toString("utf8");
  } catch {
    throw new VaultError(`the stored secret ${name} does not open under this keyring (damaged or moved)`);
  }
}

/** Stores (or rotates) a secret. Returns whether it replaced an existing one. */
export function putSecret(db: Store, dataKey: Buffer, name: string, value: string): { rotated: boolean } {
  checkSecretName(name);
  checkSecretValue(value);
  const sealed = sealSecret(dataKey, name, value);
  const now = new Date().toISOString();
  const existed = db.prepare("SELECT 1 FROM vault_secrets WHERE name = ?").get(name) !== undefined;
  db.prepare(
    `INSERT INTO vault_secrets (name, sealed, bytes, created_at, rotated_at) VALUES (?, ?, ?, ?, NULL)
     ON CONFLICT(name) DO UPDATE SET sealed = excluded.sealed, bytes = excluded.bytes, rotated_at = ?`,
  ).run(name, sealed, Buffer.byteLength(value), now, now);
  return { rotated: existed };
}

export function removeSecret(db: Store, name: string): boolean {
  return db.prepare("DELETE FROM vault_secrets WHERE name = ?").run(checkSecretName(name)).changes > 0;
}

export function listSecrets(db: Store): SecretInfo[] {
  return (
    db.prepare("SELECT name, bytes, created_at, rotated_at FROM vault_secrets ORDER BY name").all() as {
      name: string;
      bytes: number;
      created_at: string;
      rotated_at: string | null;
    }[]
  ).map((r) => ({ name: r.name, bytes: r.bytes, createdAt: r.created_at, rotatedAt: r.rotated_at }));
}

export function secretNames(db: Store): Set<string> {
  return new Set(
    (db.prepare("SELECT name FROM vault_secrets").all() as { name: string }[]).map((r) => r.name),
  );
}

/** Every secret opened with the data key: what `unlock` hands to the holder, and nothing else. */
export function openAllSecrets(db: Store, dataKey: Buffer): Map<string, string> {
  const out = new Map<string, string>();
  for (const r of db.prepare("SELECT name, sealed FROM vault_secrets").all() as {
    name: string;
    sealed: Buffer;
  }[]) {
    out.set(r.name, openSecret(dataKey, r.name, r.sealed));
  }
  return out;
}
