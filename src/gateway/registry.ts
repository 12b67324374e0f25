import type { Statement } from "better-sqlite3";
import type { ExecutionRecord } from "../identity/index.js";
import {
  inAnotherNamespace,
  type Liveness,
  processLiveness,
  processStartTime,
  type RecordedProcess,
  recordedPlace,
} from "../identity/proc.js";
import { isBusy, type Store, waitingOnce, writeRefused } from "../store/db.js";
import { KNOWN_SCHEMA_VERSION, type ProcessSchema, processSchemaVersion } from "../store/schemaVersion.js";
import { storeAdvice } from "../store/storeAdvice.js";
import {
  AN_OBJECT,
  LIST_OF_NAMES,
  LIST_OF_OBJECTS,
  type StoredShape,
  storedJson,
} from "../store/storedJson.js";
import { StoreFiles } from "../store/storeFiles.js";
import { type Logger, scrubbedLine, scrubbedStrings } from "../util/log.js";
import { redactRecord, redactText } from "../util/redact.js";

/**
 * How long a write of the gateway's row (and its epochs') waits for another process's lock:
 * another gateway's commit (a fsync included, on a slow disk) is waited out; a lock held longer
 * is not (the write is tried again at the next heartbeat).
 */
const ROW_BUSY_MS = 500;

/**
 * Execution records and status lines are stored redacted (src/util/redact.ts): the store is a
 * file other tools read, and a secret on the server's command line must not end up in it.
 *
 * The row each running gateway keeps in the store so that another process
 * (`portcullis status`) can show it. Liveness is judged by pid *and* process
 * start time (a reused pid is not the same gateway), where the row says the pid means something:
 * its PID namespace and boot (src/identity/procLiveness.ts). A gateway in another namespace (a
 * container or sandbox on this state directory) cannot be seen from here and is shown as such,
 * never as gone.
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
  /**
   * Why `epoch` began (its `epochs` row: launch, respawn, restart, replaced, …); null when that
   * row is not written. A `replaced` epoch began when other code took over under a process that
   * was started before it (a watcher's new worker, an execve): `record.startedAt` is then the
   * epoch's start, not the process's.
   */
  epochReason: string | null;
  record: ExecutionRecord | null;
  status: { at: string; line: string }[];
  /** set when its record or status lines cannot be read (rewritten in the store): which and why */
  unreadable?: string;
  endedAt: string | null;
  /** not ended and not provably gone: a gateway this process cannot see counts as running */
  running: boolean;
  /**
   * What this process can tell of the gateway process: "gone" when its row ended or its pid is
   * provably not it; "unknown" when it cannot be judged from here (see `seen`).
   */
  liveness: Liveness;
  /**
   * While `liveness` is "unknown": "another PID namespace" (it registered in a namespace other
   * than this one's: its pid is not this namespace's pid), or "cannot tell" (where it runs was
   * never recorded, or could not be read by it, or this process cannot read its own). Null otherwise.
   */
  unseen: "another PID namespace" | "cannot tell" | null;
  /**
   * The schema version the gateway runs, which is the one the portcullis that started it knows:
   * as its row records it, or for a row written before that was recorded the store's when the row
   * was written (store/schemaVersion.ts). Below this portcullis's, or "unreadable" (counted as
   * older), a gateway started by an older one, still running after an upgrade. null when nothing
   * tells (no migration predates a row that records none).
   */
  schemaVersion: ProcessSchema;
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

const STORED_LINES: StoredShape<StoredLine[]> = {
  is: (v): v is StoredLine[] =>
    LIST_OF_OBJECTS.is(v) && v.every((l) => typeof l.at === "string" && typeof l.line === "string"),
  words: "a list of status lines",
};

const A_RECORD: StoredShape<{ launchCommand: string[] }> = {
  is: (v): v is { launchCommand: string[] } => AN_OBJECT.is(v) && LIST_OF_NAMES.is(v.launchCommand),
  words: "an execution record",
};

/** Fields of the gateway's row a caller sets. */
type RowFields = { state?: string; epoch?: string | null; record?: ExecutionRecord | null };

