/**
 * The audit page's data: the chain verified without a key (verifyStore), and, with the audit
 * private key of a passphrase proof, the sessions and activity views over records that were
 * verified and opened in one pass, redacted like `portcullis audit` shows them.
 */
import type { KeyObject } from "node:crypto";
import { storedRunEnds } from "../approval/storedRunEnd.js";
import { ChainVerifier, openRecords, type StoredRecord, storedRecords, verifyStore } from "../audit/index.js";
import type { Store } from "../store/db.js";
import { redactEvent } from "../util/redact.js";
import { orderedSessions, runsServedNow } from "./auditSessions.js";
import { type AuditPageData, auditViews } from "./pages.js";

export function auditData(db: Store, auditKey: KeyObject | null): AuditPageData {
  const verified = verifyStore(db);
  if (!auditKey) return { verified, opened: null };
  try {
    const verifier = new ChainVerifier();
    function* checked(): Generator<StoredRecord> {
      for (const r of storedRecords(db)) {
        if (!verifier.push(r)) return;
        yield r;
      }
    }
    const opened = [...openRecords(db, auditKey, checked())].map((r) => ({
      ...r,
      event: redactEvent(r.event),
    }));
    // a run the log holds no end of whose row says it ended: shown so, never as open
    const views = auditViews(opened, storedRunEnds(db))!;
    // the Sessions table's order: runs served now first (thousands may be appended: auditSessions.ts)
    return { verified, opened: { ...views, sessions: orderedSessions(views.sessions, runsServedNow(db)) } };
  } catch (e) {
    return { verified, opened: null, openProblem: `the audit could not be opened: ${(e as Error).message}` };
  }
}
