import { ulid } from "ulid";
import type { DigestCache } from "../identity/cache.js";
import type { Store } from "../store/db.js";
import { canonicalJson, sha256Tag } from "../util/canonical.js";
import { type ChainEntry, ExecutableDigests, processChain, processStartTime } from "./chain.js";
import { grantsWritten } from "./grants.js";

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
}

export interface RunRow extends Run {
  gatewayPid: number;
  endedAt: string | null;
  /** the gateway that serves the run is still running (pid and start time match) */
  gatewayAlive: boolean;
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
  // `chain`: a caller that could not find the client's process (HTTP) says so in the chain itself
  const chain =
    opts.chain ??
    processChain(opts.fromPid ?? process.ppid, new ExecutableDigests(db, opts.digestCache ?? null));
  const run: Run = {
    run: ulid(),
    serverLabel: gatewayLabel,
    chain,
    chainDigest: chainDigest(chain),
    startedAt: new Date().toISOString(),
  };
  db.prepare(
    `INSERT INTO runs (run, server_label, gateway_pid, gateway_pid_start, chain_json, chain_digest, started_at)
     VALUES (?, ?, ?, ?, ?, ?, ?)`,
  ).run(
    run.run,
    gatewayLabel,
    process.pid,
    processStartTime(process.pid),
    JSON.stringify(chain),
    run.chainDigest,
    run.startedAt,
  );
  return run;
}

/**
 * Ends a run: its session grants (expiresWhen "agent-run-ends") end with it, and
 * its pending approval requests are cancelled. Idempotent.
 */
export function endRun(db: Store, run: Pick<Run, "run">): void {
  const now = new Date().toISOString();
  db.transaction(() => endRunRows(db, run.run, now)).immediate();
}

/**
 * endRun's writes, inside the caller's transaction (the audit log's, when the end is recorded
 * on condition). False, and nothing written, when the run had ended already.
 */
export function endRunRows(db: Store, run: string, now: string): boolean {
  if (
    db.prepare("UPDATE runs SET ended_at = ? WHERE run = ? AND ended_at IS NULL").run(now, run).changes !== 1
  )
    return false;
  db.prepare(
    `UPDATE grants SET ended_at = ?, ended_reason = 'agent run ended'
     WHERE agent_run = ? AND expires_when = 'agent-run-ends' AND ended_at IS NULL`,
  ).run(now, run);
  grantsWritten(db);
  db.prepare(
    `UPDATE approval_requests SET state = 'cancelled', decided_at = ?, reason = 'agent run ended'
     WHERE agent_run = ? AND state = 'pending'`,
  ).run(now, run);
  return true;
}

interface RunDbRow {
  run: string;
  server_label: string;
  gateway_pid: number;
  gateway_pid_start: string | null;
  chain_json: string;
  chain_digest: string;
  started_at: string;
  ended_at: string | null;
}

function toRunRow(r: RunDbRow): RunRow {
  return {
    run: r.run,
    serverLabel: r.server_label,
    chain: JSON.parse(r.chain_json) as ChainEntry[],
    chainDigest: r.chain_digest,
    startedAt: r.started_at,
    gatewayPid: r.gateway_pid,
    endedAt: r.ended_at,
    gatewayAlive:
      r.ended_at === null &&
      r.gateway_pid_start !== null &&
      processStartTime(r.gateway_pid) === r.gateway_pid_start,
  };
}

export function getRun(db: Store, run: string): RunRow | null {
  const r = db.prepare("SELECT * FROM runs WHERE run = ?").get(run) as RunDbRow | undefined;
  return r ? toRunRow(r) : null;
}
