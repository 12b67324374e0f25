/**
 * What a reader can pick records by without opening them: each record's header is in clear
 * (docs/audit-format.md, "Why the event type is in clear"): its seq, type, writer and pid. The
 * console's Audit page shows a page of runs (25) out of a log any process of the user can append
 * thousands of runs to; it opened every record to draw them (3,000 runs of four records, each
 * appended by a writer of its own: a second). It now picks by these fields which records can
 * concern the runs it shows, and opens those only (src/console/audit.ts). `portcullis audit
 * sessions` still opens every record: it lists every run, and checks that each record opens.
 */
import type { AuditEventType } from "./events.js";
import { chainFields, type StoredRecord } from "./record.js";

/** A verified record, by its clear header, with its bytes (opened only if picked). */
export interface ClearRecord {
  seq: number;
  type: string;
  writer: string;
  pid: number;
  record: StoredRecord;
  /** its SHA-256 (hex), when the chain verifier computed it (a record past a break has none) */
  hash?: string;
}

/**
 * The clear fields of a record, read in place as the verifier reads them; null when it has no v1
 * header (the chain check refuses it first).
 */
export function clearRecord(record: StoredRecord): ClearRecord | null {
  const l = chainFields(record);
  if (!l) return null;
  const b = Buffer.from(record.buffer, record.byteOffset, record.byteLength);
  return {
    seq: l.seqValue,
    type: b.toString("latin1", l.type, l.typeEnd),
    writer: b.toString("latin1", l.writer, l.writer + 26),
    pid: Number(b.toString("latin1", l.pid, l.pidEnd)),
    record,
  };
}

/**
 * Records another process writes of a run (views.ts reads them for a run's approvals, its end and
 * its calls' ends): a human's decision (`approve`, `deny`, the console: a writer of its own per
 * decision), a request closed undecided by a lister (`portcullis approvals`, the console), and a
 * run and its calls closed as gone (`gateway_gone`) by a lister or by a gateway as it starts.
 * Every other record of a run is its gateway's own (its writer's).
 */
const ABOUT_ANOTHER_RUN: ReadonlySet<string> = new Set<AuditEventType>([
  "approval_granted",
  "approval_denied",
  "approval_expired",
  "run_ended",
  "call_interrupted",
]);

/**
 * The records that can concern the runs the given writers started: `own`, every record of those
 * writers (a gateway's records before its run's start, its server's epochs, are its run's too, and
 * a gateway over HTTP writes several runs), and `others`, after the first of them, each record of
 * another writer of a type written about another process's run, by a writer that had started no
 * run of its own before it: those that write them (a decision's process, a lister, a gateway as it
 * starts and closes the runs of gone ones) do so before any run of theirs, while a run's own
 * gateway writes such records of its own run after its start. So a writer's own runs, appended by
 * the thousand with their ends, are not opened for another writer's run. Each of `others` names
 * the run it is about (src/console/recordsAboutRuns.ts picks those of the page's runs).
 */
export function recordsOfWriters(
  records: readonly ClearRecord[],
  writers: ReadonlySet<string>,
): { own: ClearRecord[]; others: ClearRecord[] } {
  let first = Number.POSITIVE_INFINITY;
  const startedAt = new Map<string, number>();
  for (const r of records) {
    if (writers.has(r.writer)) first = Math.min(first, r.seq);
    if (r.type === "run_started" && !startedAt.has(r.writer)) startedAt.set(r.writer, r.seq);
  }
  const own: ClearRecord[] = [];
  const others: ClearRecord[] = [];
  for (const r of records) {
    if (writers.has(r.writer)) own.push(r);
    else if (r.seq > first && ABOUT_ANOTHER_RUN.has(r.type) && !((startedAt.get(r.writer) ?? r.seq) < r.seq))
      others.push(r);
  }
  return { own, others };
}
