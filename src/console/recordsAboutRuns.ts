/**
 * Which of the records other processes write about a run (a decision, a request expired, a run or
 * a call closed as gone: src/audit/clearRecords.ts, `others`) concern the runs of an Audit page.
 * Their clear header does not say which run a record is about: only its sealed event does. The
 * page opened every one written after its first run's start, on every view: 10,000 decisions of
 * other runs (each `portcullis approve` is a writer of its own, so each record is a key agreement)
 * made every view of the page take seconds, the human's run served now among them.
 *
 * The console process now remembers, for each such record it opened, the run its event names (or
 * why it did not open), by its seq and the hash of its bytes, for the audit key it was opened with:
 * the next view opens again only those that name a run of its page, and those it has not seen.
 * What is kept is no more than the store says in clear (run ids are the rows of `runs` and
 * `approval_requests`); no event is kept, and it is read only when the audit is opened with the
 * key. A record changed in place has another hash, and is opened again.
 */
import type { ClearRecord } from "../audit/clearRecords.js";
import type { OpenedRecord } from "../audit/index.js";
import { recordHash } from "../audit/record.js";
import type { Store } from "../store/db.js";

/** What one record names: the run, or why it did not open. */
interface Known {
  hash: string;
  run: string | null;
  unopened: string | null;
}

/** Records remembered at most per store and key (about 200 bytes each): past it, opened each view. */
const KNOWN_AT_MOST = 100_000;

const known = new WeakMap<Store, Map<string, Map<number, Known>>>();

function knownOf(db: Store, keyId: string): Map<number, Known> {
  let byKey = known.get(db);
  if (!byKey) {
    byKey = new Map();
    known.set(db, byKey);
  }
  let m = byKey.get(keyId);
  if (!m) {
    m = new Map();
    byKey.set(keyId, m);
  }
  return m;
}

/**
 * The records of `others` whose event names one of `runs` (as `runNamed` reads it), opened (by
 * `open`, which says why a record does not open). A record that does not open is given to
 * `unopened` each time it is picked, as when it is opened again.
 */
export function recordsAboutRuns(
  db: Store,
  keyId: string,
  others: readonly ClearRecord[],
  runs: ReadonlySet<string>,
  open: (r: ClearRecord) => OpenedRecord | { unopened: string },
  runNamed: (o: OpenedRecord) => string | null,
  unopened: (r: ClearRecord, why: string) => void,
): OpenedRecord[] {
  const memory = knownOf(db, keyId);
  const out: OpenedRecord[] = [];
  for (const r of others) {
    const hash = r.hash ?? recordHash(r.record);
    const k = memory.get(r.seq);
    if (k && k.hash === hash) {
      if (k.unopened !== null) unopened(r, k.unopened);
      else if (k.run !== null && runs.has(k.run)) {
        const o = open(r);
        if ("event" in o) out.push(o);
      }
      continue;
    }
    const o = open(r);
    const run = "event" in o ? runNamed(o) : null;
    if (memory.size < KNOWN_AT_MOST || memory.has(r.seq))
      memory.set(r.seq, { hash, run, unopened: "unopened" in o ? o.unopened : null });
    if ("event" in o && run !== null && runs.has(run)) out.push(o);
  }
  return out;
}
