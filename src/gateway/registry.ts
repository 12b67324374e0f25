import type { ExecutionRecord } from "../identity/index.js";
import { processStartTime } from "../identity/index.js";
import type { Store } from "../store/db.js";
import { redactRecord, redactText } from "../util/redact.js";

/**
 * Execution records and status lines are stored redacted (src/util/redact.ts): the store is a
 * file other tools read, and a secret on the server's command line must not end up in it.
 *
 * The row each running gateway keeps in the store so that another process
 * (`portcullis status`) can show it. Liveness is judged by pid *and* process
 * start time: a reused pid is not the same gateway.
 */
export interface GatewayRow {
  gatewayId: string;
  pid: number;
  serverLabel: string;
  startedAt: string;
  heartbeatAt: string;
  state: string;
  /**
   * While `state` is `paused` (supervision waits for a change of the server's files after a
   * crash loop): why, as the client is told it; else null. `epoch` and `record` are then the
   * last epoch's, whose server is gone.
   */
  paused: string | null;
  epoch: string | null;
  record: ExecutionRecord | null;
  status: { at: string; line: string }[];
  endedAt: string | null;
  running: boolean;
}

const MAX_STATUS_LINES = 50;

/**
 * One entry of status_json. `paused` marks the entry that holds the reason of a pause (kept with
 * the lines so the row needs no column of its own; readers before it show it as a line).
 */
interface StoredLine {
  at: string;
  line: string;
  paused?: true;
}

export class GatewayRegistry {
  private lines: StoredLine[] = [];

  constructor(
    private readonly db: Store,
    readonly gatewayId: string,
    private readonly serverLabel: string,
  ) {
    const now = new Date().toISOString();
    db.prepare(
      `INSERT INTO gateways (gateway_id, pid, pid_start, server_label, started_at, heartbeat_at, state)
       VALUES (?, ?, ?, ?, ?, ?, 'starting')`,
    ).run(gatewayId, process.pid, processStartTime(process.pid), serverLabel, now, now);
  }

  update(fields: { state?: string; epoch?: string | null; record?: ExecutionRecord | null }): void {
    if (!this.db.open) return;
    const sets: string[] = ["heartbeat_at = ?"];
    const vals: unknown[] = [new Date().toISOString()];
    if (fields.state !== undefined) {
      sets.push("state = ?");
      vals.push(fields.state);
    }
    if (fields.epoch !== undefined) {
      sets.push("epoch = ?");
      vals.push(fields.epoch);
    }
    if (fields.record !== undefined) {
      sets.push("record_json = ?");
      vals.push(fields.record ? JSON.stringify(redactRecord(fields.record)) : null);
    }
    this.db
      .prepare(`UPDATE gateways SET ${sets.join(", ")} WHERE gateway_id = ?`)
      .run(...vals, this.gatewayId);
  }

  statusLine(line: string): void {
    this.storeLine({ at: new Date().toISOString(), line: redactText(line) });
  }

  /**
   * Supervision paused (a crash loop under the artifact watcher): the state is `paused` until
   * the next epoch comes up (`update` with another state), and `why` is its reason.
   */
  paused(why: string): void {
    this.storeLine({ at: new Date().toISOString(), line: redactText(why), paused: true });
    this.update({ state: "paused" });
  }

  private storeLine(entry: StoredLine): void {
    if (!this.db.open) return;
    this.lines.push(entry);
    if (this.lines.length > MAX_STATUS_LINES) this.lines.shift();
    this.db
      .prepare("UPDATE gateways SET status_json = ? WHERE gateway_id = ?")
      .run(JSON.stringify(this.lines), this.gatewayId);
  }

  recordEpoch(record: ExecutionRecord, reason: string): void {
    if (!this.db.open) return;
    this.db
      .prepare(
        `INSERT INTO epochs (epoch, server_label, gateway_id, identity_digest, record_json, started_at, reason)
         VALUES (?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT(epoch) DO UPDATE SET identity_digest = excluded.identity_digest, record_json = excluded.record_json`,
      )
      .run(
        record.epoch,
        this.serverLabel,
        this.gatewayId,
        record.identityDigest,
        JSON.stringify(redactRecord(record)),
        record.startedAt,
        reason,
      );
  }

  end(): void {
    if (!this.db.open) return;
    this.db
      .prepare("UPDATE gateways SET ended_at = ?, state = 'ended' WHERE gateway_id = ?")
      .run(new Date().toISOString(), this.gatewayId);
  }
}

export function listGateways(db: Store, opts: { all?: boolean } = {}): GatewayRow[] {
  const rows = db.prepare("SELECT * FROM gateways ORDER BY started_at").all() as Record<string, unknown>[];
  const out: GatewayRow[] = [];
  for (const r of rows) {
    const pid = r.pid as number;
    const running = r.ended_at === null && processStartTime(pid) === (r.pid_start as string | null);
    if (!running && !opts.all) continue;
    const stored = JSON.parse((r.status_json as string) ?? "[]") as StoredLine[];
    const state = running ? (r.state as string) : r.ended_at ? "ended" : "gone (killed)";
    out.push({
      gatewayId: r.gateway_id as string,
      pid,
      serverLabel: r.server_label as string,
      startedAt: r.started_at as string,
      heartbeatAt: r.heartbeat_at as string,
      state,
      paused: state === "paused" ? pauseReason(stored) : null,
      epoch: (r.epoch as string | null) ?? null,
      // Redacted again when read: rows written before records were redacted at write.
      record: r.record_json ? redactRecord(JSON.parse(r.record_json as string) as ExecutionRecord) : null,
      status: stored.filter((s) => !s.paused).map((s) => ({ at: s.at, line: redactText(s.line) })),
      endedAt: (r.ended_at as string | null) ?? null,
      running,
    });
  }
  return out;
}

/** The reason of the newest pause (null when it fell out of the kept lines). */
function pauseReason(stored: StoredLine[]): string | null {
  for (let i = stored.length - 1; i >= 0; i--) if (stored[i]!.paused) return redactText(stored[i]!.line);
  return null;
}
