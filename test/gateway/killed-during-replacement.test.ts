// A gateway SIGKILLed while the server behind it is being replaced (a hot reloader's new worker:
// the watcher fixture restarts its child on SIGHUP) with a call in flight at the old worker. The
// kill point is observable: right after the gateway says on stderr that the running server was
// replaced (the call is being interrupted, the new epoch's identity captured, its handshake and
// catalog to come). The next gateway and every command must then tell the truth: the chain
// verifies, the call has exactly one end, the dead gateway is not listed as running, its run is
// ended, and nothing of it stays open. This moment is safe today; the test keeps it so.
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openStore } from "../../src/store/db.js";
import { auditEvents } from "../helpers/approvals.js";
import { readJsonLines, tempDir, waitFor } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { FIXTURES, NODE } from "../helpers/paths.js";
import { rawGateway } from "../helpers/raw.js";
import { newStateDir } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

function rows(stateDir: string, sql: string): Record<string, unknown>[] {
  const db = openStore(stateDir);
  try {
    return db.prepare(sql).all() as Record<string, unknown>[];
  } finally {
    db.close();
  }
}

describe("a gateway killed while its server is being replaced", () => {
  it("leaves a store on which the next gateway closes everything once, and every command tells the truth", async () => {
    const stateDir = newStateDir();
    const starts = join(tempDir("portcullis-killed-replaced-"), "starts.jsonl");
    const args = [
      "--label",
      "hot",
      "--approval",
      "none",
      "--",
      NODE,
      FIXTURES.watcher,
      "--",
      NODE,
      FIXTURES.lenient,
    ];
    const gw = rawGateway({ args, stateDir, env: { FIXTURE_STARTS: starts } });
    cleanup.push(() => gw.close());
    await gw.initialize();
    await gw.request("tools/list");
    // a call the old worker never answers
    gw.send({
      jsonrpc: "2.0",
      id: "c1",
      method: "tools/call",
      params: { name: "echo", arguments: { message: "hang" } },
    });
    await waitFor(
      () => rows(stateDir, "SELECT 1 FROM open_intents").length === 1,
      10_000,
      "the call's intent",
    );
    const watcher = (readJsonLines<{ watcher: number }>(starts)[0] as { watcher: number }).watcher;
    cleanup.push(() => {
      try {
        process.kill(-watcher, "SIGKILL");
      } catch {}
    });
    process.kill(watcher, "SIGHUP");
    await waitFor(() => /running server replaced/.test(gw.stderr()), 10_000, "the replacement on stderr");
    gw.kill("SIGKILL");
    await gw.exited;

    expect((await runCli(["audit", "verify", "--state-dir", stateDir])).code).toBe(0);
    const next = rawGateway({ args, stateDir, env: { FIXTURE_STARTS: starts } });
    cleanup.push(() => next.close());
    await next.initialize();
    await next.request("tools/list");

    const status = JSON.parse((await runCli(["status", "--json", "--state-dir", stateDir])).stdout) as {
      gateways: { pid: number }[];
    };
    expect(status.gateways.map((g) => g.pid)).toEqual([next.pid]);
    expect(
      rows(
        stateDir,
        "SELECT o.call_key, g.pid FROM open_intents o JOIN gateways g USING (gateway_id)",
      ).filter((r) => r.pid !== next.pid),
    ).toEqual([]);
    const all = await auditEvents(stateDir);
    const run = all.find((e) => e.type === "run_started")!.run;
    const calls = all.filter((e) => e.type === "tool_called" && e.run === run);
    const ends = all.filter(
      (e) => (e.type === "tool_result" || e.type === "call_interrupted") && e.run === run,
    );
    expect(calls).toHaveLength(1);
    expect(ends).toHaveLength(1);
    expect(ends[0]).toMatchObject({ type: "call_interrupted", callKey: calls[0]!.callKey });
    expect(all.filter((e) => e.type === "run_ended" && e.run === run)).toHaveLength(1);
    // every catalog revision stored has its record, and no record names a revision not stored
    const stored = rows(stateDir, "SELECT revision, fingerprint FROM catalog_revisions ORDER BY revision");
    const revised = all
      .filter((e) => e.type === "catalog_revised")
      .map((e) => ({ revision: e.revision, fingerprint: e.fingerprint }));
    expect(revised).toEqual(stored);
    next.closeStdin();
    await next.exited;
    expect((await runCli(["audit", "verify", "--state-dir", stateDir])).code).toBe(0);
  }, 20_000);
});
