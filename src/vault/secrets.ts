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
export const MAX_VALUE_BYTES = 64 * 1024;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;

export class VaultError extends Error {
  override name = "VaultError";
}

/**
 * How the holder may hand a secret out, decided when it is stored (with the passphrase), not by
 * portcullis.json: a project file an agent can edit must not be able to turn an HTTP-only
 * secret into an environment variable, or send it to another host.
 */
export interface SecretPolicy {
  deliver: "http" | "env";
  /** host or host:port, lower-cased; http only */
  hosts: string[];
}

export interface OpenedSecret extends SecretPolicy {
  value: string;
}

export interface SecretInfo extends SecretPolicy {
  name: string;
  createdAt: string;
  rotatedAt: string | null;
  bytes: number;
}

/**
 * `name` if it is a secret name. A refused one is described, never repeated: a user who types the
 * value where the name goes would see it on stderr, in scrollback, CI logs and an agent's
 * transcript.
 */
export function checkSecretName(name: string): string {
  if (!SECRET_NAME.test(name)) {
    throw new VaultError(
      `the name given is not a secret name (${whatIsWrong(name)}; not shown, in case it is a value): use letters, digits, '.', '_' or '-' (at most 128, starting with a letter or digit)`,
    );
  }
  return name;
}

/** What keeps `name` from being a secret name, without any of its characters. */
function whatIsWrong(name: string): string {
  if (name === "") return "it is empty";
  const length = [...name].length;
  if (length > 128) return `it is ${length} characters long`;
  if (!/^[A-Za-z0-9]/.test(name)) return "it does not start with a letter or digit";
  const others = [...name].filter((c) => !/[A-Za-z0-9._-]/.test(c)).length;
  return `it holds ${others} character${others === 1 ? "" : "s"} other than letters, digits, '.', '_' and '-'`;
}

/** A value the vault accepts: not empty nor blanks only, at most 64 KiB (stdin's final line break is dropped). */
export function checkSecretValue(value: string): string {
  if (value.length === 0) throw new VaultError("the value is empty; nothing was stored");
  // A value of blanks only is a slip of the keyboard, and would be scrubbed from every output.
  if (value.trim().length === 0) throw new VaultError("the value is only whitespace; nothing was stored");
  if (Buffer.byteLength(value) > MAX_VALUE_BYTES)
    throw new VaultError(`the value is over ${MAX_VALUE_BYTES} bytes; nothing was stored`);
  return value;
}

// The name and the policy are associated data: a row moved under another name, or whose
// delivery or hosts were edited with SQL, no longer opens.
function aad(name: string, policy: SecretPolicy): Buffer {
  return Buffer.from(
    `portcullis-vault/1\nsecret\n${name}\n${policy.deliver}\n${JSON.stringify(policy.hosts)}`,
    "utf8",
  );
}

export function sealSecret(dataKey: Buffer, name: string, policy: SecretPolicy, value: string): Buffer {
  const nonce = randomBytes(NONCE_BYTES);
  const cipher = createCipheriv("chacha20-poly1305", dataKey, nonce, { authTagLength: TAG_BYTES });
  cipher.setAAD(aad(name, policy), { plaintextLength: Buffer.byteLength(value) });
  const body = Buffer.concat([cipher.update(value, "utf8"), cipher.final()]);
  return Buffer.concat([nonce, body, cipher.getAuthTag()]);
}

export function openSecret(dataKey: Buffer, name: string, policy: SecretPolicy, sealed: Buffer): string {
  if (sealed.length < NONCE_BYTES + TAG_BYTES) throw new VaultError(`the stored secret ${name} is damaged`);
  const nonce = sealed.subarray(0, NONCE_BYTES);
  const tag = sealed.subarray(sealed.length - TAG_BYTES);
  const body = sealed.subarray(NONCE_BYTES, sealed.length - TAG_BYTES);
  const decipher = createDecipheriv("chacha20-poly1305", dataKey, nonce, { authTagLength: TAG_BYTES });
  decipher.setAAD(aad(name, policy), { plaintextLength: body.length });
  decipher.setAuthTag(tag);
  try {
    return Buffer.concat([decipher.update(body), decipher.final()]).toString("utf8");
  } catch {
    throw new VaultError(
      `the stored secret ${name} does not open under this keyring (damaged, moved or its policy edited)`,
    );
  }
}

