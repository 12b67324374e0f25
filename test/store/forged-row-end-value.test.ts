// A run's row ended by an edit that writes an `ended_at` that is no text
// (`UPDATE runs SET ended_at = X'313233'`, a BLOB: a number such as 123 is stored as the text
// '123' in the TEXT column, which both readers always took for an end), while its gateway still
// serves the run. The gateway read
// only a text `ended_at` as an end, `audit sessions` any value that is not NULL: the gateway took
// the run for open (its session grant still let calls out, nothing recorded the end), while the
// view showed it ended in the store only. Read alike now, deny first: the gateway takes the row
// for ended as any edit's end (test/store/forged-row-end.test.ts): the next call under the grant
// is refused, the grant ended, the end recorded once (`run_ended`, reason `ended_in_store`), and
// `audit sessions` shows that recorded end. A real gateway, a same-user process editing the store,
// the CLI.
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, expect, it } from "vitest";
import { catalogFile, DEPLOY_TOOL } from "../console/helpers.js";
import { waitForPending } from "../helpers/approvals.js";
import { removeDir, tempDir, waitFor } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { FIXTURES, NODE } from "../helpers/paths.js";
import { rawGateway } from "../helpers/raw.js";
import { passphraseEnv } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

interface Entry {
  run: string | null;
  endReason?: string | null;
  endInStoreOnly?: unknown;
  callsAfterEnd?: number;
}

it("a session grant of a run whose row an edit ended with a BLOB ended_at covers nothing, and the end is recorded", async () => {
  const dir = tempDir("portcullis-row-end-value-");
  cleanup.push(() => removeDir(dir));
  const gw = rawGateway({
    args: ["--label", "shop", "--approval-timeout", "60000", "--", NODE, FIXTURES.catalog],
    env: { FIXTURE_CATALOG: catalogFile(dir, [DEPLOY_TOOL]), PORTCULLIS_NO_CONSOLE: "1" },
  });
  cleanup.push(() => gw.close());
  const { stateDir } = gw;
  const call = (id: string) => {
    gw.send(
      `${JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "deploy", arguments: { note: id } } })}\n`,
    );
    return gw.next((m) => m.id === id, 30_000);
  };
  await gw.initialize();
  await gw.request("tools/list");
  const first = call("first");
  const asked = await waitForPending(stateDir, (l) => l[0], 20_000, "the first call's request");
  const approved = await runCli(["approve", asked.request, "--for", "session", "--state-dir", stateDir], {
    env: passphraseEnv(),
    noTerminal: true,
  });
  expect(approved.code, approved.stderr).toBe(0);
  expect((await first).error).toBeUndefined();
  expect((await call("covered")).error).toBeUndefined();

  const edit = new Database(join(stateDir, "portcullis.db"));
  const run = edit.prepare("SELECT run FROM runs WHERE ended_at IS NULL").pluck().get() as string;
  edit.prepare("UPDATE runs SET ended_at = X'313233' WHERE run = ?").run(run);
  expect(edit.prepare("SELECT typeof(ended_at) FROM runs WHERE run = ?").pluck().get(run)).toBe("blob");
  edit.close();

  const after = await call("after");
  expect(after.error, "went out under the grant of a run its row says ended").toBeDefined();
  expect(JSON.stringify(after.error)).toContain("agent run ended");
  // the line comes on stderr, what was awaited on another pipe (or the store, or the exit): read in either order
  await waitFor(
    () => /was ended in the store by another process/.test(gw.stderr()),
    20_000,
    "the gateway's line on the ended run",
  );
  expect(gw.stderr()).toMatch(/was ended in the store by another process, .*\(the row says ended at 123\)/);
  const db = new Database(join(stateDir, "portcullis.db"), { readonly: true });
  const live = db
    .prepare("SELECT COUNT(*) FROM grants WHERE agent_run = ? AND ended_at IS NULL AND revoked_at IS NULL")
    .pluck()
    .get(run);
  db.close();
  expect(live).toBe(0);
  gw.closeStdin();
  expect((await gw.exited).code, gw.stderr()).toBe(0);

  // the view reads the same end: recorded by the gateway, not "in the store only"
  const json = await runCli(["audit", "sessions", "--json", "--state-dir", stateDir], {
    env: passphraseEnv(),
  });
  expect(json.code, json.stderr).toBe(0);
  const s = (JSON.parse(json.stdout) as Entry[]).find((e) => e.run === run)!;
  expect(s.endReason).toBe("ended_in_store");
  expect(s.endInStoreOnly ?? null).toBeNull();
  expect(s.callsAfterEnd).toBe(1);
}, 30_000);
