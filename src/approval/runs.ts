import { ulid } from "ulid";
import type { DigestCache } from "../identity/cache.js";
import { type Liveness, processLiveness, recordedPlace } from "../identity/proc.js";
import type { Store } from "../store/db.js";
import { canonicalJson, sha256Tag } from "../util/canonical.js";
import {
  type ChainEntry,
  ExecutableDigests,
  type HiddenValue,
  processChain,
  processStartTime,
  unknownClientChain,
} from "./chain.js";
import { grantsWritten } from "./grants.js";
import { storedEndText } from "./storedRunEnd.js";

export type { ChainEntry } from "./chain.js";

/**
 * An agent run: one client connection to the gateway. Its identity is the process
 * chain of whatever launched the gateway (pid, start time, executable path and
 * digest, on macOS the code-signing authority). Grants of a run end with the run.
 */
export interface Run {
  run: string;
  serverLabel: string;
  chain: ChainEntry[];
  /** "sha256:<hex>" over the chain's identity fields (not the display-only command lines) */
  chainDigest: string;
  startedAt: string;
  /**
   * Set once this process ended the run's row itself (endOwnRunRows, endRun): an end it wrote is no
   * end by another process, whatever reason the row holds (its own end writes none). Kept on the
   * run this process serves, the one object its start, its authorizer and its end share, so that
   * an end of another run by id (endRunRows: a gone gateway's, src/approval/abandoned.ts) never
   * counts, and nothing outlives the run (an HTTP front serves many).
   */
  endedHere?: boolean;
  /**
   * Set once this process wrote a `run_ended` of the run (its condition held, in the transaction
   * that writes it): what it knows of its run's record without reading the sealed chain. A row
   * ended by another process with a reason a recording writer gives may be an edit that wrote
   * none (`UPDATE runs SET ended_reason = 'gateway_gone'`), so the gateway writes its own unless
   * this is set, at the next call (src/approval/runEndWatch.ts) or at its end (src/cli/agentRun.ts,
   * recordEndedElsewhere): the run's end is in the chain whenever its gateway ends cleanly.
   */
  endRecordedHere?: boolean;
}

/**
 * A run as another process reads it from the store: what decides whether its requests can still
 * be decided (ended, its gateway alive). Not its process chain: `runs.chain_json` is a record of
 * the run, and what the human approves is the review the gateway wrote with the request, which
 * carries the chain as the gateway holds it in memory (review.ts, buildReview; askHuman.ts).
 * The gateway honours only a grant of a review it wrote (honoured.ts), and covers calls of its
 * run by id: no reader decides anything on the stored chain, so a chain rewritten in the store
 * (unreadable, or another chain) changes nothing a human approves or a gateway honours.
 */
export interface RunRow extends Omit<Run, "chain"> {
  gatewayPid: number;
  /** the gateway process's start time as the run recorded it (null: not read then) */
  gatewayPidStart: string | null;
  endedAt: string | null;
  /**
   * The gateway that serves the run may still be waiting on it: the run has not ended and its
   * gateway is not provably gone (see `gateway`). A gateway this process cannot judge (another
   * PID namespace, a start time never read) counts as waiting: deciding its request is harmless
   * if it is gone, and refusing would lock it out of approvals if it is not.
   */
  gatewayAlive: boolean;
  /** what this process can tell of the run's gateway process (src/identity/procLiveness.ts) */
  gateway: Liveness;
}

/** The columns of a runs row that record its gateway process. */
export interface GatewayColumns {
  gateway_pid: number;
  gateway_pid_start: string | null;
  gateway_pid_ns: string | null;
  gateway_boot: string | null;
}

/** Whether the gateway a runs row records still runs, as far as this process can tell. */
export function runGatewayLiveness(r: GatewayColumns): Liveness {
  return processLiveness({
    pid: r.gateway_pid,
    start: r.gateway_pid_start,
    pidNs: r.gateway_pid_ns,
    boot: r.gateway_boot,
  });
}

/** Digest over what identifies the chain; the command lines are for people only. */
export function chainDigest(chain: readonly ChainEntry[]): string {
  const identity = chain.map((e) => ({
    pid: e.pid,
    startTime: e.startTime,
    executable: e.executable,
    sha256: e.sha256,
    signingAuthority: e.signingAuthority ?? null,
  }));
  return sha256Tag(canonicalJson(identity));
}

/**
 * Starts a run for the client connection of this gateway process: reads the process
 * chain upward from the gateway's parent (`fromPid`, default process.ppid) and
 * persists it.
 */
export function startRun(
  db: Store,
  gatewayLabel: string,
  opts: { fromPid?: number; chain?: ChainEntry[]; digestCache?: DigestCache } = {},
): Run {
  const run = newRun(db, gatewayLabel, opts);
  insertRun(db, run);
  return run;
}