/** Stores (or rotates) a secret. Returns whether it replaced an existing one. */
export function putSecret(
  db: Store,
  dataKey: Buffer,
  name: string,
  policy: SecretPolicy,
  value: string,
): { rotated: boolean } {
  checkSecretName(name);
  checkSecretValue(value);
  if (policy.deliver === "http" && policy.hosts.length === 0)
    throw new VaultError(`a secret delivered over HTTP needs at least one --host it may be sent to`);
  const sealed = sealSecret(dataKey, name, policy, value);
  const now = new Date().toISOString();
  const existed = db.prepare("SELECT 1 FROM vault_secrets WHERE name = ?").get(name) !== undefined;
  db.prepare(
    `INSERT INTO vault_secrets (name, sealed, bytes, deliver, hosts_json, created_at, rotated_at)
     VALUES (?, ?, ?, ?, ?, ?, NULL)
     ON CONFLICT(name) DO UPDATE SET sealed = excluded.sealed, bytes = excluded.bytes,
       deliver = excluded.deliver, hosts_json = excluded.hosts_json, rotated_at = ?`,
  ).run(name, sealed, Buffer.byteLength(value), policy.deliver, JSON.stringify(policy.hosts), now, now);
  return { rotated: existed };
}

export function removeSecret(db: Store, name: string): boolean {
  return db.prepare("DELETE FROM vault_secrets WHERE name = ?").run(checkSecretName(name)).changes > 0;
}

export function listSecrets(db: Store): SecretInfo[] {
  return (db.prepare("SELECT * FROM vault_secrets ORDER BY name").all() as Row[]).map((r) => ({
    name: r.name,
    bytes: r.bytes,
    ...policyOf(r),
    createdAt: r.created_at,
    rotatedAt: r.rotated_at,
  }));
}

export function secretNames(db: Store): Set<string> {
  return new Set(
    (db.prepare("SELECT name FROM vault_secrets").all() as { name: string }[]).map((r) => r.name),
  );
}

/** Each stored secret's delivery policy (no value): readable without the passphrase. */
export function storedPolicies(db: Store): Map<string, SecretPolicy> {
  return new Map(listSecrets(db).map((s) => [s.name, { deliver: s.deliver, hosts: s.hosts }]));
}

interface Row {
  name: string;
  bytes: number;
  deliver: string;
  hosts_json: string;
  created_at: string;
  rotated_at: string | null;
  sealed?: Buffer;
}

/** A row's delivery policy as stored (the associated data its secret is sealed with; src/vault/reseal.ts too). */
export function policyOf(r: Pick<Row, "deliver" | "hosts_json">): SecretPolicy {
  let hosts: unknown;
  try {
    hosts = JSON.parse(r.hosts_json);
  } catch {
    hosts = null;
  }
  // A policy that is not one of ours opens nothing (openSecret fails on the edited AAD anyway).
  return {
    deliver: r.deliver === "env" ? "env" : "http",
    hosts: Array.isArray(hosts) ? hosts.filter((h): h is string => typeof h === "string") : [],
  };
}

/** Every secret opened with the data key: what `unlock` hands to the holder, and nothing else. */
export function openAllSecrets(db: Store, dataKey: Buffer): Map<string, OpenedSecret> {
  const out = new Map<string, OpenedSecret>();
  for (const r of db.prepare("SELECT * FROM vault_secrets").all() as Row[]) {
    const policy = policyOf(r);
    out.set(r.name, { ...policy, value: openSecret(dataKey, r.name, policy, r.sealed as Buffer) });
  }
  return out;
}
