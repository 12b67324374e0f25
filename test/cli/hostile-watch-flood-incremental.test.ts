// `approvals --watch` over 3,000 pending rows another process of the user wrote into the store
// (copies of a real gateway's request under other IDs, inserted with better-sqlite3). Each change
// the watch saw read every pending row whole again (its review parsed, its gateway judged): a
// real request's line came seconds late, at every change. It now reads whole only the rows it has
// not told yet and the ones that closed (src/cli/watchedRows.ts), which it says with
// PORTCULLIS_DEBUG=1 ("read N rows whole; M pending"): what these tests count, not a time. What it
// tells must not change: a new request, a call that stopped waiting, a decided, cancelled, deleted
// and expired row are each told as before; a told row rewritten in the store is not told again.

import { afterEach, describe, expect, it } from "vitest";
import { MAX_FOLLOWED, MAX_FOLLOWED_ID_CHARS } from "../../src/cli/watchedRows.js";
import { openStore, openStoreToRead } from "../../src/store/db.js";
import { nextStoredRequest } from "../helpers/approvals.js";
import { watchApprovalsJson } from "../helpers/approvalsWatch.js";
import { waitFor } from "../helpers/files.js";
import { runCli, startInventory } from "../helpers/gateway.js";
import { makeProject } from "../helpers/project.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const FORGED = 3000;

const isForged = (id: string) => id.startsWith("forged") || id === "soon";

/** The pending requests of run `run` (the real gateway's), read in the test process by their IDs alone. */
function pendingOfRun(stateDir: string, run: string): string[] {
  const db = openStoreToRead(stateDir);
  try {
    return db
      .prepare("SELECT request FROM approval_requests WHERE agent_run = ? AND state = 'pending'")
      .pluck()
      .all(run) as string[];
  } finally {
    db.close();
  }
}

/** Runs `sql` on the store as another process of the user would (better-sqlite3, its own connection). */
function tamper(stateDir: string, write: (db: ReturnType<typeof openStore>) => void): void {
  const db = openStore(stateDir);
  try {
    write(db);
  } finally {
    db.close();
  }
}

/**
 * Copies of the stored row `of` under the IDs given, each with `changes` applied, in a run of their
 * own that copies the real run's gateway (so they read as waiting on a live gateway, which holds no
 * mark of them): rows naming the real run would count against its 50 pending requests, and it
 * could ask no more.
 */
function forge(stateDir: string, of: string, ids: string[], changes: Record<string, unknown>): void {
  tamper(stateDir, (db) => {
    const real = db.prepare("SELECT * FROM approval_requests WHERE request = ?").get(of) as Record<
      string,
      unknown
    >;
    const run = db.prepare("SELECT * FROM runs WHERE run = ?").get(real.agent_run) as Record<string, unknown>;
    const copy = (table: string, row: Record<string, unknown>) =>
      db.prepare(
        `INSERT OR IGNORE INTO ${table} (${Object.keys(row).join(", ")}) VALUES (${Object.keys(row)
          .map(() => "?")
          .join(", ")})`,
      );
    db.transaction(() => {
      copy("runs", run).run(...Object.values({ ...run, run: "forged-run" }));
      const insert = copy("approval_requests", real);
      for (const id of ids)
        insert.run(...Object.values({ ...real, request: id, agent_run: "forged-run", ...changes }));
    })();
  });
}

/** The debug lines of the watch's reads (PORTCULLIS_DEBUG=1): how many rows each read whole, of how many pending. */
function reads(err: string): { whole: number; pending: number }[] {
  return [...err.matchAll(/^portcullis approvals --watch: read (\d+) rows? whole; (\d+) pending$/gm)].map(
    (m) => ({ whole: Number(m[1]), pending: Number(m[2]) }),
  );
}

async function gatewayWithFlood() {
  const stateDir = newStateDir();
  const project = makeProject("A");
  cleanup.push(() => project.cleanup());
  const gw = await startInventory(project, ["--approval", "per-call", "--approval-timeout", "90000"], {
    stateDir,
    credentials: true,
  });
  cleanup.push(() => gw.close());
  await gw.client.listTools();
  const first = gw.client.callTool({ name: "adjust_inventory", arguments: { sku: "S-1", delta: 1 } });
  first.catch(() => {});
  const real = await nextStoredRequest(stateDir);
  const forgedIds = Array.from({ length: FORGED }, (_, i) => `forged${i}`);
  // dated long ago: the real requests are the newest, drawn by the text watch's 20
  forge(stateDir, real.request, forgedIds, { created_at: "2000-01-01T00:00:00.000Z" });
  return { stateDir, gw, first, real };
}

