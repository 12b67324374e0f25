// A call, a guarded read and a 2026-07-28 listen for resources held for a new server process
// (its replayed handshake under way, so its catalog not fetched) when the connection ends are
// answered identity_pending, and each refusal is in the audit as one at the hold timeout is
// (held-refusals-recorded.test.ts): authorization_denied, reason identity_pending, the listen one
// record per uri. The three ends: the client closes its input, the gateway ends the connection
// (the new process refuses the handshake), a signal stops the gateway. The audit is read back
// after the gateway exited, its chain verified by `portcullis audit verify`.
// Real gateway (dist), the lenient fixture (its initialize held or refused while a file exists),
// a raw client on plain pipes.
//
// What failed before: the refusals went out, but none of them was recorded: the agent's requests
// left no trace in the audit when the connection's end answered them.
import { existsSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { argumentsDigest } from "../../src/audit/events.js";
import { verifiedAuditEvents } from "../helpers/approvals.js";
import { readJsonLines, removeDir, tempDir } from "../helpers/files.js";
import type { WireMessage } from "../helpers/gateway.js";
import { modernMeta } from "../helpers/modernMeta.js";
import { fixtureCommand } from "../helpers/paths.js";
import { type RawGateway, rawGateway } from "../helpers/raw.js";
import { killWithReplayHeld, newEpoch } from "../helpers/replayHeld.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const MODERN_META = modernMeta();
const ARGS = { said: "held at the end" };
const READ_URI = "lenient://held-read";
const LISTEN_URIS = ["lenient://a", "lenient://b"];

/**
 * A gateway in front of the lenient fixture, listed; then its server killed with the fixture's
 * hold in place, so the initialize the gateway replays waits at the next process, and a call, a
 * read and a listen for resources sent: each held by the guard for that process's catalog.
 * Resolves once the gateway read them all.
 */
async function heldBehindReplay() {
  const dir = tempDir("pc-held-at-end-");
  cleanup.push(() => removeDir(dir));
  const methodLog = join(dir, "methods.jsonl");
  const hold = join(dir, "hold");
  const refuse = join(dir, "refuse");
  const gw = rawGateway({
    args: ["--label", "atend", "--approval", "none", "--", ...fixtureCommand("lenient")],
    env: { FIXTURE_METHOD_LOG: methodLog, FIXTURE_INIT_HOLD: hold, FIXTURE_INIT_REFUSE: refuse },
  });
  cleanup.push(() => gw.close());
  await gw.initialize({}, 20_000);
  expect((await gw.request("tools/list", {}, 20_000)).result).toBeDefined();
  const logged = () =>
    existsSync(methodLog) ? readJsonLines<{ method: string; pid: number }>(methodLog) : [];
  const serverPid = logged().find((l) => l.method === "initialize")!.pid;
  await killWithReplayHeld(gw, hold, serverPid, logged);
  gw.send({ jsonrpc: "2.0", id: "call", method: "tools/call", params: { name: "echo", arguments: ARGS } });
  gw.send({ jsonrpc: "2.0", id: "read", method: "resources/read", params: { uri: READ_URI } });
  gw.send({
    jsonrpc: "2.0",
    id: "listen",
    method: "subscriptions/listen",
    params: { _meta: MODERN_META, notifications: { resourceSubscriptions: LISTEN_URIS } },
  });
  // answered by the gateway itself: the lines before it were read
  expect((await gw.request("tasks/list", {}, 10_000)).error).toBeDefined();
  return { gw, hold, refuse };
}

/** The answers of the three held requests: each -32053 identity_pending, naming the new epoch. */
async function heldAnswers(gw: RawGateway): Promise<string> {
  const epoch = newEpoch(gw);
  expect(epoch).toEqual(expect.any(String));
  for (const id of ["call", "read", "listen"]) {
    const m: WireMessage = await gw.next((x) => x.id === id, 20_000);
    expect(m.error?.code, JSON.stringify(m)).toBe(-32053);
    expect(m.error?.data).toMatchObject({ error: "identity_pending", currentEpoch: epoch });
  }
  return epoch!;
}

/**
 * The audit, its chain verified, once the gateway exited: each held request's refusal recorded
 * once, against the epoch whose catalog it waited for, the listen once per uri.
 */
async function expectRecorded(gw: RawGateway, epoch: string): Promise<void> {
  await gw.exited;
  const events = await verifiedAuditEvents(gw.stateDir);
  const run = events.find((e) => e.type === "run_started")?.run;
  expect(run).toEqual(expect.any(String));
  const denied = events.filter((e) => e.type === "authorization_denied");
  expect(denied.map((e) => [e.requestId, e.tool, e.reason])).toEqual([
    ["call", "echo", "identity_pending"],
    ["read", `resources/read ${READ_URI}`, "identity_pending"],
    ...LISTEN_URIS.map((u) => ["listen", `resources/subscribe ${u}`, "identity_pending"]),
  ]);
  for (const e of denied) expect(e).toMatchObject({ run, epoch, serverLabel: "atend" });
  expect(denied[0]!.argumentsDigest).toBe(argumentsDigest(ARGS));
  expect(denied[1]!.argumentsDigest).toBe(argumentsDigest({ uri: READ_URI }));
  expect(denied.slice(2).map((e) => e.argumentsDigest)).toEqual(
    LISTEN_URIS.map((uri) => argumentsDigest({ uri })),
  );
  // each uri a call key of its own, as the guard's refusals of a listen's uris have
  expect(new Set(denied.slice(2).map((e) => e.callKey)).size).toBe(LISTEN_URIS.length);
  // recorded before the run's end, which is the last record of the run
  const ended = events.findIndex((e) => e.type === "run_ended");
  expect(ended).toBeGreaterThan(events.indexOf(denied[denied.length - 1]!));
}

describe("held requests refused as the connection ends are recorded", () => {
  it("the client closes its input", async () => {
    const { gw } = await heldBehindReplay();
    gw.closeStdin();
    const epoch = await heldAnswers(gw);
    await expectRecorded(gw, epoch);
  }, 90_000);

  it("the gateway ends the connection (the new process refuses the replayed initialize)", async () => {
    const { gw, hold, refuse } = await heldBehindReplay();
    writeFileSync(refuse, "");
    rmSync(hold);
    const epoch = await heldAnswers(gw);
    expect((await gw.exited).code).toBe(1);
    await expectRecorded(gw, epoch);
  }, 90_000);

  it("a signal stops the gateway", async () => {
    const { gw } = await heldBehindReplay();
    gw.kill("SIGTERM");
    const epoch = await heldAnswers(gw);
    await expectRecorded(gw, epoch);
  }, 90_000);
});