/** Fields of the row waiting to be written (all of them, at the next write that succeeds). */
interface Pending {
  state?: string;
  epoch?: string | null;
  record?: ExecutionRecord | null;
  endedAt?: string;
}

/**
 * Every write here is best effort: the row is for `portcullis status`, and the gateway must serve
 * whether or not it can be written. They run from timers and supervisor events, where an
 * exception would end the process (and its server) with it; another program holding the store's
 * lock past the busy timeout (a database browser with an unsaved edit, an sqlite3 shell inside
 * BEGIN) is enough for one. A write that fails is kept and tried again with the next one (the
 * heartbeat, every 5 s), its failure said once on stderr, and its recovery once.
 */
export class GatewayRegistry {
  private lines: StoredLine[] = [];
  private inserted = false;
  private pending: Pending = {};
  private linesChanged = false;
  /** epoch rows not yet written, by epoch (the newest record of each) */
  private epochs = new Map<string, { record: ExecutionRecord; reason: string }>();
  private failing = false;
  /** the gateway ends: the lock is the gateway's to say, once, with the rest not recorded */
  private unsaid = false;
  /** the last write failed on another process's lock */
  private lastBusy = false;
  private readonly startedAt = new Date().toISOString();
  private readonly files: StoreFiles;

  constructor(
    private readonly db: Store,
    readonly gatewayId: string,
    private readonly serverLabel: string,
    private readonly log: Pick<Logger, "warn" | "info"> & Partial<Pick<Logger, "debug">>,
  ) {
    this.files = StoreFiles.of(db);
    this.write();
  }

  update(fields: RowFields): void {
    this.keep(fields);
    this.write();
  }

  private keep(fields: RowFields): void {
    if (fields.state !== undefined) this.pending.state = fields.state;
    if (fields.epoch !== undefined) this.pending.epoch = fields.epoch;
    if (fields.record !== undefined) this.pending.record = fields.record;
  }

  statusLine(line: string): void {
    this.storeLine({ at: new Date().toISOString(), line: redactText(scrubbedLine(line)) });
  }

  /**
   * Supervision paused (a crash loop under the artifact watcher): the state is `paused` until
   * the next epoch comes up (`update` with another state), and `why` is its reason.
   */
  paused(why: string): void {
    this.keepLine({ at: new Date().toISOString(), line: redactText(scrubbedLine(why)), paused: true });
    this.update({ state: "paused" });
  }

  private storeLine(entry: StoredLine): void {
    this.keepLine(entry);
    this.write();
  }

  private keepLine(entry: StoredLine): void {
    this.lines.push(entry);
    if (this.lines.length > MAX_STATUS_LINES) this.lines.shift();
    this.linesChanged = true;
  }

  /** An epoch's row, and with it (one transaction, one fsync) the gateway row's `fields`. */
  recordEpoch(record: ExecutionRecord, reason: string, fields: RowFields = {}): void {
    this.epochs.set(record.epoch, { record, reason });
    this.keep(fields);
    this.write();
  }

  /**
   * The gateway's end: the row says `ended`. False when another process's lock on the store kept
   * it from being written: `status` then shows the gateway gone once its process is.
   */
  end(): boolean {
    this.pending.state = "ended";
    this.pending.endedAt = new Date().toISOString();
    return this.write() || !this.lastBusy;
  }

  /** The gateway is ending: a failed write is no longer said here (the gateway says what was left). */
  ending(): void {
    this.unsaid = true;
  }

  /**
   * Writes everything pending in one transaction; on failure it all stays pending. Nothing once
   * one of the store's files was found deleted or replaced (checked first, one stat of each:
   * an idle gateway's only writes are these, and with the -shm gone they would land on the frames
   * of a process that opened the store since; src/store/storeFiles.ts).
   */
  private write(): boolean {
    if (!this.db.open || this.files.check()) return false;
    try {
      // Only an epoch's row waits for the disk. The gateway's own row (its start, state,
      // heartbeat, status lines) is status for `portcullis status`: committed without an fsync
      // (synchronous=NORMAL for the one transaction, as the audit log's relaxed commits), it
      // survives this process being killed, and the next full commit's fsync (the audit log's)
      // covers it against a power loss. Measured (docs/performance-history.md, "Session
      // twenty-one"): 3 of the 9 fsyncs a warm start waited for before its first answer were this
      // row's.
      this.briefly(() => {
        if (this.epochs.size === 0) this.relaxed(() => this.db.transaction(() => this.writeAll())());
        else this.db.transaction(() => this.writeAll())();
      });
    } catch (e) {
      this.lastBusy = isBusy(e);
      this.failed(e);
      return false;
    }
    this.inserted = true;
    this.pending = {};
    this.linesChanged = false;
    this.epochs.clear();
    if (this.failing) {
      this.failing = false;
      this.log.info(`the store ${this.db.name} is writable again: this gateway's status is current`);
    }
    return true;
  }