describe("approvals --watch over 3,000 forged pending rows", () => {
  it("--json: reads whole only what it has not told and what closed; still tells every change", async () => {
    const { stateDir, gw, first, real } = await gatewayWithFlood();
    const w = watchApprovalsJson(stateDir, cleanup, { env: { PORTCULLIS_DEBUG: "1" } });
    const lines = () =>
      w.lines<{ change: string; request: unknown; state?: string; callLeft?: { how: string } }>();
    const idOf = (l: { request: unknown }) =>
      typeof l.request === "string" ? l.request : (l.request as { request: string }).request;
    const told = (change: string, id: string) => lines().filter((l) => l.change === change && idOf(l) === id);
    await waitFor(
      () => lines().filter((l) => l.change === "pending").length === FORGED + 1,
      60_000,
      "every row told",
    );
    // the first read reads every row whole, once: each is told
    expect(await waitFor(() => reads(w.err())[0], 20_000, "the first read's debug line")).toEqual({
      whole: FORGED + 1,
      pending: FORGED + 1,
    });

    // a request a gateway makes: told, and the read that told it read it alone whole
    let mark = reads(w.err()).length;
    void gw.client
      .callTool({ name: "adjust_inventory", arguments: { sku: "S-2", delta: 2 } })
      .catch((e) => e);
    const made = await waitFor(
      () => lines().find((l) => l.change === "pending" && idOf(l) !== real.request && !isForged(idOf(l))),
      20_000,
      "the new request told",
    );
    expect(told("pending", idOf(made))).toHaveLength(1);
    const since = () => reads(w.err()).slice(mark);
    const wholeSince = () => since().reduce((n, r) => n + r.whole, 0);
    // (its debug line on stderr may come after the line on stdout)
    const telling = await waitFor(
      () => since().find((r) => r.pending === FORGED + 2),
      20_000,
      "the debug line of the read that told it",
    );
    expect(telling).toEqual({ whole: 1, pending: FORGED + 2 });
    // (the gateway's own writes, its heartbeat, move the stamp too: those reads read nothing whole)
    expect(wholeSince()).toBe(1);

    // a told row rewritten in the store (its review now names another tool, no gateway vouches
    // for it): read, not read whole, and not told again. Its call-wait columns are the marker
    // the watch tells a told row's change by: a call that stopped waiting on another is told.
    mark = reads(w.err()).length;
    tamper(stateDir, (db) => {
      db.prepare(
        "UPDATE approval_requests SET review_json = ?, tool = 'other' WHERE request = 'forged7'",
      ).run(JSON.stringify({ request: "forged7", rewritten: true }));
      db.prepare(
        "UPDATE approval_requests SET call_wait = 'cancelled', call_wait_at = ? WHERE request = 'forged8'",
      ).run(new Date().toISOString());
    });
    const call = await waitFor(
      () => told("call", "forged8")[0],
      20_000,
      "the call that stopped waiting told",
    );
    expect(call).toMatchObject({ callWaiting: false, callLeft: { how: "cancelled" } });
    expect(told("pending", "forged7")).toHaveLength(1);
    expect(told("call", "forged7")).toHaveLength(0);
    await waitFor(() => since().length > 0, 20_000, "the debug line of the read that told it");
    expect(wholeSince()).toBe(0);

    // closed: one whose time runs out (closed by the watcher's own sweep), one cancelled and one
    // deleted by another process, and the real request decided; each read reads whole only what
    // is new or closed
    mark = reads(w.err()).length;
    forge(stateDir, real.request, ["soon"], { expires_at: new Date(Date.now() + 5000).toISOString() });
    await waitFor(() => told("pending", "soon").length === 1, 20_000, "the short-lived row told");
    const approved = runCli(["approve", real.request, "--for", "call", "--state-dir", stateDir], {
      env: passphraseEnv(),
    });
    tamper(stateDir, (db) => {
      db.prepare(
        "UPDATE approval_requests SET state = 'cancelled', decided_at = ? WHERE request = 'forged1'",
      ).run(new Date().toISOString());
      db.prepare("DELETE FROM approval_requests WHERE request = 'forged2'").run();
    });
    const cancelled = await waitFor(() => told("closed", "forged1")[0], 20_000, "the cancelled row told");
    expect(cancelled.state).toBe("cancelled");
    const gone = await waitFor(() => told("closed", "forged2")[0], 20_000, "the deleted row told");
    expect(gone.state).toBe("gone");
    const ok = await approved;
    expect(ok.code, ok.stderr).toBe(0);
    expect((await first).isError).toBeFalsy();
    const decided = await waitFor(() => told("closed", real.request)[0], 20_000, "the decision told");
    expect(decided).toMatchObject({ state: "approved", decisionFor: "call" });
    const expired = await waitFor(() => told("closed", "soon")[0], 20_000, "the expired row told closed");
    expect(expired.state).toBe("expired");
    // read whole: the short-lived row as it appeared, and the four as they closed, once each
    await waitFor(() => wholeSince() >= 5, 20_000, "the debug lines of those reads");
    expect(wholeSince()).toBe(5);
    // each told once
    for (const id of ["forged1", "forged2", "soon", real.request]) expect(told("closed", id)).toHaveLength(1);
    w.child.kill("SIGINT");
    expect(await w.exited).toBe(0);
  }, 120_000);

  it("text: draws the real request and reads whole only the 20 it draws; a decision is drawn", async () => {
    const { stateDir, gw, real } = await gatewayWithFlood();
    const w = watchApprovalsJson(stateDir, cleanup, { json: false, env: { PORTCULLIS_DEBUG: "1" } });
    const frames = () => w.out().split(/^portcullis: /m);
    await waitFor(
      () => frames().some((f) => f.startsWith(`${FORGED + 1} pending`) && f.includes(real.request)),
      60_000,
      "the list drawn with the real request",
    );
    const mark = reads(w.err()).length;
    void gw.client
      .callTool({ name: "adjust_inventory", arguments: { sku: "S-2", delta: 2 } })
      .catch((e) => e);
    const made = await waitFor(
      () => pendingOfRun(stateDir, real.agentRun).find((id) => id !== real.request),
      20_000,
      "the new request stored",
    );
    await waitFor(
      () => frames().some((f) => f.startsWith(`${FORGED + 2} pending`) && f.includes(made)),
      20_000,
      "the new request drawn",
    );
    // the reads since: none read more than the page it draws (20), whatever is pending. The
    // debug line of a read comes on stderr, the frame on stdout: two pipes, read here in either
    // order (in a loaded CI run the frame came first), so the line is waited for
    await waitFor(() => reads(w.err()).slice(mark).length > 0, 20_000, "the read's debug line");
    expect(
      reads(w.err())
        .slice(mark)
        .every((r) => r.whole <= 20),
    ).toBe(true);
    const ok = await runCli(["deny", made, "--state-dir", stateDir], { env: passphraseEnv() });
    expect(ok.code, ok.stderr).toBe(0);
    await waitFor(
      () => frames().some((f) => f.startsWith(`${FORGED + 1} pending`) && !f.includes(made)),
      20_000,
      "the list drawn without the denied request",
    );
    w.child.kill("SIGINT");
    expect(await w.exited).toBe(0);
  }, 120_000);

  it("--json past 20,000 pending requests (or 1,000,000 characters of IDs) ends, exit 2, saying so; the text watch draws them", async () => {
    for (const { rows, idOf, why } of [
      {
        rows: MAX_FOLLOWED + 1,
        idOf: (i: number) => `flood${i}`,
        why: `more than ${MAX_FOLLOWED} requests are pending`,
      },
      // 501 IDs of 2,000 characters: past 1,000,000 characters with few rows
      {
        rows: 501,
        idOf: (i: number) => `${i}`.padEnd(2000, "x"),
        why: `the pending requests' IDs add up to more than ${MAX_FOLLOWED_ID_CHARS} characters`,
      },
    ]) {
      const stateDir = newStateDir();
      tamper(stateDir, (db) => {
        const now = new Date().toISOString();
        const later = new Date(Date.now() + 3_600_000).toISOString();
        db.prepare(
          `INSERT INTO runs (run, server_label, gateway_pid, chain_json, chain_digest, started_at)
           VALUES ('flood-run', 'flood', ?, '[]', 'sha256:0', ?)`,
        ).run(process.pid, now);
        const insert = db.prepare(
          `INSERT INTO approval_requests (request, agent_run, server_label, execution_epoch, catalog_revision,
             tool, fingerprint, credential_scope_json, mode, review_json, created_at, expires_at)
           VALUES (?, 'flood-run', 'flood', 'e', 1, 't', 'f', '[]', 'session', '{}', ?, ?)`,
        );
        db.transaction(() => {
          for (let i = 0; i < rows; i++) insert.run(idOf(i), now, later);
        })();
      });
      const w = watchApprovalsJson(stateDir, cleanup);
      expect(await w.exited).toBe(2);
      expect(w.out()).toBe("");
      expect(w.err()).toContain(
        `portcullis: approvals --watch --json: ${why}, more than a watch follows (${MAX_FOLLOWED} requests, whose IDs add up to ${MAX_FOLLOWED_ID_CHARS} characters)`,
      );
      expect(w.err()).toContain(`portcullis approvals --watch --state-dir ${stateDir}`);
      // the text watch keeps nothing of each row between reads: it draws them
      const text = watchApprovalsJson(stateDir, cleanup, { json: false });
      await waitFor(
        () => text.out().includes(`portcullis: ${rows} pending approval request(s)`),
        20_000,
        "the list",
      );
      text.child.kill("SIGINT");
      expect(await text.exited).toBe(0);
    }
  }, 60_000);
});
