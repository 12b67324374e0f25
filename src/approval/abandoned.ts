/**
 * Pending approval requests nobody can use any more: their time is up, or the gateway that made
 * them is provably gone (SIGKILLed, crashed) and so never closed them itself. Whoever lists the
 * requests (the CLI, the console) closes them here, so a dead gateway's request does not stay
 * "pending, nobody is waiting" forever.
 *
 * Exactly once: each request is closed by a conditional audit append, whose condition (the
 * `pending → expired` update) runs inside the audit's write transaction. Two processes noticing
 * the same request at once serialise on the write lock; the second finds it no longer pending and
 * writes nothing. The gateway's own expiry (authorizer.ts) closes with the same conditional
 * update, so it and a lister never both record one request.
 */
import { AuditLog } from "../audit/log.js";
import { processStartTime } from "../identity/proc.js";
import { KeyringMissingError } from "../keyring/keyring.js";
import type { Store } from "../store/db.js";
import { closeRequest, expiredEvent, getRequest } from "./requests.js";

interface Candidate {
  request: string;
  expires_at: string;
  gateway_pid: number;
  gateway_pid_start: string | null;
}

/** Why `c` can no longer be decided usefully at `now`, or null while a gateway may still use it. */
function abandonedBecause(c: Candidate, now: number, canTell: boolean): string | null {
  if (Date.parse(c.expires_at) <= now) return "nobody decided before it expired";
  // Gone only when provably so: the pid runs another process, or none. A run whose gateway's start
  // time was never read, or a platform that cannot read one, proves nothing.
  if (canTell && c.gateway_pid_start !== null && processStartTime(c.gateway_pid) !== c.gateway_pid_start) {
    return `the gateway that waited for it (pid ${c.gateway_pid}) is gone`;
  }
  return null;
}

/**
 * Closes the pending requests that are overdue or whose gateway is gone, each recorded once as
 * `approval_expired` (with `reason` and `by`). Returns the ids this process closed. Without a
 * keyring nothing can be recorded, so nothing is closed.
 */
export function expireAbandoned(db: Store, stateDir: string, by: string, now = new Date()): string[] {
  const candidates = db
    .prepare(
      `SELECT r.request, r.expires_at, runs.gateway_pid, runs.gateway_pid_start
         FROM approval_requests r JOIN runs ON runs.run = r.agent_run
        WHERE r.state = 'pending' ORDER BY r.created_at, r.request`,
    )
    .all() as Candidate[];
  if (candidates.length === 0) return [];
  const canTell = processStartTime(process.pid) !== null;
  const due = candidates
    .map((c) => ({ id: c.request, reason: abandonedBecause(c, now.getTime(), canTell) }))
    .filter((d): d is { id: string; reason: string } => d.reason !== null);
  if (due.length === 0) return [];
  let log: AuditLog;
  try {
    log = AuditLog.open(db, stateDir);
  } catch (e) {
    if (e instanceof KeyringMissingError) return [];
    throw e;
  }
  const closed: string[] = [];
  for (const { id, reason } of due) {
    const req = getRequest(db, id);
    if (!req) continue;
    const [written] = log.appendIf([
      {
        event: expiredEvent(req, reason, by),
        condition: () => closeRequest(db, id, "expired", reason),
      },
    ]);
    if (written) closed.push(id);
  }
  log.close();
  return closed;
}
