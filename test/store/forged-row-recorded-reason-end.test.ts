// A run's row ended by an edit that writes a reason a recording writer gives (`UPDATE runs SET
// ended_at = …, ended_reason = 'gateway_gone'`) while its gateway still serves it. The gateway
// cannot read the sealed chain and took such a row for a recorded end, so it wrote no `run_ended`
// at its own clean end either: the chain held no end of the run. The gateway knows what it wrote
// itself: unless it wrote its run's end, it records it (`run_ended`, reason `ended_in_store`,
// `rowReason` the row's) whatever the row says, at the next call's intent record or at its own
// end, once. Deny first, kept: the forged end still ends what the run may do (its session grant
// covers nothing, a call needing a human is refused at once). A real gateway, a same-user process
// editing the store, the CLI.
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, expect, it } from "vitest";
import { catalogFile, DEPLOY_TOOL } from "../console/helpers.js";
import { verifiedAuditEvents, waitForPending } from "../helpers/approvals.js";
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

const call = (gw: RawGateway, id: string) => {
  gw.send(
    `${JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "deploy", arguments: { note: id } } })}\n`,
  );
  return gw.next((m) => m.id === id, 30_000);
};

it.each([
  ["gateway_gone", "a call after it"],
  ["ended_in_store", "a call after it"],
  ["gateway_gone", "no call after it"],
  ["ended_in_store", "no call after it"],
])(
  "a live run's row ended by an edit with reason %s, %s: the run's end recorded by its gateway, once (a call after it refused)",
  async (reason, then) => {
    const dir = tempDir("portcullis-row-recorded-");
    cleanup.push(() => removeDir(dir));
    const gw = rawGateway({
      args: ["--label", "shop", "--approval-timeout", "60000", "--", NODE, FIXTURES.catalog],
      env: { FIXTURE_CATALOG: catalogFile(dir, [DEPLOY_TOOL]), PORTCULLIS_NO_CONSOLE: "1" },
    });
    cleanup.push(() => gw.close());
    const { stateDir } = gw;
    await gw.initialize();
    await gw.request("tools/list");
    const first = call(gw, "first");
    const asked = await waitForPending(stateDir, (l) => l[0], 20_000, "the first call's request");
    const approved = await runCli(["approve", asked.request, "--for", "session", "--state-dir", stateDir], {
      env: passphraseEnv(),
      noTerminal: true,
    });
    expect(approved.code, approved.stderr).toBe(0);
    expect((await first).error).toBeUndefined();

    const db = new Database(join(stateDir, "portcullis.db"));
    const run = db.prepare("SELECT run FROM runs WHERE ended_at IS NULL").pluck().get() as string;
    db.prepare("UPDATE runs SET ended_at = ?, ended_reason = ? WHERE run = ?").run(
      "2026-01-02T03:04:05.000Z",
      reason,
      run,
    );
    db.close();
    if (then === "a call after it") {
      // deny first: the forged end is an end for what the run may do
      const after = await call(gw, "after");
      expect(after.error, "went out under the grant of a run its row says ended").toBeDefined();
      expect(JSON.stringify(after.error)).toContain("agent run ended");
    }

    gw.closeStdin();
    expect((await gw.exited).code, gw.stderr()).toBe(0);
    if (then === "a call after it") {
      // recorded at the call that found it (ahead of that call's record), not again at its end
      expect(gw.stderr()).toMatch(
        new RegExp(
          `agent run ${run} was ended in the store by another process \\(reason ${reason} in its row, which this gateway cannot tell from an edit that recorded nothing; .*: it records the end \\(run_ended, reason ended_in_store\\)`,
        ),
      );
      expect(gw.stderr()).toMatch(
        new RegExp(`agent run ${run} had already been ended .*: this gateway had recorded that end`),
      );
    } else {
      expect(gw.stderr()).toMatch(
        new RegExp(
          `agent run ${run} had been ended by another process \\(reason ${reason} in its row\\).*recorded its end now`,
        ),
      );
    }

    const ends = (await verifiedAuditEvents(stateDir)).filter((e) => e.type === "run_ended" && e.run === run);
    expect(ends).toEqual([expect.objectContaining({ reason: "ended_in_store", rowReason: reason })]);

    const json = await runCli(["audit", "sessions", "--json", "--state-dir", stateDir], {
      env: passphraseEnv(),
    });
    expect(json.code, json.stderr).toBe(0);
    const s = (JSON.parse(json.stdout) as { run: string; endReason: string; endInStoreOnly: unknown }[]).find(
      (e) => e.run === run,
    )!;
    expect(s.endReason).toBe("ended_in_store");
    expect(s.endInStoreOnly).toBeNull();
  },
  30_000,
);
