// Rows any process of the user can write into the store: copies of a real gateway's request,
// written with SQLite, for the tests of what the CLI and the console make of them.
import { join } from "node:path";
import Database from "better-sqlite3";

/**
 * A copy of `request` under `id`, in the same run (its gateway the real, running one, which does
 * not vouch for it: src/approval/vouch.ts), dated a minute before it, a call said to wait on it.
 */
export function forgeInSameRun(stateDir: string, request: string, id: string): void {
  const db = new Database(join(stateDir, "portcullis.db"));
  try {
    const row = db.prepare("SELECT created_at FROM approval_requests WHERE request = ?").get(request) as {
      created_at: string;
    };
    const earlier = new Date(Date.parse(row.created_at) - 60_000).toISOString();
    db.exec("DROP TABLE IF EXISTS temp.q");
    db.exec("CREATE TEMP TABLE q AS SELECT * FROM approval_requests WHERE 0");
    db.prepare("INSERT INTO q SELECT * FROM approval_requests WHERE request = ?").run(request);
    db.prepare(
      "UPDATE q SET request = ?, created_at = ?, call_wait = 'waiting', call_wait_at = ?, review_json = json_set(review_json, '$.request', ?, '$.createdAt', ?)",
    ).run(id, earlier, earlier, id, earlier);
    db.exec("INSERT INTO approval_requests SELECT * FROM q");
  } finally {
    db.close();
  }
}

/**
 * A copy of `request` under `id` in a copy of its run named `run`, whose gateway is the live
 * process `pid` (started at `start`) that is no portcullis gateway.
 */
export function forgeInOtherRun(
  stateDir: string,
  request: string,
  id: string,
  run: string,
  pid: number,
  start: string,
): void {
  const db = new Database(join(stateDir, "portcullis.db"));
  try {
    const row = db.prepare("SELECT agent_run FROM approval_requests WHERE request = ?").get(request) as {
      agent_run: string;
    };
    db.exec("DROP TABLE IF EXISTS temp.r");
    db.exec("CREATE TEMP TABLE r AS SELECT * FROM runs WHERE 0");
    db.prepare("INSERT INTO r SELECT * FROM runs WHERE run = ?").run(row.agent_run);
    db.prepare("UPDATE r SET run = ?, gateway_pid = ?, gateway_pid_start = ?").run(run, pid, start);
    db.exec("INSERT INTO runs SELECT * FROM r");
    db.exec("DROP TABLE IF EXISTS temp.q");
    db.exec("CREATE TEMP TABLE q AS SELECT * FROM approval_requests WHERE 0");
    db.prepare("INSERT INTO q SELECT * FROM approval_requests WHERE request = ?").run(request);
    db.prepare(
      "UPDATE q SET request = ?, agent_run = ?, review_json = json_set(review_json, '$.request', ?, '$.agentRun.run', ?)",
    ).run(id, run, id, run);
    db.exec("INSERT INTO approval_requests SELECT * FROM q");
  } finally {
    db.close();
  }
}