  private syncRead: Statement | null = null;
  private brief: ((write: () => void) => void) | null = null;

  /**
   * Runs `write` waiting at most ROW_BUSY_MS for another process's lock on the store (10 ms while
   * the lock stays held, every session's row of `run --listen` alike: waitingOnce). What fails
   * stays pending and is written at the next heartbeat (every 5 s) or change, the epoch's row with
   * the rest: a lock held by another program (a database browser inside a transaction) must not
   * hold the event loop a whole busy timeout at every heartbeat, nor at the gateway's start
   * (signals, the server's answers and its stop waited behind it: a SIGTERM during a start under
   * such a lock took 40 s to end the gateway).
   */
  private briefly(write: () => void): void {
    this.brief ??= waitingOnce(this.db, ROW_BUSY_MS);
    this.brief(write);
  }

  /** Runs `commit` with the connection's synchronous setting at NORMAL, then puts it back. */
  private relaxed(commit: () => void): void {
    // The setting cannot change inside a transaction (one of another writer on this connection).
    this.syncRead ??= this.db.prepare("PRAGMA synchronous").pluck();
    const level = this.db.inTransaction ? 0 : Number(this.syncRead.get());
    if (!(level > 1)) {
      commit();
      return;
    }
    this.db.pragma("synchronous = NORMAL");
    try {
      commit();
    } finally {
      this.db.pragma(`synchronous = ${level}`);
    }
  }

  private writeAll(): void {
    const now = new Date().toISOString();
    if (!this.inserted)
      this.db
        .prepare(
          `INSERT INTO gateways (gateway_id, pid, pid_start, pid_ns, boot, server_label, started_at, heartbeat_at, state, schema_version)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'starting', ?)`,
        )
        .run(
          this.gatewayId,
          process.pid,
          processStartTime(process.pid),
          // where this pid means something: a reader in another PID namespace must not take it for
          // its own (never null: null is a row written before namespaces were recorded)
          recordedPlace().pidNs,
          recordedPlace().boot,
          this.serverLabel,
          this.startedAt,
          now,
          // the schema this gateway runs (store/schemaVersion.ts): read as it is, not from the
          // clock, whose steps back would have it misread
          KNOWN_SCHEMA_VERSION,
        );
    for (const { record, reason } of this.epochs.values()) this.writeEpoch(record, reason);
    const sets: string[] = ["heartbeat_at = ?"];
    const vals: unknown[] = [now];
    const p = this.pending;
    if (p.state !== undefined) {
      sets.push("state = ?");
      vals.push(p.state);
    }
    if (p.epoch !== undefined) {
      sets.push("epoch = ?");
      vals.push(p.epoch);
    }
    if (p.record !== undefined) {
      sets.push("record_json = ?");
      vals.push(p.record ? JSON.stringify(redactRecord(scrubbedStrings(p.record))) : null);
    }
    if (p.endedAt !== undefined) {
      sets.push("ended_at = ?");
      vals.push(p.endedAt);
    }
    if (this.linesChanged) {
      sets.push("status_json = ?");
      vals.push(JSON.stringify(this.lines));
    }
    this.db
      .prepare(`UPDATE gateways SET ${sets.join(", ")} WHERE gateway_id = ?`)
      .run(...vals, this.gatewayId);
  }

