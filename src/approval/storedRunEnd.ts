import type { Store } from "../store/db.js";

/**
 * A run's end as its row in the store holds it: the store's word only, which any process of the
 * user can write (`UPDATE runs SET ended_at = …, ended_reason = …`). What `audit sessions` shows
 * of a run the audit log holds no `run_ended` for (src/audit/views.ts, endInStoreOnly): the chain is
 * the record of a run's end, so this is never taken for one, and its reason is never the end's.
 */
export interface StoredRunEnd {
  /** `ended_at` as written (a value that is not text is shown as its text) */
  endedAt: string;
  /** `ended_reason` as written, if text */
  reason: string | null;
}

/**
 * A reader of runs' ends as the store's rows say (null: no row, or a row that is not ended), its
 * statement prepared once for all the runs a view asks about.
 */
export function storedRunEnds(db: Store): (run: string) => StoredRunEnd | null {
  const read = db.prepare("SELECT * FROM runs WHERE run = ?");
  return (run) => {
    const row = read.get(run) as { ended_at?: unknown; ended_reason?: unknown } | undefined;
    const endedAt = storedEndText(row?.ended_at);
    if (endedAt === null) return null;
    return { endedAt, reason: typeof row?.ended_reason === "string" ? row.ended_reason : null };
  };
}

/**
 * A run row's `ended_at` as an end: null only when it is NULL (or there is no row). Any other
 * value ends the run, text or not (`UPDATE runs SET ended_at = 123`), and is given as its text:
 * the one reading of the gateway (src/approval/runs.ts, runEndedElsewhere: the run's session grants
 * stop covering) and of `audit sessions` (storedRunEnds). Deny first: a value a reader cannot take
 * for a time never keeps a run open.
 */
export function storedEndText(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  return typeof value === "string" ? value : String(value);
}