/** startRun's run, read but not stored yet (insertRun stores it: the gateway, as run_started's condition). */
export function newRun(
  db: Store,
  gatewayLabel: string,
  opts: {
    fromPid?: number;
    /**
     * the start time `fromPid` had when the caller identified it (HTTP: at the connection's lookup,
     * maybe long before the run begins): a chain whose first process has another start time is
     * another process that reused the pid (or none), and the run records its client as unknown
     */
    fromStart?: string | null;
    chain?: ChainEntry[];
    digestCache?: DigestCache;
    /** values the caller knows to be secret, taken out of the recorded command lines */
    hide?: readonly HiddenValue[];
  } = {},
): Run {
  // `chain`: a caller that could not find the client's process (HTTP) says so in the chain itself
  let chain =
    opts.chain ??
    processChain(
      opts.fromPid ?? process.ppid,
      new ExecutableDigests(db, opts.digestCache ?? null),
      opts.hide,
    );
  if (
    opts.chain === undefined &&
    opts.fromStart !== undefined &&
    opts.fromStart !== null &&
    chain[0]?.startTime !== opts.fromStart
  )
    chain = unknownClientChain(
      `the connecting process (pid ${opts.fromPid ?? process.ppid}) ended before its run began (its pid now names ${chain[0]?.startTime ? "another process" : "no process"})`,
    );
  const run: Run = {
    run: ulid(),
    serverLabel: gatewayLabel,
    chain,
    chainDigest: chainDigest(chain),
    startedAt: new Date().toISOString(),
  };
  return run;
}

/**
 * Stores a run made by newRun, as started by this process; `startSeq`, the seq of its
 * `run_started` when the row is written in the transaction that appends it (src/cli/agentRun.ts).
 */
