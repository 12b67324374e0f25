// A run ended by a bare edit of its row (`UPDATE runs SET ended_at = …`, by another process of the
// user) while its gateway still serves it. Nothing wrote its `run_ended`: left so, `audit
// sessions` showed the run open forever, its calls after the edit counted as ordinary ones, and
// its session grants (not ended by the edit) still let calls out under an ended run. The gateway
// notices at its next call, under the audit's write lock: it records the end once (`run_ended`,
// reason `ended_in_store`, its grants ended and its pending requests cancelled with it), a call
// needing an approval is refused at once ("agent run ended"), and what it records of the run
// after that is counted as after its end. A real gateway, a same-user process editing the store,
// and the CLI.
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, expect, it } from "vitest";
import { catalogFile, DEPLOY_TOOL } from "../console/helpers.js";
import { waitForPending } from "../helpers/approvals.js";
import { removeDir, tempDir, waitFor } from "../helpers/files.js";
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
  endReason?: string | null;
  calls?: number;
  callsAfterEnd?: number;
}

function deployGateway(args: string[]): RawGateway {
  const dir = tempDir("portcullis-row-end-");
  cleanup.push(() => removeDir(dir));
  const gw = rawGateway({
    args: ["--label", "shop", ...args, "--", NODE, FIXTURES.catalog],
    env: { FIXTURE_CATALOG: catalogFile(dir, [DEPLOY_TOOL]), PORTCULLIS_NO_CONSOLE: "1" },
  });
  cleanup.push(() => gw.close());
  return gw;
}

const call = (gw: RawGateway, id: string) => {
  gw.send(
    `${JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "deploy", arguments: { note: id } } })}\n`,
  );
  return gw.next((m) => m.id === id, 30_000);
};

/** What another process of the user does: ends the run's row, and nothing else. */
function endRowByHand(stateDir: string): string {
  const db = new Database(join(stateDir, "portcullis.db"));
  const run = db.prepare("SELECT run FROM runs WHERE ended_at IS NULL").pluck().get() as string;
  db.prepare("UPDATE runs SET ended_at = ? WHERE run = ?").run(new Date().toISOString(), run);
  db.close();
  return run;
}

/** The client closes its input; the gateway ends its run and exits (its state directory kept). */
async function ended(gw: RawGateway): Promise<void> {
  gw.closeStdin();
  expect((await gw.exited).code, gw.stderr()).toBe(0);
}

/** How many `run_ended` records the chain holds (their type is in the clear header). */
function runEndedRecords(stateDir: string): number {
  const db = new Database(join(stateDir, "portcullis.db"), { readonly: true });
  const records = db.prepare("SELECT record FROM audit_records").pluck().all() as Buffer[];
  db.close();
  return records.filter((r) => JSON.parse(r.subarray(0, r.indexOf(0x0a)).toString()).type === "run_ended")
    .length;
}

async function sessions(stateDir: string): Promise<Entry[]> {
  const json = await runCli(["audit", "sessions", "--json", "--state-dir", stateDir], {
    env: passphraseEnv(),
  });
  expect(json.code, json.stderr).toBe(0);
  return JSON.parse(json.stdout) as Entry[];
}

it("a run whose row another process ended: its gateway records the end once, and its calls after it are counted so", async () => {
  const gw = deployGateway(["--approval", "none"]);
  await gw.initialize();
  await gw.request("tools/list");
  expect((await call(gw, "before")).error).toBeUndefined();
  const run = endRowByHand(gw.stateDir);
  expect((await call(gw, "after-1")).error).toBeUndefined();
  expect((await call(gw, "after-2")).error).toBeUndefined();
  await ended(gw);

  expect(gw.stderr()).not.toContain("no reason given");
  // the line comes on stderr, what was awaited on another pipe (or the store, or the exit): read in either order
  await waitFor(
    () => /was ended in the store by another process/.test(gw.stderr()),
    20_000,
    "the gateway's line on the ended run",
  );
  expect(gw.stderr()).toMatch(
    /agent run \S+ was ended in the store by another process, which recorded no end .*: it records the end/,
  );
  const entries = await sessions(gw.stateDir);
  const s = entries.find((e) => e.run === run)!;
  expect(s.endReason).toBe("ended_in_store");
  expect(s.calls).toBe(3);
  expect(s.callsAfterEnd).toBe(2);
  expect(runEndedRecords(gw.stateDir)).toBe(1);
  const table = await runCli(["audit", "sessions", "--state-dir", gw.stateDir], { env: passphraseEnv() });
  expect(table.stdout).toContain("(ended_in_store)");
  expect(table.stdout).toMatch(/calls after its end: 2 /);
  const verify = await runCli(["audit", "verify", "--state-dir", gw.stateDir]);
  expect(verify.code, verify.stdout + verify.stderr).toBe(0);
}, 30_000);

