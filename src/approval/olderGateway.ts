/**
 * An approval for a gateway started by an older portcullis, still running after an upgrade. What
 * an approval signs grew: since store schema version 16 it names the review the human was shown
 * (decision.ts, `review`), and a gateway older than that verifies the signature over a statement
 * without it, finds it does not verify, and does not honour the grant: its call waits on as if
 * nobody had decided, while the human was told "approved" and the gateway's stderr says a grant
 * was forged. So such an approval is refused before it is made, saying to restart the gateway.
 * (A denial's statement never changed: an older gateway honours it.)
 */
import { notPortcullisPhrase, runsPortcullisCommand } from "../identity/proc.js";
import type { Store } from "../store/db.js";
import {
  olderThan,
  type ProcessSchema,
  processSchemaVersion,
  schemaPhrase,
  schemaVersionAt,
} from "../store/schemaVersion.js";
import { reviewDigestMigration } from "./schema.js";

/**
 * The first schema version whose gateways honour an approval as this portcullis signs it. Raise it
 * with the migration of any change to what an approval's signature covers.
 */
export const APPROVALS_HONOURED_SINCE = reviewDigestMigration.version;

/**
 * The schema version the gateway of a run (pid and start time as the run recorded them) runs: as
 * its row says (store/schemaVersion.ts: recorded, or inferred from when the row was written), or
 * inferred from when the run began where the gateway's row is not there. Deny first: "unreadable"
 * when any row of that process records an unreadable one.
 */
export function gatewaySchemaOfRun(
  db: Store,
  run: { gatewayPid: number; gatewayPidStart: string | null; startedAt: string },
): ProcessSchema {
  const rows = db
    .prepare(
      "SELECT started_at, schema_version FROM gateways WHERE pid = ? AND pid_start IS ? ORDER BY started_at",
    )
    .all(run.gatewayPid, run.gatewayPidStart) as { started_at: string; schema_version: unknown }[];
  if (rows.length === 0) return schemaVersionAt(db, run.startedAt);
  const read = rows.map((r) => processSchemaVersion(db, r.schema_version, r.started_at));
  return read.includes("unreadable") ? "unreadable" : read[0]!;
}

/**
 * Why approving a request of this run would not be honoured by its gateway (one started by a
 * portcullis older than APPROVALS_HONOURED_SINCE, or one whose schema version is unreadable),
 * or null when it would be.
 */
export function approvalNotHonouredBy(
  db: Store,
  run: { gatewayPid: number; gatewayPidStart: string | null; startedAt: string },
  id: string,
): string | null {
  const schema = gatewaySchemaOfRun(db, run);
  if (!olderThan(schema, APPROVALS_HONOURED_SINCE)) return null;
  const refused =
    `the gateway that asked approval request ${id} (pid ${run.gatewayPid}) was started by an older portcullis ` +
    `(${schemaPhrase(schema)}), which does not honour approvals as this one signs them ` +
    `(since schema version ${APPROVALS_HONOURED_SINCE}): nothing was decided. `;
  // a run row names any pid its writer chose: one that is not a gateway is not to be ended
  if (!runsPortcullisCommand(run.gatewayPid, "run", run.gatewayPidStart))
    return (
      `${refused}Its ${notPortcullisPhrase(run.gatewayPid, "gateway")}. Restart the MCP client whose gateway asked ` +
      `so that it runs this portcullis, then approve the request its call makes then; or deny this one: portcullis deny ${id}`
    );
  return (
    `${refused}Restart that gateway so that it runs this ` +
    `portcullis (restart the MCP client that started it, or end it: kill ${run.gatewayPid}), then approve the request its call makes then`
  );
}
