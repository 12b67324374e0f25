// A run's row ended by an edit that also writes a reason a recording writer gives
// (`UPDATE runs SET ended_at = …, ended_reason = 'gateway_gone'`), with no `run_ended` in the
// chain. A gateway that serves a call after the edit, or ends cleanly, records its run's end
// itself (forged-row-recorded-reason-end.test.ts); one killed first never does, so nobody writes
// the run's `run_ended`: `audit sessions` showed the run "(open)" although the store says it
// ended. The chain is the record: the view says the run's end is in the store only, unrecorded
// (the row's reason is shown as the row's word, never as the end's reason), and flags it; the
// run's recorded end stays empty. A real gateway, a same-user process editing the store, the CLI.
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, expect, it } from "vitest";
import { catalogFile, DEPLOY_TOOL } from "../console/helpers.js";
import { removeDir, tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { FIXTURES, NODE } from "../helpers/paths.js";
import { type RawGateway, rawGateway } from "../helpers/raw.js";
import { passphraseEnv } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

interface Entry {
  run: string | null;
  endedAt?: string | null;
  endReason?: string | null;
  endInStoreOnly?: { endedAt: string; reason: string | null } | null;
  calls?: number;
}

const call = (gw: RawGateway, id: string) => {
  gw.send(
    `${JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "deploy", arguments: { note: id } } })}\n`,
  );
  return gw.next((m) => m.id === id, 30_000);
};

it.each(["gateway_gone", "ended_in_store"])(
  "a run whose row an edit ended with reason %s and no record: audit sessions says its end is in the store only, not open",
  async (reason) => {
    const dir = tempDir("portcullis-row-reason-");
    cleanup.push(() => removeDir(dir));
    const gw = rawGateway({
      args: ["--label", "shop", "--approval", "none", "--", NODE, FIXTURES.catalog],
      env: { FIXTURE_CATALOG: catalogFile(dir, [DEPLOY_TOOL]), PORTCULLIS_NO_CONSOLE: "1" },
    });
    cleanup.push(() => gw.close());
    const { stateDir } = gw;
    await gw.initialize();
    await gw.request("tools/list");
    expect((await call(gw, "before")).error).toBeUndefined();

    const endedAt = "2026-01-02T03:04:05.000Z";
    const db = new Database(join(stateDir, "portcullis.db"));
    const run = db.prepare("SELECT run FROM runs WHERE ended_at IS NULL").pluck().get() as string;
    db.prepare("UPDATE runs SET ended_at = ?, ended_reason = ? WHERE run = ?").run(endedAt, reason, run);
    db.close();
    // killed before any call after the edit (a call would have it record the run's end:
    // forged-row-recorded-reason-end.test.ts): its end never comes (a clean end would record the run's end itself)
    gw.kill("SIGKILL");
    expect((await gw.exited).signal, gw.stderr()).toBe("SIGKILL");

    const json = await runCli(["audit", "sessions", "--json", "--state-dir", stateDir], {
      env: passphraseEnv(),
    });
    expect(json.code, json.stderr).toBe(0);
    const s = (JSON.parse(json.stdout) as Entry[]).find((e) => e.run === run)!;
    // nothing in the chain ends the run: its recorded end stays empty, the row's reason is not taken
    expect(s.endedAt).toBeNull();
    expect(s.endReason).toBeNull();
    expect(s.endInStoreOnly).toEqual({ endedAt, reason });
    expect(s.calls).toBe(1);

    const table = await runCli(["audit", "sessions", "--state-dir", stateDir], { env: passphraseEnv() });
    expect(table.code, table.stderr).toBe(0);
    const block = table.stdout.split("\n\n").find((b) => b.startsWith(`run ${run}`))!;
    expect(block).not.toContain("(open)");
    expect(block).not.toContain(`(${reason})`);
    expect(block.split("\n")[0]).toContain(`→ ended in the store only, unrecorded (the row says ${endedAt})`);
    expect(block).toContain(
      `  unrecorded end: the store's row says this run ended (reason in the row: ${reason}), but the audit log holds no run_ended for it`,
    );
  },
  30_000,
);