it("a row ended with no call after it: the gateway's own end records it (not 'open' forever)", async () => {
  const gw = deployGateway(["--approval", "none"]);
  await gw.initialize();
  await gw.request("tools/list");
  expect((await call(gw, "before")).error).toBeUndefined();
  const run = endRowByHand(gw.stateDir);
  await ended(gw);
  expect(gw.stderr()).not.toContain("no reason given");
  const s = (await sessions(gw.stateDir)).find((e) => e.run === run)!;
  expect(s.endReason).toBe("ended_in_store");
  expect(s.callsAfterEnd).toBe(0);
  expect(runEndedRecords(gw.stateDir)).toBe(1);
}, 30_000);

it("a session grant of a run whose row another process ended covers nothing: the next call is refused at once", async () => {
  const gw = deployGateway(["--approval-timeout", "60000"]);
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
  expect((await call(gw, "covered")).error).toBeUndefined();

  const run = endRowByHand(stateDir);
  const after = await call(gw, "after");
  expect(after.error, "went out under the grant of an ended run").toBeDefined();
  expect(JSON.stringify(after.error)).toContain("agent run ended");
  // The run's end is recorded with the audit's next group, whose condition ends its grants and
  // pending requests; the refusal does not wait for that group (a loaded CI machine read the
  // grant still live right after the answer). The call was refused either way; the rows end.
  const liveOrPending = () => {
    const db = new Database(join(stateDir, "portcullis.db"), { readonly: true });
    try {
      const live = db
        .prepare(
          "SELECT COUNT(*) FROM grants WHERE agent_run = ? AND ended_at IS NULL AND revoked_at IS NULL",
        )
        .pluck()
        .get(run);
      const pending = db
        .prepare("SELECT COUNT(*) FROM approval_requests WHERE state = 'pending'")
        .pluck()
        .get();
      return { live, pending };
    } finally {
      db.close();
    }
  };
  await waitFor(
    () => {
      const { live, pending } = liveOrPending();
      return live === 0 && pending === 0;
    },
    10_000,
    "the ended run's grants and pending requests to end",
  ).catch(() => undefined);
  expect(liveOrPending()).toEqual({ live: 0, pending: 0 });
  await ended(gw);
  const s = (await sessions(stateDir)).find((e) => e.run === run)!;
  expect(s.endReason).toBe("ended_in_store");
  expect(runEndedRecords(stateDir)).toBe(1);
}, 30_000);

it("a call waiting for a human when its run's row is ended by another process is answered at once, not held for a decision none can make", async () => {
  const gw = deployGateway(["--approval-timeout", "60000"]);
  const { stateDir } = gw;
  await gw.initialize();
  await gw.request("tools/list");
  const waiting = call(gw, "waiting");
  const asked = await waitForPending(stateDir, (l) => l[0], 20_000, "the call's request");
  const run = endRowByHand(stateDir);
  // within its hold of 60 s (the test's own limit is 30 s)
  const answer = await waiting;
  expect(JSON.stringify(answer.error)).toContain("agent run ended");
  expect(JSON.stringify(answer.error)).toContain(asked.request);
  await ended(gw);
  const s = (await sessions(stateDir)).find((e) => e.run === run)!;
  expect(s.endReason).toBe("ended_in_store");
  expect(runEndedRecords(stateDir)).toBe(1);
}, 30_000);
