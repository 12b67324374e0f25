// `approvals --watch` with a thousand pending rows written into the store by another process of
// the user. It read every row (and judged each one's gateway alive) twice a second, keeping a CPU
// busy while nothing changed; it now reads a stamp (src/cli/pendingStamp.ts) and the rows only when
// the stamp moved. What it tells must not change: a new request, a decided one and one whose time
// ran out (closed by the watcher's own sweep: no other process knows the forged row) are each told,
// after idle polls whose stamp did not move.

import { afterEach, describe, expect, it } from "vitest";
import { openStore } from "../../src/store/db.js";
import { nextRequest, nextStoredRequest } from "../helpers/approvals.js";
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

/**
 * A thousand forged rows: the stamp has no threshold of rows (it counts none of them, pendingStamp.ts),
 * so what this proves does not grow with the count. Each change the watch sees reads every pending
 * row again: with 3,000, each of the five changes below cost several seconds (about 19 on a loaded
 * machine, past the short-lived row's 5 s, which it then never saw pending).
 */
const FORGED = 1000;

/**
 * Copies of the stored row `of` under new IDs, each with `changes` applied, in a run of their own
 * that copies the real run's live gateway. Rows naming the real run once counted against its 50
 * pending requests (its gateway refused the next call, and the "new request" this test waited for
 * was a forged row); they no longer do (test/approval/forged-pending-bound.test.ts), and a run of
 * their own keeps this test apart from that bound.
 */
function forge(stateDir: string, of: string, ids: string[], changes: Record<string, unknown>): void {
  const db = openStore(stateDir);
  const real = db.prepare("SELECT * FROM approval_requests WHERE request = ?").get(of) as Record<
    string,
    unknown
  >;
  const run = db.prepare("SELECT * FROM runs WHERE run = ?").get(real.agent_run) as Record<string, unknown>;
  const insertInto = (table: string, row: Record<string, unknown>) =>
    db.prepare(
      `INSERT OR IGNORE INTO ${table} (${Object.keys(row).join(", ")}) VALUES (${Object.keys(row)
        .map(() => "?")
        .join(", ")})`,
    );
  db.transaction(() => {
    insertInto("runs", run).run(...Object.values({ ...run, run: "forged-run" }));
    const insert = insertInto("approval_requests", real);
    for (const id of ids)
      insert.run(...Object.values({ ...real, request: id, agent_run: "forged-run", ...changes }));
  })();
  db.close();
}

describe("approvals --watch over a thousand forged pending rows", () => {
  it("idles without reading them, and still tells a new request, a decided one and an expired one", async () => {
    const stateDir = newStateDir();
    const project = makeProject("A");
    cleanup.push(() => project.cleanup());
    const gw = await startInventory(project, ["--approval", "per-call", "--approval-timeout", "60000"], {
      stateDir,
      credentials: true,
    });
    cleanup.push(() => gw.close());
    await gw.client.listTools();
    const seen = new Set<string>();
    const first = gw.client.callTool({ name: "adjust_inventory", arguments: { sku: "S-1", delta: 1 } });
    // (awaited below; a test cut short by its timeout must not leave its rejection unhandled)
    first.catch(() => {});
    const real = await nextRequest(stateDir, seen);
    const forgedIds = Array.from({ length: FORGED }, (_, i) => `forged${i}`);
    forge(stateDir, real.request, forgedIds, { created_at: "2000-01-01T00:00:00.000Z" });
    // the next request is the gateway's: none of these
    for (const id of forgedIds) seen.add(id);

    const w = watchApprovalsJson(stateDir, cleanup);
    const lines = () => w.lines<{ change: string; request: unknown; state?: string }>();
    const told = (change: string, id: string) =>
      lines().find(
        (l) =>
          l.change === change &&
          (typeof l.request === "string" ? l.request : (l.request as { request: string }).request) === id,
      );
    await waitFor(
      () => lines().filter((l) => l.change === "pending").length === FORGED + 1,
      30_000,
      "every row told",
    );

    // nothing changes for a while (polls whose stamp did not move, which read no row): what comes
    // next must still be told. (The CPU this saves is a figure, not a test's: 0.66 → 0.14 CPU
    // seconds over three idle seconds with 3,000 rows, measured when the stamp came in.)
    await new Promise((r) => setTimeout(r, 1500));

    // a request a gateway makes
    void gw.client
      .callTool({ name: "adjust_inventory", arguments: { sku: "S-2", delta: 2 } })
      .catch((e) => e);
    const made = await nextStoredRequest(stateDir, seen);
    await waitFor(() => told("pending", made.request), 20_000, "the new request told");

    // a row whose time runs out: only the watcher's sweep closes it (5 s: a loaded machine's watch
    // must see it pending before it expires, or it is never told pending; 1.5 s failed so in CI)
    forge(stateDir, real.request, ["soon"], { expires_at: new Date(Date.now() + 5000).toISOString() });
    await waitFor(() => told("pending", "soon"), 20_000, "the short-lived row told");
    const expired = await waitFor(() => told("closed", "soon"), 20_000, "the expired row told closed");
    expect(expired.state).toBe("expired");

    // a decision
    const ok = await runCli(["approve", real.request, "--for", "call", "--state-dir", stateDir], {
      env: passphraseEnv(),
    });
    expect(ok.code, ok.stderr).toBe(0);
    expect((await first).isError).toBeFalsy();
    const decided = await waitFor(
      () => told("closed", real.request),
      20_000,
      "the decided request told closed",
    );
    expect(decided.state).toBe("approved");
    w.child.kill("SIGINT");
    expect(await w.exited).toBe(0);
    // 16 s on a quiet 2-core machine with 3,000 rows; a clean-clone CI run at load 20 went past 60 s
  }, 120_000);
});
