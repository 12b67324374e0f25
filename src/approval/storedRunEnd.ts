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
    if (row?.ended_at === null || row?.ended_at === undefined) return null;
    return {
      endedAt: typeof row.ended_at === "string" ? row.ended_at : String(row.ended_at),
      reason: typeof row.ended_reason === "string" ? row.ended_reason : null,
    };
  };
}