  private writeEpoch(record: ExecutionRecord, reason: string): void {
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
        // scrubbed of released values: a server may exec itself with one as an argument
        JSON.stringify(redactRecord(scrubbedStrings(record))),
        record.startedAt,
        reason,
      );
  }

  /** Said once until a write succeeds again: a heartbeat every 5 s must not flood stderr. */
  private failed(e: unknown): void {
    if (this.failing || (this.unsaid && isBusy(e))) {
      // With PORTCULLIS_DEBUG=1 only: a failure not said again, which a test holding the lock
      // waits for (test/store/held-lock.test.ts) instead of sleeping past a few heartbeats.
      this.log.debug?.(
        `this gateway's row is still not written (${isBusy(e) ? "busy" : "failed"}); not said again`,
      );
      return;
    }
    this.failing = true;
    const refused = writeRefused(e);
    const why = isBusy(e)
      ? "it is locked by another process (a database browser or an sqlite3 shell with an open transaction?)"
      : refused
        ? `it ${refused.problem.replace(/\.$/, "")}; to fix it: ${storeAdvice(refused)}`
        : `it cannot be written: ${(e as Error)?.message ?? String(e)}`;
    this.log.warn(
      `cannot update this gateway's row in the store ${this.db.name}: ${why}; the gateway serves on, 'portcullis status' may show it stale, and the write is tried again every 5 s`,
    );
  }
}

export function listGateways(db: Store, opts: { all?: boolean } = {}): GatewayRow[] {
  const rows = db
    .prepare(
      "SELECT g.*, e.reason AS epoch_reason FROM gateways g LEFT JOIN epochs e ON e.epoch = g.epoch ORDER BY g.started_at",
    )
    .all() as Record<string, unknown>[];
  const out: GatewayRow[] = [];
  for (const r of rows) {
    const pid = r.pid as number;
    const liveness = r.ended_at === null ? processLiveness(recorded(r)) : "gone";
    const running = liveness !== "gone";
    if (!running && !opts.all) continue;
    // rewritten in the store into something unreadable: no lines, no record, and said (`unreadable`)
    const lines = storedJson(r.status_json ?? "[]", "gateways", "status_json", STORED_LINES);
    const record = r.record_json ? storedJson(r.record_json, "gateways", "record_json", A_RECORD) : null;
    const stored = lines.ok ? lines.value : [];
    const unreadable = [lines, record].flatMap((c) => (c && !c.ok ? [c.why] : []));
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
      epochReason: (r.epoch_reason as string | null) ?? null,
      // Redacted again when read: rows written before records were redacted at write.
      record: record?.ok ? redactRecord(record.value as unknown as ExecutionRecord) : null,
      ...(unreadable.length > 0 ? { unreadable: unreadable.join("; ") } : {}),
      status: stored.filter((s) => !s.paused).map((s) => ({ at: s.at, line: redactText(s.line) })),
      endedAt: (r.ended_at as string | null) ?? null,
      running,
      schemaVersion: processSchemaVersion(db, r.schema_version, r.started_at as string),
      liveness,
      unseen:
        liveness !== "unknown"
          ? null
          : inAnotherNamespace(recorded(r))
            ? "another PID namespace"
            : "cannot tell",
    });
  }
  return out;
}

/**
 * When an epoch began and under which process, in words (`portcullis status`, the console). A
 * replaced epoch (a watcher's new worker, an execve) began when other code took over under a
 * process started before it: "started" would date that process by the epoch, and a watcher's pid
 * would read as its new worker's.
 */
export function epochBegan(
  reason: string | null,
  r: Pick<ExecutionRecord, "processId" | "startedAt">,
): string {
  if (reason === "replaced")
    return `since ${r.startedAt}, when the code under server pid ${r.processId} was replaced; that process was started before`;
  return `server pid ${r.processId}, started ${r.startedAt}`;
}

/** The gateway process a gateways row recorded (namespace and boot: null before migration 18). */
export function recorded(r: Record<string, unknown>): RecordedProcess {
  return {
    pid: r.pid as number,
    start: (r.pid_start as string | null) ?? null,
    pidNs: (r.pid_ns as string | null) ?? null,
    boot: (r.boot as string | null) ?? null,
  };
}

/** The reason of the newest pause (null when it fell out of the kept lines). */
function pauseReason(stored: StoredLine[]): string | null {
  for (let i = stored.length - 1; i >= 0; i--) if (stored[i]!.paused) return redactText(stored[i]!.line);
  return null;
}
