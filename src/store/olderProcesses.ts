/**
 * What an upgrade leaves running. When a command of this portcullis brings a store up from an
 * older schema, the gateways, the console and the vault holder that opened it before were started
 * by the older portcullis (opening brings a store up to what the opener knows, so anything already
 * running on an older schema is older), and they go on with the code they loaded: additive migrations keep
 * their statements working, but they do not do what this version does (a gateway too old to
 * verify this version's signed decisions does not honour them: approve and deny refuse those,
 * src/approval/olderGateway.ts). The user is told which processes, and to restart them.
 */
import { dirname } from "node:path";
import type Database from "better-sqlite3";
import { readConsoleAddress } from "../console/address.js";
import { notPortcullisPhrase, processLiveness, runsPortcullisCommand } from "../identity/proc.js";
import { liveHolderPids } from "../vault/liveHolders.js";
import { KNOWN_SCHEMA_VERSION, portcullisVersion } from "./schemaVersion.js";

export interface OlderProcess {
  /** `gateway "LABEL"`, `the console` or `the vault holder` */
  what: string;
  pid: number;
  /**
   * false when the process the record names is not, by its command line, the portcullis process
   * it claims (a row or file any process of this user may have written): named, never to be ended
   */
  ours: boolean;
}

/**
 * The gateways (provably running, in this PID namespace), the console and the vault holder (the
 * process that keeps the vault unlocked, found by the pid file `unlock` writes for it:
 * vault/holderProcs.ts) running on `db` now.
 */
export function runningProcesses(db: Database.Database, stateDir: string): OlderProcess[] {
  const rows = db
    .prepare("SELECT * FROM gateways WHERE ended_at IS NULL ORDER BY started_at")
    .all() as Record<string, unknown>[];
  const out: OlderProcess[] = [];
  for (const r of rows) {
    const liveness = processLiveness({
      pid: r.pid as number,
      start: (r.pid_start as string | null) ?? null,
      pidNs: (r.pid_ns as string | null) ?? null,
      boot: (r.boot as string | null) ?? null,
    });
    if (liveness === "alive")
      out.push({
        what: `gateway ${JSON.stringify(r.server_label)}`,
        pid: r.pid as number,
        ours: runsPortcullisCommand(r.pid as number, "run"),
      });
  }
  const console = readConsoleAddress(stateDir);
  if (console)
    out.push({ what: "the console", pid: console.pid, ours: runsPortcullisCommand(console.pid, "console") });
  // liveHolderPids checks the holder's own command line already
  for (const pid of liveHolderPids(stateDir)) out.push({ what: "the vault holder", pid, ours: true });
  return out;
}

/**
 * Says on stderr, once, which processes of the older portcullis still run on the store this one
 * just brought up from schema version `from`, and what to do. Nothing when none runs. Never
 * fails the command: the sentence is advice, the store is already up to date.
 */
export function warnOlderProcesses(db: Database.Database, path: string, from: number): void {
  let older: OlderProcess[];
  try {
    older = runningProcesses(db, dirname(path));
  } catch {
    return;
  }
  if (older.length === 0) return;
  const listed = older.map((p) => `${p.what} (pid ${p.pid})`).join(", ");
  const pids = older
    .filter((p) => p.ours)
    .map((p) => p.pid)
    .join(" ");
  const notOurs = older
    .filter((p) => !p.ours)
    .map(
      (p) =>
        `For ${p.what}: ${notPortcullisPhrase(p.pid, p.what === "the console" ? "console" : "gateway")}. `,
    )
    .join("");
  // how to restart each kind, said for the kinds that run
  const again = [
    older.some((p) => p.what === "the console") ? "run 'portcullis console' again for the console" : "",
    older.some((p) => p.what === "the vault holder")
      ? "run 'portcullis lock' then 'portcullis unlock' for the vault holder (it keeps the vault unlocked)"
      : "",
  ].filter(Boolean);
  process.stderr.write(
    `portcullis: warning: this portcullis (${portcullisVersion()}) brought the store ${path} from schema version ${from} to ${KNOWN_SCHEMA_VERSION}, ` +
      `while processes the older portcullis started still run on it: ${listed}. They go on as that version did until they are restarted ` +
      `(approve says when a gateway is too old to honour this version's approvals); restart each to run this one: ` +
      `restart the MCP client (or its server) that started each gateway${pids ? `, or end them (kill ${pids})` : ""}` +
      `${again.map((a) => `, and ${a}`).join("")}. ${notOurs}Older portcullis commands refuse this store from now on.\n`,
  );
}
