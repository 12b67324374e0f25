/**
 * Pending approval requests nobody can use any more: their time is up, or the gateway that made
 * them is provably gone (SIGKILLed, crashed) and so never closed them itself. Whoever lists the
 * requests (the CLI, the console) closes them here, so a dead gateway's request does not stay
 * "pending, nobody is waiting" forever.
 *
 * Exactly once: each request is closed by a conditional audit append, whose condition (the
 * `pending → expired` update) runs inside the audit's write transaction. Two processes noticing
 * the same request at once serialise on the write lock; the second finds it no longer pending and
 * writes nothing. The gateway's own expiry (requestExpiry.ts) closes with the same conditional
 * update, so it and a lister never both record one request.
 */
import { AuditLog } from "../audit/log.js";
import { KeyringMissingError } from "../keyring/keyringErrors.js";
import type { Store } from "../store/db.js";
import { StoreFiles } from "../store/storeFiles.js";
import { closeRequest, expiredEvent, getRequest } from "./requests.js";
import { endRunRows, type GatewayColumns, runGatewayLiveness } from "./runs.js";

interface Candidate extends GatewayColumns {
  request: string;
  expires_at: string;
}

/**
 * Why `c` can no longer be decided usefully at `now`, or null while a gateway may still use it.
 * `gone`: what this sweep judged of each distinct gateway already (thousands of rows written by
 * another process name one gateway: judged once, not once per row, at each `approvals --watch`
 * change).
 */
function abandonedBecause(c: Candidate, now: number, gone: Map<string, boolean>): string | null {
  if (Date.parse(c.expires_at) <= now) return "nobody decided before it expired";
  // Gone only when provably so (src/identity/procLiveness.ts): a gateway in another PID namespace
  // (a container or sandbox on this state directory), or whose start time was never read, or a
  // platform that cannot read one, proves nothing.
  const which = JSON.stringify([c.gateway_pid, c.gateway_pid_start, c.gateway_pid_ns, c.gateway_boot]);
  let judged = gone.get(which);
  if (judged === undefined) {
    judged = runGatewayLiveness(c) === "gone";
    gone.set(which, judged);
  }
  return judged ? goneReason(c.gateway_pid) : null;
}

function goneReason(pid: number): string {
  return `the gateway that waited for it (pid ${pid}) is gone`;
}

/**
 * Closes the pending requests that are overdue or whose gateway is gone, each recorded once as
 * `approval_expired` (with `reason` and `by`). Returns the ids this process closed. Without a
 * keyring nothing can be recorded, so nothing is closed.
 */
export function expireAbandoned(db: Store, stateDir: string, by: string, now = new Date()): string[] {
  const due = abandonedRequests(db, now);
  if (due.length === 0) return [];
  // A long-running reader (the console, `approvals --watch`) closes requests too: never through
  // a store file deleted or replaced since it opened the store (src/store/storeFiles.ts).
  StoreFiles.of(db).assertKept();
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

/**
 * The pending requests expireAbandoned would close at `now`, oldest first, each with why: read
 * only, so a lister whose store cannot be written (a full disk) can say which it left pending.
 */
export function abandonedRequests(db: Store, now = new Date()): { id: string; reason: string }[] {
  const candidates = db
    .prepare(
      `SELECT r.request, r.expires_at, runs.gateway_pid, runs.gateway_pid_start, runs.gateway_pid_ns,
              runs.gateway_boot
         FROM approval_requests r JOIN runs ON runs.run = r.agent_run
        WHERE r.state = 'pending' ORDER BY r.created_at, r.request`,
    )
    .all() as Candidate[];
  const gone = new Map<string, boolean>();
  return candidates
    .map((c) => ({ id: c.request, reason: abandonedBecause(c, now.getTime(), gone) }))
    .filter((d): d is { id: string; reason: string } => d.reason !== null);
}

interface OpenRun extends GatewayColumns {
  run: string;
  server_label: string;
}

/**
 * Ends the agent runs whose gateway is provably gone (SIGKILLed, crashed: it never recorded their
 * end), so that they do not stay "open" in the audit's sessions and their grants end, as at any
 * run's end. For each: its pending approval requests are closed first (`approval_expired`, as a
 * lister would close them), then `run_ended` with reason "gateway_gone" and the gone gateway's
 * pid. Each record is written only if its row can still be closed, in the same transaction under
 * the audit log's write lock: two gateways starting at once end each run once. A run whose
 * gateway this process cannot judge (another PID namespace: a container or sandbox sharing the
 * state directory; a start time never read; a platform that cannot read one) is left open: only
 * a process that can see a gateway may end its runs. Returns how many runs this process ended.
 */
export function endRunsOfGoneGateways(db: Store, audit: AuditLog, by: string): number {
  const open = db
    .prepare(
      `SELECT run, server_label, gateway_pid, gateway_pid_start, gateway_pid_ns, gateway_boot FROM runs
        WHERE ended_at IS NULL ORDER BY started_at, run`,
    )
    .all() as OpenRun[];
  const gone = open.filter((r) => runGatewayLiveness(r) === "gone");
  if (gone.length === 0) return 0;
  const pendingOf = db
    .prepare(
      "SELECT request FROM approval_requests WHERE agent_run = ? AND state = 'pending' ORDER BY created_at",
    )
    .pluck();
  const now = new Date().toISOString();
  const items = gone.flatMap((r) => {
    const reason = goneReason(r.gateway_pid);
    const requests = (pendingOf.all(r.run) as string[]).flatMap((id) => {
      const req = getRequest(db, id);
      return req
        ? [{ event: expiredEvent(req, reason, by), condition: () => closeRequest(db, id, "expired", reason) }]
        : [];
    });
    const end = {
      event: {
        type: "run_ended" as const,
        run: r.run,
        serverLabel: r.server_label,
        reason: "gateway_gone",
        gatewayPid: r.gateway_pid,
      },
      condition: () => endRunRows(db, r.run, now, "gateway_gone"),
    };
    return [...requests, end];
  });
  return audit.appendIf(items).filter((w, i) => w !== null && items[i]?.event.type === "run_ended").length;
}
