import { headerOf, parseHeader } from "../audit/record.js";
import type { Store } from "../store/db.js";
import { IS_PIN_RECORD } from "./pinSchema.js";

/**
 * Whether the audit chain can account for what the rest of the store says happened. The chain's
 * hash links show a record changed or removed in its middle, not one cut from its start or end;
 * an emptied chain (a trigger dropped, every record deleted) verifies as the empty log, and its
 * first pin is then anyone's to write (docs/audit-format.md, "Approver key pin"). The other
 * tables are no proof (any process of the user can edit them), but they make the cheap forms
 * visible: approval requests or grants with no record at all, or decisions
 * signed with an approver key and no pin of one (a decision is signed only once a key is pinned).
 * Only a store emptied as a whole, tables and chain, still passes: the limit of a rewritten chain.
 */

/** Why the chain cannot account for the store's history, in a sentence part; null when it can. */
export function unaccountedHistory(db: Store): string | null {
  const head = (db.prepare("SELECT max(seq) FROM audit_records").pluck().get() as number | null) ?? 0;
  if (head === 0) {
    const held = historyHeld(db);
    return held ? `the audit chain is empty, but the store holds ${held}: its records were deleted` : null;
  }
  if (db.prepare(`SELECT 1 FROM audit_records WHERE ${IS_PIN_RECORD} LIMIT 1`).get()) return null;
  const signed = db
    .prepare(
      `SELECT (SELECT count(*) FROM grants WHERE signature IS NOT NULL)
            + (SELECT count(*) FROM approval_requests WHERE decision_signature IS NOT NULL)`,
    )
    .pluck()
    .get() as number;
  return signed > 0
    ? `the audit chain pins no approver key, but the store holds ${count(signed, "decision")} signed with one: the records from the pin on were cut from the chain`
    : null;
}

/**
 * Why no approver key may be pinned now for a keyring whose audit key id is `auditKeyId`, or
 * null: a chain that cannot account for the store's history (above), or one begun for another
 * keyring (its first record sealed to another audit key: keyring.json was replaced). What is
 * left is a fresh store, or a chain this keyring wrote before any pin (a keyring made before
 * pins, an `init` killed before its pin, a keyring copied into a new state directory).
 */
export function pinRefusal(db: Store, auditKeyId: string): string | null {
  const unaccounted = unaccountedHistory(db);
  if (unaccounted) return unaccounted;
  const first = db.prepare("SELECT record FROM audit_records ORDER BY seq LIMIT 1").pluck().get() as
    | Buffer
    | undefined;
  if (!first) return null;
  const text = headerOf(first);
  const key = text ? parseHeader(text)?.key : undefined;
  return key === auditKeyId
    ? null
    : `the audit chain was begun for another keyring (its first record is sealed to audit key ${key ?? "?"}, keyring.json's is ${auditKeyId}): keyring.json was replaced`;
}

/**
 * The store's history outside the chain that implies records in it, counted in words ("2
 * approval requests, 1 grant"); "" when none. A request is made only for a call to a server whose
 * start was recorded; gateways and agent runs are not counted: a gateway whose first launch
 * failed, or one killed between its run's row and that run's first record, leaves a row with no
 * record, and a store whose keyring was never pinned (an `init` killed before its pin) must still
 * get its pin.
 */
function historyHeld(db: Store): string {
  const n = (table: string) => db.prepare(`SELECT count(*) FROM ${table}`).pluck().get() as number;
  return [count(n("approval_requests"), "approval request"), count(n("grants"), "grant")]
    .filter((part) => !part.startsWith("0 "))
    .join(", ");
}

function count(n: number, what: string): string {
  return `${n} ${what}${n === 1 ? "" : "s"}`;
}
