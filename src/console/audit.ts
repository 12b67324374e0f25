/**
 * The audit page's data: the chain verified without a key, and, with the audit private key of a
 * passphrase proof, one page of the sessions view and the calls of its runs, over records that
 * were verified and opened in one pass, redacted like `portcullis audit` shows them.
 *
 * Any process of the user can append thousands of runs to the log (records are sealed to the
 * public key), and the page opened every record to show 25 of them. It now reads which runs there
 * are and in what order from the records' clear headers (each run's `run_started`, by seq), opens
 * the start records of the runs whose gateway runs now (found by the gateway's pid, which their
 * headers carry), and then only the records that can concern the runs of the page
 * (src/audit/clearRecords.ts): what it shows, and what it needs to order and count them. A record
 * elsewhere in the log is hashed with the chain, never opened here (`portcullis audit sessions`
 * opens every one, and refuses a log with one that does not open).
 */
import type { KeyObject } from "node:crypto";
import { storedRunEnds } from "../approval/storedRunEnd.js";
import { type ClearRecord, clearRecord, recordsOfWriters } from "../audit/clearRecords.js";
import { ChainVerifier, type OpenedRecord, openRecords, storedRecords, verifyStore } from "../audit/index.js";
import type { Store } from "../store/db.js";
import { redactEvent } from "../util/redact.js";
import { runsServedNow, SESSIONS_SHOWN } from "./auditSessions.js";
import { type AuditPageData, auditViews } from "./pages.js";

/**
 * Start records opened at most to find the runs served now among those whose header names a
 * served gateway's pid (the latest first): a writer can give its records any pid, that one too.
 */
const SERVED_STARTS_OPENED = 1000;

export function auditData(
  db: Store,
  auditKey: KeyObject | readonly KeyObject[] | null,
  sessionsFrom = 0,
): AuditPageData {
  if (!auditKey) return { verified: verifyStore(db), opened: null };
  // one pass: the chain verified, and the clear fields of the records it holds kept
  const verifier = new ChainVerifier();
  const clear: ClearRecord[] = [];
  for (const r of storedRecords(db)) {
    if (!verifier.push(r)) {
      // a gap: the verifier reads what follows to tell a reordering from a loss (none is kept)
      if (verifier.wantsNext) continue;
      break;
    }
    const c = clearRecord(r);
    if (c) clear.push(c);
  }
  const verified = verifier.result();
  try {
    return { verified, opened: auditPage(db, auditKey, clear, sessionsFrom) };
  } catch (e) {
    return { verified, opened: null, openProblem: `the audit could not be opened: ${(e as Error).message}` };
  }
}

function auditPage(
  db: Store,
  auditKey: KeyObject | readonly KeyObject[],
  clear: readonly ClearRecord[],
  from: number,
): NonNullable<AuditPageData["opened"]> {
  const opened = new Map<number, OpenedRecord>();
  const open = (records: readonly ClearRecord[]): OpenedRecord[] => {
    const missing = records.filter((r) => !opened.has(r.seq)).map((r) => r.record);
    for (const o of openRecords(db, auditKey, missing))
      opened.set(o.seq, { ...o, event: redactEvent(o.event) });
    return records.map((r) => opened.get(r.seq)!);
  };
  const runOf = (start: ClearRecord): string | null => {
    const run = opened.get(start.seq)?.event.run;
    return typeof run === "string" ? run : null;
  };

  // every run the log starts, the latest first; those whose gateway runs now before the others
  const starts = clear.filter((r) => r.type === "run_started").reverse();
  const served = runsServedNow(db);
  const servedPids = new Set(served.values());
  const candidates = starts.filter((s) => servedPids.has(s.pid)).slice(0, SERVED_STARTS_OPENED);
  open(candidates);
  const servedStarts = new Set<ClearRecord>();
  const servedFound = new Set<string>();
  for (const s of candidates) {
    const run = runOf(s);
    if (run === null || served.get(run) !== s.pid || servedFound.has(run)) continue;
    servedFound.add(run);
    servedStarts.add(s);
  }
  const ordered = [...servedStarts, ...starts.filter((s) => !servedStarts.has(s))];
  const page = ordered.slice(from, from + SESSIONS_SHOWN);

  // the records that can concern the page's runs (their starts among them), opened; then its
  // runs in the page's order
  const records = open(recordsOfWriters(clear, new Set(page.map((s) => s.writer))));
  const views = auditViews(records, storedRunEnds(db));
  const byRun = new Map(views.sessions.map((s) => [s.run, s]));
  const shown = [...new Set(page.map(runOf).filter((run): run is string => run !== null))];
  const runs = new Set(shown);
  return {
    sessions: shown.flatMap((run) => byRun.get(run) ?? []),
    activity: views.activity.filter((a) => runs.has(a.run)),
    runs: ordered.length,
    from,
    span: page.length,
  };
}
