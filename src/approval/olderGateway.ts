/**
 * An approval for a gateway started by an older portcullis, still running after an upgrade. What
 * an approval signs grew: since store schema version 16 it names the review the human was shown
 * (decision.ts, `review`), and a gateway older than that verifies the signature over a statement
 * without it, finds it does not verify, and does not honour the grant: its call waits on as if
 * nobody had decided, while the human was told "approved" and the gateway's stderr says a grant
 * was forged. So such an approval is refused before it is made, saying to restart the gateway.
 * (A denial's statement never changed: an older gateway honours it.)
 */
import type { Store } from "../store/db.js";
import { schemaVersionAt } from "../store/schemaVersion.js";
import { reviewDigestMigration } from "./schema.js";

/**
 * The first schema version whose gateways honour an approval as this portcullis signs it. Raise it
 * with the migration of any change to what an approval's signature covers.
 */
export const APPROVALS_HONOURED_SINCE = reviewDigestMigration.version;

/**
 * The schema version the gateway of a run (pid and start time as the run recorded them) runs: the
 * store's when that gateway registered (store/schemaVersion.ts), or when the run began where the
 * gateway's row is not there.
 */
export function gatewaySchemaOfRun(
  db: Store,
  run: { gatewayPid: number; gatewayPidStart: string | null; startedAt: string },
): number | null {
  const row = db
    .prepare("SELECT min(started_at) AS at FROM gateways WHERE pid = ? AND pid_start IS ?")
    .get(run.gatewayPid, run.gatewayPidStart) as { at: string | null };
  return schemaVersionAt(db, row.at ?? run.startedAt);
}

/**
 * Why approving a request of this run would not be honoured by its gateway (one started by a
 * portcullis older than APPROVALS_HONOURED_SINCE), or null when it would be.
 */
export function approvalNotHonouredBy(
  db: Store,
  run: { gatewayPid: number; gatewayPidStart: string | null; startedAt: string },
  id: string,
): string | null {
  const schema = gatewaySchemaOfRun(db, run);
  if (schema === null || schema >= APPROVALS_HONOURED_SINCE) return null;
  return (
    `the gateway that asked approval request ${id} (pid ${run.gatewayPid}) was started by an older portcullis ` +
    `(store schema version ${schema}), which does not honour approvals as this one signs them ` +
    `(since schema version ${APPROVALS_HONOURED_SINCE}): nothing was decided. Restart that gateway so that it runs this ` +
    `portcullis (restart the MCP client that started it, or end it: kill ${run.gatewayPid}), then approve the request its call makes then`
  );
}
