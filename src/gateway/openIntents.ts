import type { AuditEvent, AuditLog } from "../audit/index.js";
import { processLiveness } from "../identity/proc.js";
import type { Store } from "../store/db.js";
import { requestIdFields } from "./records.js";

/**
 * Calls whose intent (`tool_called`) is in the audit chain and whose end (`tool_result`,
 * `call_interrupted`) is not, each with the gateway that wrote it. The chain is sealed, so a
 * gateway cannot read it back to find them: this table is their index. A row is written in the
 * transaction that writes the intent and removed in the one that writes the call's end, so the
 * table and the chain never disagree (docs/audit-format.md, "Open intents").
 */
export class OpenIntents {
  private readonly insert;
  private readonly remove;

  constructor(
    db: Store,
    private readonly gatewayId: string,
  ) {
    this.insert = db.prepare(
      `INSERT OR REPLACE INTO open_intents (gateway_id, call_key, run, server_label, request_id, tool, epoch, opened_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    this.remove = db.prepare("DELETE FROM open_intents WHERE gateway_id = ? AND call_key = ?");
  }

  /** Inside the intent's transaction: the call is open. */
  opened(e: AuditEvent): void {
    this.insert.run(
      this.gatewayId,
      callKey(e),
      str(e.run),
      str(e.serverLabel) ?? "",
      idTextOf(e),
      str(e.tool) ?? str(e.method), // a guarded read has a method, no tool
      str(e.epoch),
      new Date().toISOString(),
    );
  }

  /**
   * Inside the transaction of the call's end: it is closed. False when its row was no longer
   * there: another process removed it, most often a gateway that took this one for gone and
   * closed the call itself (`call_interrupted`, gateway_gone) after the store's rows of this
   * gateway were edited; the end written now is then the call's second (docs/security.md).
   */
  closed(e: AuditEvent): boolean {
    return this.remove.run(this.gatewayId, callKey(e)).changes === 1;
  }
}

/**
 * A call within one gateway: its run and its call key (`callKey`, which no other call of the
 * gateway process has: clientIdText.ts). Never its JSON-RPC id alone: over HTTP two POSTs of one
 * session may carry the same id at once, and each must keep a row of its own until its own end.
 * A record without a call key (none is written so now) is keyed by its id as the client wrote it.
 */
function callKey(e: AuditEvent): string {
  return JSON.stringify([e.run ?? null, typeof e.callKey === "number" ? e.callKey : idTextOf(e)]);
}

/** The call key a row's `call_key` holds (rows written before call keys hold an id text instead). */
function keyOfRow(callKey: string): { callKey: number } | Record<string, never> {
  try {
    const [, key] = JSON.parse(callKey) as [unknown, unknown];
    return typeof key === "number" ? { callKey: key } : {};
  } catch {
    return {};
  }
}

/** A call's id as JSON text: `requestIdText` where the value does not carry it (records.ts). */
function idTextOf(e: AuditEvent): string {
  return typeof e.requestIdText === "string" ? e.requestIdText : JSON.stringify(e.requestId ?? null);
}

function str(v: unknown): string | null {
  return typeof v === "string" ? v : null;
}

interface OrphanRow {
  gateway_id: string;
  call_key: string;
  run: string | null;
  server_label: string;
  request_id: string;
  tool: string | null;
  epoch: string | null;
  pid: number | null;
  pid_start: string | null;
  pid_ns: string | null;
  boot: string | null;
  ended_at: string | null;
}

/**
 * Whether the gateway of an open call is provably gone: its row ended, or its pid no longer runs
 * the process that started with that start time (a reused pid is not the gateway), judged where
 * the pid means something (src/identity/procLiveness.ts). A gateway in another PID namespace (a
 * container or sandbox sharing the state directory), or whose row never recorded where it ran,
 * cannot be judged from here: its calls may still be in flight, and are left open for a gateway
 * that can see it. A call whose gateway left no row at all has no gateway anyone could see.
 */
function gatewayGone(r: OrphanRow): boolean {
  if (r.ended_at !== null || r.pid === null) return true;
  return processLiveness({ pid: r.pid, start: r.pid_start, pidNs: r.pid_ns, boot: r.boot }) === "gone";
}

/**
 * Closes the calls left open by gateways that are provably gone (gatewayGone), appending one
 * `call_interrupted` with outcome "unknown" for each. Each record is written only if its row is
 * still there, removed under the audit log's write lock in the same transaction: two gateways
 * starting at once close each call once. Reads only the table, never the chain. Returns the
 * number of calls closed.
 */
export function closeOrphanIntents(db: Store, audit: AuditLog, exceptGateway: string): number {
  const rows = db
    .prepare(
      `SELECT o.gateway_id, o.call_key, o.run, o.server_label, o.request_id, o.tool, o.epoch,
              g.pid, g.pid_start, g.pid_ns, g.boot, g.ended_at
         FROM open_intents o LEFT JOIN gateways g ON g.gateway_id = o.gateway_id
        WHERE o.gateway_id <> ?`,
    )
    .all(exceptGateway) as OrphanRow[];
  const alive = new Map<string, boolean>();
  const gone = rows.filter((r) => {
    let a = alive.get(r.gateway_id);
    if (a === undefined) {
      a = !gatewayGone(r);
      alive.set(r.gateway_id, a);
    }
    return !a;
  });
  if (gone.length === 0) return 0;
  const take = db.prepare("DELETE FROM open_intents WHERE gateway_id = ? AND call_key = ?");
  const written = audit.appendIf(
    gone.map((r) => ({
      event: {
        type: "call_interrupted",
        run: r.run,
        serverLabel: r.server_label,
        ...requestIdFields(r.request_id),
        ...keyOfRow(r.call_key), // so the views join this end to its own intent
        tool: r.tool,
        epoch: r.epoch,
        reason: "gateway_gone",
        outcome: "unknown",
        gateway: r.gateway_id,
      },
      // Another gateway starting now may have closed it first: then write nothing.
      condition: () => take.run(r.gateway_id, r.call_key).changes === 1,
    })),
  );
  return written.filter((w) => w !== null).length;
}
