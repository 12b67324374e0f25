/**
 * Which audit record records a catalog revision: the store's `catalog_revision_records` table
 * (migration 22, revisionRecordsSchema.ts), one row per `catalog_revised` record a gateway wrote,
 * naming the revision and the record's seq, inserted in the transaction that appends the record.
 *
 * A gateway cannot open the sealed chain, and any process of the user can insert a revision row:
 * one inserted ahead of a re-list, naming the catalog about to be listed, passed for another
 * gateway's record of it, and that catalog was never recorded. So each `catalog_revised` is sealed
 * in a writer session of its own whose key is derived publicly from the label, revision,
 * fingerprint and seq (revisionRecordKey): a gateway that finds a revision row it did not record
 * itself derives that key for each seq pointed to and opens that record; it believes the row only
 * when one opens and names that label, revision and fingerprint (recordedInChain). Otherwise it
 * records the revision itself. The record says nothing the store does not hold in clear (the
 * revision's row keeps the whole inventory), so the public derivation gives nothing away.
 */
import type { KeyObject } from "node:crypto";
import { derivedSessionPrivateKey } from "../keyring/approver.js";
import type { Store } from "../store/db.js";
import { canonicalJson } from "../util/canonical.js";

const RECORD_LABEL = "portcullis catalog revision record v1\n";

/**
 * The ephemeral private key of the writer session of the `catalog_revised` record of `revision`
 * (`fingerprint`) of `serverLabel` at `seq`: SHA-256(label || canonical JSON of the four),
 * clamped. Public by design (see above); the seq makes it one record's alone.
 */
export function revisionRecordKey(
  serverLabel: string,
  revision: number,
  fingerprint: string,
  seq: number,
): KeyObject {
  return derivedSessionPrivateKey(
    RECORD_LABEL,
    Buffer.from(canonicalJson([serverLabel, revision, fingerprint, seq]), "utf8"),
  );
}

/** Names the record at `seq` as the `catalog_revised` of `revision` (inside its transaction). */
export function pointToRecord(db: Store, serverLabel: string, revision: number, seq: number): void {
  db.prepare(
    "INSERT OR IGNORE INTO catalog_revision_records (server_label, revision, seq) VALUES (?, ?, ?)",
  ).run(serverLabel, revision, seq);
}

/**
 * At most this many records pointed to are opened per check, the latest first: any process of
 * the user can insert rows by the thousand, and a check that finds none of them is a record more
 * (the revision recorded again), never a revision unrecorded.
 */
export const RECORDS_OPENED = 4;

/**
 * Whether a record pointed to for `revision` of `serverLabel` opens in its own session (`open`:
 * the audit sink's openOwn) as a `catalog_revised` naming that label, revision and fingerprint.
 */
export function recordedInChain(
  db: Store,
  serverLabel: string,
  revision: number,
  fingerprint: string,
  open: (seq: number, esk: KeyObject) => Record<string, unknown> | null,
): boolean {
  // Records are never changed in place once written (an edit is the chain's to show): a revision
  // found recorded stays so for this process, whose other gateways (each session of `run
  // --listen`) need not open its record again (a large catalog's is megabytes to decrypt).
  const key = canonicalJson([serverLabel, revision, fingerprint]);
  let found = proven.get(db);
  if (found?.has(key)) return true;
  if (!opensAsRecorded(db, serverLabel, revision, fingerprint, open)) return false;
  if (!found || found.size >= PROVEN_KEPT) {
    found = new Set();
    proven.set(db, found);
  }
  found.add(key);
  return true;
}

/** Revisions found recorded, per store connection (see recordedInChain); at most PROVEN_KEPT. */
const proven = new WeakMap<Store, Set<string>>();
const PROVEN_KEPT = 256;

function opensAsRecorded(
  db: Store,
  serverLabel: string,
  revision: number,
  fingerprint: string,
  open: (seq: number, esk: KeyObject) => Record<string, unknown> | null,
): boolean {
  const seqs = db
    .prepare(
      `SELECT seq FROM catalog_revision_records WHERE server_label = ? AND revision = ?
         AND typeof(seq) = 'integer' AND seq BETWEEN 1 AND (SELECT max(seq) FROM audit_records)
       ORDER BY seq DESC LIMIT ?`,
    )
    .pluck()
    .all(serverLabel, revision, RECORDS_OPENED) as unknown[];
  for (const seq of seqs) {
    // (only numbers of records there are are read: seqs past the head, or that are no number,
    // inserted by the thousand, would otherwise come first and hide the one that opens)
    if (typeof seq !== "number" || !Number.isSafeInteger(seq)) continue;
    const event = open(seq, revisionRecordKey(serverLabel, revision, fingerprint, seq));
    if (
      event?.type === "catalog_revised" &&
      event.serverLabel === serverLabel &&
      event.revision === revision &&
      event.fingerprint === fingerprint
    )
      return true;
  }
  return false;
}
