/**
 * The audit page's data: the chain verified without a key, and, with the audit private key of a
 * passphrase proof, one page of the sessions view and the calls of its runs, over records that
 * were verified and opened in one pass, redacted like `portcullis audit` shows them.
 *
 * Any process of the user can append thousands of runs to the log (records are sealed to the
 * public key), and the page opened every record to show 25 of them. It now reads which runs there
 * are and in what order from the records' clear headers (each run's `run_started`, by seq), opens
 * the start records of the runs whose gateway runs now (the one each run's row records, and those
 * whose headers carry the gateway's pid: src/console/servedStarts.ts), and then only the records
 * that can concern the runs of the page
 * (src/audit/clearRecords.ts): what it shows, and what it needs to order and count them. A record
 * elsewhere in the log is hashed with the chain, never opened here (`portcullis audit sessions`
 * opens every one, and refuses a log with one that does not open).
 *
 * Any such process can also append records that do not open (random bytes under a header of its
 * choosing: the human's gateway's pid and writer id included), or that break the chain. Such a
 * record made every page say only that the audit could not be opened, or (a break) hid every
 * record after it, the human's own run's among them. The page now leaves it out and says so (its
 * seq, and why), and shows the rest: a record that does not open is no run and names none, and a
 * break hides nothing that follows it (test/console/audit-page-bad-records.test.ts).
 */
import type { KeyObject } from "node:crypto";
import { storedRunEnds } from "../approval/storedRunEnd.js";
import { type ClearRecord, clearRecord, recordsOfWriters } from "../audit/clearRecords.js";
import {
  AuditOpenError,
  AuditRecordOpener,
  ChainVerifier,
  type OpenedRecord,
  storedRecords,
  verifyStore,
} from "../audit/index.js";
import type { Store } from "../store/db.js";
import { redactEvent, redactText } from "../util/redact.js";
import { runsServedNow, SESSIONS_SHOWN } from "./auditSessions.js";
import { type AuditPageData, auditViews, type LeftOutRecord } from "./pages.js";
import { recordsAboutRuns } from "./recordsAboutRuns.js";
import { servedRunStarts } from "./servedStarts.js";

export function auditData(
  db: Store,
  auditKey: KeyObject | readonly KeyObject[] | null,
  sessionsFrom = 0,
): AuditPageData {
  if (!auditKey) return { verified: verifyStore(db), opened: null };
  // one pass: the chain verified, and the clear fields of the records it holds kept; past a
  // break too, so that a record forged to break the chain hides none that follow it
  const verifier = new ChainVerifier();
  const clear: ClearRecord[] = [];
  const leftOut: LeftOutRecord[] = [];
  let last = 0;
  for (const r of storedRecords(db)) {
    // the hash the verifier computed, kept: recordsAboutRuns needs every such record's
    const hash = verifier.push(r) ? verifier.lastHash : undefined;
    const c = clearRecord(r);
    if (!c) {
      leftOut.push({ seq: null, why: `a record after record ${last} has no v1 header (it is left out)` });
      continue;
    }
    // Before a break the verifier holds each seq to the one before it; past one, a record whose
    // header repeats or goes back on a seq is left out, so that no two records are taken for one.
    if (c.seq <= last) {
      leftOut.push({
        seq: c.seq,
        why: `a record whose header says seq ${c.seq} comes after record ${last} (out of place: it is left out)`,
      });
      continue;
    }
    last = c.seq;
    if (hash !== undefined) c.hash = hash;
    clear.push(c);
  }
  const verified = verifier.result();
  try {
    const opened = auditPage(db, auditKey, clear, sessionsFrom);
    return { verified, opened: { ...opened, leftOut: [...leftOut, ...opened.leftOut] } };
  } catch (e) {
    return { verified, opened: null, openProblem: `the audit could not be opened: ${(e as Error).message}` };
  }
}

/** The run an opened event names, redacted as redactEvent redacts it (each string as text). */
function runNamed(o: OpenedRecord): string | null {
  return typeof o.event.run === "string" ? redactText(o.event.run) : null;
}

function auditPage(
  db: Store,
  auditKey: KeyObject | readonly KeyObject[],
  clear: readonly ClearRecord[],
  from: number,
): NonNullable<AuditPageData["opened"]> {
  const opener = new AuditRecordOpener(auditKey);
  // Kept as opened: an event is redacted only if it is shown (records' redaction was a tenth of the
  // first view after 10,000 decisions of other runs, none of them shown). The run each names is
  // read redacted, as the shown events say it.
  const opened = new Map<number, OpenedRecord>();
  // The records picked that do not open (sealed to another key, not authenticating, or holding an
  // event of another type than their header's): left out, each said once, the rest shown.
  const unopened = new Map<number, string>();
  const openOne = (r: ClearRecord): OpenedRecord | { unopened: string } => {
    const done = opened.get(r.seq) ?? unopened.get(r.seq);
    if (done !== undefined) return typeof done === "string" ? { unopened: done } : done;
    try {
      const o = opener.open(r.record);
      opened.set(r.seq, o);
      return o;
    } catch (e) {
      if (!(e instanceof AuditOpenError)) throw e;
      unopened.set(r.seq, e.message);
      return { unopened: e.message };
    }
  };
  const open = (records: readonly ClearRecord[]): OpenedRecord[] =>
    records.flatMap((r) => {
      const o = openOne(r);
      return "event" in o ? [o] : [];
    });
  const runOf = (start: ClearRecord): string | null => {
    const o = opened.get(start.seq);
    return o ? runNamed(o) : null;
  };

  // every run the log starts, the latest first; those whose gateway runs now before the others
  const starts = clear.filter((r) => r.type === "run_started").reverse();
  // The served runs' starts (src/console/servedStarts.ts): the one each row records, believed once
  // it starts that run under that pid, and those carrying a served gateway's pid that name one of
  // them. A served run is one slot of the table, with every start so found: a start another
  // process appended naming that run adds its writer's records to the run, as `audit sessions`
  // merges them, and never takes the place of the gateway's own.
  const servedSlots = servedRunStarts(
    clear,
    runsServedNow(db),
    (r) => {
      const o = openOne(r);
      return "event" in o ? o : null;
    },
    runNamed,
  );
  const inServed = new Set(servedSlots.flat());
  const slots = [...servedSlots, ...starts.filter((s) => !inServed.has(s)).map((s) => [s])];
  const page = slots.slice(from, from + SESSIONS_SHOWN);
  const pageStarts = page.flat();

  // the records that can concern the page's runs, opened: their writers' own (their starts among
  // them), then those other processes wrote naming one of them; then its runs in the page's order
  const { own, others } = recordsOfWriters(clear, new Set(pageStarts.map((s) => s.writer)));
  const ownOpened = open(own);
  const shown = [...new Set(pageStarts.map(runOf).filter((run): run is string => run !== null))];
  const runs = new Set(shown);
  const about = recordsAboutRuns(db, opener.keyId, others, runs, openOne, runNamed, (r, why) =>
    unopened.set(r.seq, why),
  );
  const records = [...ownOpened, ...about]
    .sort((a, b) => a.seq - b.seq)
    .map((o) => ({ ...o, event: redactEvent(o.event) }));
  const views = auditViews(records, storedRunEnds(db));
  const byRun = new Map(views.sessions.map((s) => [s.run, s]));
  return {
    sessions: shown.flatMap((run) => byRun.get(run) ?? []),
    activity: views.activity.filter((a) => runs.has(a.run)),
    runs: slots.length,
    from,
    span: page.length,
    leftOut: [...unopened].sort(([a], [b]) => a - b).map(([seq, why]) => ({ seq, why })),
  };
}
