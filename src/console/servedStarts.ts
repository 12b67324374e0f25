/**
 * The start records of the runs served now, for the Audit page's Sessions table (their runs come
 * first). Which runs are served is the store's rows and the live processes' word
 * (src/console/auditSessions.ts, runsServedNow), never a record's. Where each one's start is in
 * the log is what this module finds.
 *
 * A run's row records the seq of its own `run_started` (migration 21), written by its gateway in
 * the transaction that appends that record (src/cli/agentRun.ts): that record is opened, and
 * believed only when it is a `run_started` carrying the row's gateway pid in its header and naming
 * that run once opened. Any process of the user can rewrite the column: a seq pointing anywhere
 * else (another run's start, a record of another type, one that does not open, none at all) is not
 * believed, and the run's start is looked for as for a row without one (written before migration
 * 21, or by an older portcullis's gateway still running): among the starts whose clear header
 * carries the gateway's pid, of which at most SERVED_STARTS_OPENED are opened. Those starts are
 * also looked among while a believed one is known: a start another process appended naming a
 * served run under its gateway's pid adds its writer's records to the run, as `audit sessions`
 * merges them, and never takes the place of the one the row names.
 */
import type { ClearRecord } from "../audit/clearRecords.js";
import type { OpenedRecord } from "../audit/index.js";
import type { ServedRun } from "./auditSessions.js";

/**
 * Start records opened at most to find the runs served now among those whose header names a
 * served gateway's pid: a writer can give its records any pid, that one too, and each start of a
 * writer of its own costs a key agreement to open.
 */
const SERVED_STARTS_OPENED = 1000;

/**
 * Which of the starts whose header names a served gateway's pid (in log order) are opened: all of
 * them up to SERVED_STARTS_OPENED, past that the earliest half and the latest half. The latest
 * only let any process push the running gateway's start out of reach by appending 1,000 starts
 * carrying its pid after it; the earliest half too still let 500 before the run's start and 500
 * after push it out (test/console/hostile-forged-served-starts.test.ts), which is why a row's
 * recorded seq is opened first. The latest half keeps in reach the runs a long-lived gateway (over
 * HTTP) starts after many of its own.
 */
export function servedStartsToOpen<T>(starts: readonly T[]): readonly T[] {
  if (starts.length <= SERVED_STARTS_OPENED) return starts;
  const half = SERVED_STARTS_OPENED / 2;
  return [...starts.slice(0, half), ...starts.slice(starts.length - half)];
}

/** The record whose seq is `seq` in `clear` (ascending seqs), or undefined. */
function atSeq(clear: readonly ClearRecord[], seq: number): ClearRecord | undefined {
  let lo = 0;
  let hi = clear.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const at = clear[mid] as ClearRecord;
    if (at.seq === seq) return at;
    if (at.seq < seq) lo = mid + 1;
    else hi = mid - 1;
  }
  return undefined;
}

/**
 * The served runs' starts, one slot a run, the slot whose latest start is latest first. `clear`:
 * the log's records in ascending seq order; `open`: a record opened, or null when it does not open
 * (the caller names it); `runOf`: the run an opened start names.
 */
export function servedRunStarts(
  clear: readonly ClearRecord[],
  served: ReadonlyMap<string, ServedRun>,
  open: (r: ClearRecord) => OpenedRecord | null,
  runOf: (o: OpenedRecord) => string | null,
): ClearRecord[][] {
  const slots = new Map<string, Map<number, ClearRecord>>();
  const add = (run: string, s: ClearRecord) => {
    const slot = slots.get(run) ?? new Map<number, ClearRecord>();
    slot.set(s.seq, s);
    slots.set(run, slot);
  };
  for (const [run, { pid, startSeq }] of served) {
    if (startSeq === null) continue;
    const s = atSeq(clear, startSeq);
    if (s === undefined || s.type !== "run_started" || s.pid !== pid) continue;
    const o = open(s);
    if (o !== null && runOf(o) === run) add(run, s);
  }
  // A start that does not open names no run: it is no served run, whatever pid its header carries.
  const pids = new Set([...served.values()].map((r) => r.pid));
  const candidates = servedStartsToOpen(clear.filter((r) => r.type === "run_started" && pids.has(r.pid)));
  for (const s of candidates) {
    const o = open(s);
    const run = o === null ? null : runOf(o);
    if (run !== null && served.get(run)?.pid === s.pid) add(run, s);
  }
  const latest = (slot: ReadonlyMap<number, ClearRecord>) => Math.max(...slot.keys());
  return [...slots.values()].sort((a, b) => latest(b) - latest(a)).map((slot) => [...slot.values()]);
}