export function insertRun(db: Store, run: Run, startSeq: number | null = null): void {
  // Where this pid and start time mean something: a reader elsewhere (another PID namespace)
  // must not take them for its own processes (src/identity/procLiveness.ts).
  const place = recordedPlace();
  db.prepare(
    `INSERT INTO runs (run, server_label, gateway_pid, gateway_pid_start, gateway_pid_ns, gateway_boot,
                       chain_json, chain_digest, started_at, start_seq)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  ).run(
    run.run,
    run.serverLabel,
    process.pid,
    processStartTime(process.pid),
    place.pidNs,
    place.boot,
    JSON.stringify(run.chain),
    run.chainDigest,
    run.startedAt,
    startSeq,
  );
}

/** Whether run `run` is in the store. */
export function runStored(db: Store, run: string): boolean {
  return db.prepare("SELECT 1 FROM runs WHERE run = ?").get(run) !== undefined;
}

/**
 * Ends a run this process serves: its session grants (expiresWhen "agent-run-ends") end with it,
 * and its pending approval requests are cancelled. Idempotent.
 */
export function endRun(db: Store, run: Run): void {
  const now = new Date().toISOString();
  db.transaction(() => endOwnRunRows(db, run, now)).immediate();
}

/** endRunRows of the run this process serves, marked as ended here when it ends it (Run.endedHere). */
export function endOwnRunRows(db: Store, run: Run, now: string): boolean {
  const ended = endRunRows(db, run.run, now);
  if (ended) run.endedHere = true;
  return ended;
}

/**
 * endRun's writes, inside the caller's transaction (the audit log's, when the end is recorded
 * on condition), for run `run` whichever process serves it (endOwnRunRows marks the one this
 * process serves). False, and nothing written, when the run had ended already. `reason`:
 * "gateway_gone" when another process ends the run of a gateway it judged gone.
 */
export function endRunRows(db: Store, run: string, now: string, reason: string | null = null): boolean {
  const ended = db
    .prepare("UPDATE runs SET ended_at = ?, ended_reason = ? WHERE run = ? AND ended_at IS NULL")
    .run(now, reason, run);
  if (ended.changes !== 1) return false;
  endWhatEndsWithRun(db, run, now);
  return true;
}

/** The run's session grants end and its pending requests are cancelled, as the run ends. */
function endWhatEndsWithRun(db: Store, run: string, now: string): void {
  db.prepare(
    `UPDATE grants SET ended_at = ?, ended_reason = 'agent run ended'
     WHERE agent_run = ? AND expires_when = 'agent-run-ends' AND ended_at IS NULL`,
  ).run(now, run);
  grantsWritten(db);
  db.prepare(
    `UPDATE approval_requests SET state = 'cancelled', decided_at = ?, reason = 'agent run ended'
     WHERE agent_run = ? AND state = 'pending'`,
  ).run(now, run);
}

/**
 * `run_ended`'s reason when the run's own gateway records an end that another process wrote in the
 * run's row alone (`UPDATE runs SET ended_at = …`), with no record of it: docs/audit-format.md.
 */
export const ENDED_IN_STORE = "ended_in_store";

/**
 * The reasons a run's row is ended with by a writer that records the end in the same transaction
 * (endRunsOfGoneGateways: gateway_gone; this gateway: ended_in_store). Any other end of the row,
 * made by another process, has no `run_ended` in the chain as far as a gateway can tell (it cannot
 * read the sealed events): an edit of the row. An edit that writes one of these reasons too is not
 * told apart (docs/security.md).
 */
const RECORDED_ENDS = ["gateway_gone", ENDED_IN_STORE] as const;

/** A run's row as ended by another process than this one. */
export interface EndedElsewhere {
  endedAt: string;
  reason: string | null;
  /** whether a `run_ended` was written with that end (its reason is one a recording writer gives) */
  recorded: boolean;
}

const endStatements = new WeakMap<Store, ReturnType<Store["prepare"]>>();

/**
 * Whether another process ended run `run`, which this process serves, in the store (null: open, or
 * ended by this process: Run.endedHere). One read of the row by its key, with a statement prepared
 * once per connection: a gateway reads it with every call's intent record, under the write lock it
 * already holds.
 */
export function runEndedElsewhere(db: Store, run: Run): EndedElsewhere | null {
  if (run.endedHere) return null;
  let read = endStatements.get(db);
  if (!read) {
    read = db.prepare("SELECT ended_at, ended_reason FROM runs WHERE run = ?");
    endStatements.set(db, read);
  }
  const row = read.get(run.run) as { ended_at: unknown; ended_reason: unknown } | undefined;
  // not NULL is ended, whatever was written (storedEndText): as `audit sessions` reads the row
  const endedAt = storedEndText(row?.ended_at);
  if (endedAt === null) return null;
  const reason = typeof row?.ended_reason === "string" ? row.ended_reason : null;
  return {
    endedAt,
    reason,
    recorded: (RECORDED_ENDS as readonly (string | null)[]).includes(reason),
  };
}

/**
 * The condition of the `run_ended` (reason ENDED_IN_STORE) a gateway writes for its own run, whose
 * row another process ended without a record: the row is marked recorded (its reason), and what
 * ends with a run ends now (its session grants, its pending requests), as at any run's end. False,
 * and nothing written, when the row is open, was ended by this process, this process recorded the
 * run's end already (Run.endRecordedHere), or its end is recorded already as far as the row says.
 *
 * `whateverTheRowSays` (the gateway's own end): also when the row's reason is one a recording
 * writer gives (RECORDED_ENDS), which an edit may have written with no record: this process wrote
 * no `run_ended` of its run, and the chain must hold one. The row's reason is left as it is (it
 * is what that other process wrote). A real record by that other process (a gateway that took
 * this one for gone) then makes two `run_ended` of the run: docs/audit-format.md.
 */
export function recordEndedInStore(
  db: Store,
  run: Run,
  now: string,
  o: { whateverTheRowSays?: boolean } = {},
): boolean {
  if (run.endedHere || run.endRecordedHere) return false;
  const marked = db
    .prepare(
      `UPDATE runs SET ended_reason = ? WHERE run = ? AND ended_at IS NOT NULL
         AND (ended_reason IS NULL OR ended_reason NOT IN (${RECORDED_ENDS.map(() => "?").join(", ")}))`,
    )
    .run(ENDED_IN_STORE, run.run, ...RECORDED_ENDS);
  if (marked.changes !== 1 && !(o.whateverTheRowSays && rowEnded(db, run.run))) return false;
  endWhatEndsWithRun(db, run.run, now);
  run.endRecordedHere = true;
  return true;
}

/** Whether run `run`'s row is ended (not NULL, whatever was written: storedEndText). */
function rowEnded(db: Store, run: string): boolean {
  const row = db.prepare("SELECT ended_at FROM runs WHERE run = ?").get(run) as
    | { ended_at: unknown }
    | undefined;
  return storedEndText(row?.ended_at) !== null;
}

interface RunDbRow extends GatewayColumns {
  run: string;
  server_label: string;
  chain_digest: string;
  started_at: string;
  ended_at: string | null;
}

function toRunRow(r: RunDbRow): RunRow {
  const gateway = runGatewayLiveness(r);
  return {
    run: r.run,
    serverLabel: r.server_label,
    chainDigest: r.chain_digest,
    startedAt: r.started_at,
    gatewayPid: r.gateway_pid,
    gatewayPidStart: r.gateway_pid_start,
    endedAt: r.ended_at,
    gatewayAlive: r.ended_at === null && gateway !== "gone",
    gateway,
  };
}

export function getRun(db: Store, run: string): RunRow | null {
  const r = db.prepare("SELECT * FROM runs WHERE run = ?").get(run) as RunDbRow | undefined;
  return r ? toRunRow(r) : null;
}
