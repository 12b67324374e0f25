// A same-user process edits the store's `gateways` and `runs` rows of a gateway that is running so
// that it looks gone (another boot, another pid, its row ended). The next gateway on the state
// directory then closes that gateway's call in flight as interrupted (gateway_gone) and ends its
// run, and the running gateway's answer follows: the call has two ends. Nothing a reader of the
// store can judge prevents it (the rows that name a call's gateway can be edited as well), so it
// is made visible: `audit activity` shows the call with its two ends, and the running gateway says
// on stderr that its call and its run had been closed by another process (docs/security.md,
// "What a same-user attacker can still do").
import { afterEach, expect, it } from "vitest";
import { openStore } from "../../src/store/db.js";
import { auditActivity, auditEvents } from "../helpers/approvals.js";
import { waitFor } from "../helpers/files.js";
import { runCli, startInventory } from "../helpers/gateway.js";
import { liveGatewayMadeToLookGone, liveGatewayWithSlowWrite } from "../helpers/lookGone.js";
import { passphraseEnv } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

it("a running gateway's rows edited to look gone: the call's two ends are shown, and the gateway says so", async () => {
  const { project, stateDir, live, answer } = await liveGatewayMadeToLookGone(cleanup);

  const next = await startInventory(project, ["--approval", "none"], { stateDir });
  await next.client.listTools();
  await next.close();

  project.release();
  await answer;
  await live.close();

  // What the chain holds: the forged close, then the real answer; the live run ended as gone.
  const events = await auditEvents(stateDir);
  const ends = events.filter((e) => e.type === "tool_result" || e.type === "call_interrupted");
  expect(ends.map((e) => [e.type, e.reason ?? e.outcome])).toEqual([
    ["call_interrupted", "gateway_gone"],
    ["tool_result", "ok"],
  ]);
  // The call is shown with both ends, not as an ordinary answered call.
  const calls = (await auditActivity(stateDir)).filter((a) => a.tool === "slow_write");
  expect(calls).toHaveLength(1);
  expect(calls[0]).toMatchObject({ outcome: "ok", interruption: "gateway_gone", ends: 2 });
  const table = await runCli(["audit", "activity", "--state-dir", stateDir], { env: passphraseEnv() });
  expect(table.stdout).toMatch(/slow_write.*ok \(2 ends\)/);
  // The running gateway said that its call and its run had been closed by another process.
  expect(live.stderr()).toMatch(
    /tool_result of call "slow_write \d+" of run \S+ was written, but its call had already been closed by another process/,
  );
  // the line comes on stderr, what was awaited on another pipe (or the store, or the exit): read in either order
  await waitFor(
    () =>
      /its call had already been closed by another process/.test(live.stderr()) &&
      /had been ended by another process/.test(live.stderr()),
    20_000,
    "the gateway's lines on the closed call and run",
  );
  expect(live.stderr()).toMatch(
    /agent run \S+ had been ended by another process \(reason gateway_gone in its row\) while this gateway still served it: this gateway, which had written no end of it, recorded its end now/,
  );
});

it("a running gateway's open call moved to a gateway id with no row: its two ends are shown, and the gateway says so", async () => {
  // No liveness column of the running gateway is touched: the call's row names another gateway,
  // one that left no row (so no one could see it alive). A lock held by the running gateway,
  // found by its gateway id, would not have kept this call open either.
  const { project, stateDir, live, answer } = await liveGatewayWithSlowWrite(cleanup);

  const db = openStore(stateDir);
  expect(db.prepare("UPDATE open_intents SET gateway_id = 'no-such-gateway'").run().changes).toBe(1);
  db.close();

  const next = await startInventory(project, ["--approval", "none"], { stateDir });
  await next.client.listTools();
  await next.close();
  project.release();
  await answer;
  await live.close();

  const calls = (await auditActivity(stateDir)).filter((a) => a.tool === "slow_write");
  expect(calls).toHaveLength(1);
  expect(calls[0]).toMatchObject({ outcome: "ok", interruption: "gateway_gone", ends: 2 });
  // the line comes on stderr, what was awaited on another pipe (or the store, or the exit): read in either order
  await waitFor(
    () => /its call had already been closed by another process/.test(live.stderr()),
    20_000,
    "the gateway's line on the closed call",
  );
  expect(live.stderr()).toMatch(/its call had already been closed by another process/);
});
