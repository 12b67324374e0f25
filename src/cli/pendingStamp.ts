/**
 * What `approvals --watch` compares between its reads to tell whether the pending list may have
 * changed. Any process of the user can write thousands of pending rows into the store; reading
 * every one (and judging its gateway alive) twice a second kept a CPU busy for as long as the
 * watch ran. The stamp reads no row: it changes when
 *   - another connection committed anything (PRAGMA data_version: a request made, decided,
 *     withdrawn, a call starting or stopping to wait on one),
 *   - this connection wrote anything (total_changes(): its own sweep closing what is overdue or
 *     abandoned, which data_version does not count),
 *   - a pending request's time ran out (how many are past their expiry: a request stops being
 *     decidable then even before anyone closes it),
 *   - a gateway that made a pending request was found gone or back (each distinct gateway judged
 *     once, not once per row).
 * The watch reads the list (and sweeps) only when the stamp differs from the last one.
 */
import { type GatewayColumns, runGatewayLiveness } from "../approval/runs.js";
import type { Store } from "../store/db.js";

export function pendingStamp(db: Store, now = new Date()): string {
  const version = db.pragma("data_version", { simple: true }) as number;
  const own = db.prepare("SELECT total_changes()").pluck().get() as number;
  const due = db
    .prepare("SELECT COUNT(*) FROM approval_requests WHERE state = 'pending' AND expires_at <= ?")
    .pluck()
    .get(now.toISOString()) as number;
  const gateways = db
    .prepare(
      `SELECT DISTINCT gateway_pid, gateway_pid_start, gateway_pid_ns, gateway_boot FROM runs
        WHERE ended_at IS NULL AND run IN (SELECT agent_run FROM approval_requests WHERE state = 'pending')
        ORDER BY gateway_pid, gateway_pid_start, gateway_pid_ns, gateway_boot`,
    )
    .all() as GatewayColumns[];
  const gone = gateways.map((g) => (runGatewayLiveness(g) === "gone" ? "g" : "a")).join("");
  return `${version}:${own}:${due}:${gone}`;
}
