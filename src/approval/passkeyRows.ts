import type { Store } from "../store/db.js";

/**
 * The passkeys table (migration 9): a cache of the passkeys pinned in the audit chain, with what
 * the chain does not keep (the last signature counter, when it was last used). Nothing read here
 * gives authority: passkeyChain.ts decides that.
 */
export interface PasskeyRow {
  credentialId: string;
  name: string;
  /** COSE, base64url */
  publicKey: string;
  counter: number;
  rpId: string;
  transports: string[];
  createdAt: string;
  lastUsedAt: string | null;
  pinSeq: number | null;
  removedAt: string | null;
}

interface DbRow {
  credential_id: string;
  name: string;
  public_key: string;
  counter: number;
  rp_id: string;
  transports_json: string;
  created_at: string;
  last_used_at: string | null;
  pin_seq: number | null;
  removed_at: string | null;
}

function toRow(r: DbRow): PasskeyRow {
  let transports: string[] = [];
  try {
    const t = JSON.parse(r.transports_json) as unknown;
    if (Array.isArray(t)) transports = t.filter((x): x is string => typeof x === "string");
  } catch {
    // a damaged cache column: no transport hints
  }
  return {
    credentialId: r.credential_id,
    name: r.name,
    publicKey: r.public_key,
    counter: r.counter,
    rpId: r.rp_id,
    transports,
    createdAt: r.created_at,
    lastUsedAt: r.last_used_at,
    pinSeq: r.pin_seq,
    removedAt: r.removed_at,
  };
}

export function insertPasskeyRow(db: Store, r: Omit<PasskeyRow, "lastUsedAt" | "removedAt">): void {
  db.prepare(
    `INSERT INTO passkeys (credential_id, name, public_key, counter, rp_id, transports_json, created_at, pin_seq)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?)
     ON CONFLICT (credential_id) DO UPDATE SET name = excluded.name, public_key = excluded.public_key,
       counter = excluded.counter, rp_id = excluded.rp_id, transports_json = excluded.transports_json,
       created_at = excluded.created_at, pin_seq = excluded.pin_seq, last_used_at = NULL, removed_at = NULL`,
  ).run(
    r.credentialId,
    r.name,
    r.publicKey,
    r.counter,
    r.rpId,
    JSON.stringify(r.transports),
    r.createdAt,
    r.pinSeq,
  );
}

export function getPasskeyRow(db: Store, credentialId: string): PasskeyRow | null {
  const r = db.prepare("SELECT * FROM passkeys WHERE credential_id = ?").get(credentialId) as
    | DbRow
    | undefined;
  return r ? toRow(r) : null;
}

/** Every row, oldest first; removed ones only when asked. */
export function passkeyRows(db: Store, withRemoved = false): PasskeyRow[] {
  const rows = db
    .prepare(
      `SELECT * FROM passkeys ${withRemoved ? "" : "WHERE removed_at IS NULL"} ORDER BY created_at, credential_id`,
    )
    .all() as DbRow[];
  return rows.map(toRow);
}

/** After a decision: the new counter (only ever raised) and the time. */
export function passkeyUsed(db: Store, credentialId: string, counter: number, at: string): void {
  db.prepare("UPDATE passkeys SET counter = max(counter, ?), last_used_at = ? WHERE credential_id = ?").run(
    counter,
    at,
    credentialId,
  );
}

export function markPasskeyRemoved(db: Store, credentialId: string, at: string): void {
  db.prepare("UPDATE passkeys SET removed_at = ? WHERE credential_id = ? AND removed_at IS NULL").run(
    at,
    credentialId,
  );
}
