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

/**
 * Every failure of a passkey operation (passkey.ts): its message names what is wrong (never a
 * secret). Defined here, with no WebAuthn library behind it, so that decideRequest can throw one.
 */
export class PasskeyError extends Error {
  override name = "PasskeyError";
  constructor(
    message: string,
    /** not-found: no such passkey; refused: a proof that does not hold; not-active: already removed */
    readonly kind: "not-found" | "refused" | "not-active" = "refused",
  ) {
    super(message);
  }
}

/**
 * An assertion's signature counter, taken: refused (PasskeyError) unless above the last one seen
 * (the stored counter, never below `floor`, the one pinned at registration), then stored with the
 * time. The caller holds the write lock and has checked the store's files (a decision's
 * transaction, a login's): the counter is compared with the value committed last, not with one
 * read before the verification's await, so two answers with the same counter (a cloned
 * authenticator, a replay) verified at once cannot both pass. A counter of 0 on both sides is an
 * authenticator that keeps none, as WebAuthn allows.
 */
export function passkeyCounterUsed(
  db: Store,
  credentialId: string,
  counter: number,
  floor: number,
  at: string,
): void {
  const last = Math.max(getPasskeyRow(db, credentialId)?.counter ?? 0, floor);
  if ((counter > 0 || last > 0) && counter <= last) {
    throw new PasskeyError(
      `the passkey's answer does not verify: its signature counter ${counter} is not above the last one seen, ${last} (a replay, or a cloned authenticator)`,
    );
  }
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
