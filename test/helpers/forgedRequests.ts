// Rows any process of the user can write into the store: copies of a real gateway's request,
// written with SQLite, for the tests of what the CLI and the console make of them; and what such
// a forger starts from: a real gateway holding requests, a live process that is no portcullis.
import { spawn } from "node:child_process";
import { join } from "node:path";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import Database from "better-sqlite3";
import { expect } from "vitest";
import { processStartTime } from "../../src/identity/proc.js";
import { nextRequest, type Pending } from "./approvals.js";
import { makeCatalog } from "./catalog.js";
import { catalogGateway } from "./catalogGateway.js";
import type { Session } from "./gateway.js";

type Cleanup = (() => Promise<void> | void)[];

/** A process's pid and start time, as a `runs` row names its gateway. */
export interface ProcessId {
  pid: number;
  start: string;
}

/**
 * Copies `request` under `id` (in `run` if given, else its own), dated a minute before it, a call
 * said to wait on it, its review naming the copy (and its run) as a gateway would have written it:
 * what makes `--next` take it first if nothing tells it from a gateway's.
 */
function copyRequest(
  db: Database.Database,
  request: string,
  id: string,
  run?: string,
  shiftMs = -60_000,
): void {
  const row = db.prepare("SELECT created_at FROM approval_requests WHERE request = ?").get(request) as {
    created_at: string;
  };
  const earlier = new Date(Date.parse(row.created_at) + shiftMs).toISOString();
  db.exec("DROP TABLE IF EXISTS temp.q");
  db.exec("CREATE TEMP TABLE q AS SELECT * FROM approval_requests WHERE 0");
  db.prepare("INSERT INTO q SELECT * FROM approval_requests WHERE request = ?").run(request);
  db.prepare(
    "UPDATE q SET request = ?, created_at = ?, call_wait = 'waiting', call_wait_at = ?, review_json = json_set(review_json, '$.request', ?, '$.createdAt', ?)",
  ).run(id, earlier, earlier, id, earlier);
  if (run !== undefined) {
    db.prepare("UPDATE q SET agent_run = ?, review_json = json_set(review_json, '$.agentRun.run', ?)").run(
      run,
      run,
    );
  }
  db.exec("INSERT INTO approval_requests SELECT * FROM q");
}

/**
 * A copy of `request` under `id`, in the same run (its gateway the real, running one, which does
 * not vouch for it: src/approval/vouch.ts), dated a minute before it, a call said to wait on it.
 */
export function forgeInSameRun(stateDir: string, request: string, id: string): void {
  const db = new Database(join(stateDir, "portcullis.db"));
  try {
    copyRequest(db, request, id);
  } finally {
    db.close();
  }
}

/** Copies of `request` under each of `ids`, in the same run, as `forgeInSameRun` writes one (one transaction). */
export function forgeManyInSameRun(stateDir: string, request: string, ids: readonly string[]): void {
  const db = new Database(join(stateDir, "portcullis.db"));
  try {
    db.transaction(() => {
      for (const id of ids) copyRequest(db, request, id);
    })();
  } finally {
    db.close();
  }
}

/**
 * A copy of `request` under `id`, in the same run, dated a minute after it: the newest request of
 * its call, which a retry of the call would find first.
 */
export function forgeNewerInSameRun(stateDir: string, request: string, id: string): void {
  const db = new Database(join(stateDir, "portcullis.db"));
  try {
    copyRequest(db, request, id, undefined, 60_000);
  } finally {
    db.close();
  }
}

/**
 * A copy of `request` under `id` in a copy of its run named `run`, whose gateway is the live
 * process `gateway` that is no portcullis (`decoyProcess`); dated a minute before it, a call said
 * to wait on it.
 */
export function forgeInOtherRun(
  stateDir: string,
  request: string,
  id: string,
  run: string,
  gateway: ProcessId,
): void {
  const db = new Database(join(stateDir, "portcullis.db"));
  try {
    const row = db.prepare("SELECT agent_run FROM approval_requests WHERE request = ?").get(request) as {
      agent_run: string;
    };
    db.exec("DROP TABLE IF EXISTS temp.r");
    db.exec("CREATE TEMP TABLE r AS SELECT * FROM runs WHERE 0");
    db.prepare("INSERT INTO r SELECT * FROM runs WHERE run = ?").run(row.agent_run);
    db.prepare("UPDATE r SET run = ?, gateway_pid = ?, gateway_pid_start = ?").run(
      run,
      gateway.pid,
      gateway.start,
    );
    db.exec("INSERT INTO runs SELECT * FROM r");
    copyRequest(db, request, id, run);
  } finally {
    db.close();
  }
}

/** A live process of this user that is no portcullis (a `sleep`, killed by `cleanup`): its pid and start time. */
export function decoyProcess(cleanup: Cleanup): ProcessId {
  const child = spawn("sleep", ["120"], { stdio: "ignore" });
  cleanup.push(() => void child.kill("SIGKILL"));
  const start = processStartTime(child.pid!);
  expect(start).not.toBeNull();
  return { pid: child.pid!, start: start! };
}

/**
 * A real gateway before the catalog fixture whose one tool, `deploy` on "shell", waits on a human
 * at each call (per-call approval, a minute to decide); `ask(note)` calls it with `note` (another
 * note, another request) and resolves to the request it made.
 */
export async function deployGateway(
  cleanup: Cleanup,
): Promise<{ gw: Session<Client>; stateDir: string; ask(note: string): Promise<Pending> }> {
  const { gw, stateDir } = await catalogGateway(
    makeCatalog([{ name: "deploy", inputSchema: { type: "object" } }]),
    ["--label", "shell", "--approval", "per-call", "--approval-timeout", "60000"],
    cleanup,
  );
  const seen = new Set<string>();
  const ask = (note: string) => {
    gw.client
      .callTool({ name: "deploy", arguments: { note } }, undefined, { timeout: 90_000 })
      .catch(() => {});
    return nextRequest(stateDir, seen);
  };
  return { gw, stateDir, ask };
}
