// Situations docs/refusals.md promises for -32053 `identity_pending` and -32054
// `epoch_transition` that no other test pins down by code and wording:
// - a new server process that does not answer, or refuses, the handshake the gateway replays to
//   it ends the connection; what waited is answered -32053 with why the connection ends as its
//   `reason` and "reconnect first" as its `retry` (nothing was sent, so it is safe on a new one);
// - a request waiting for that handshake when the client closes its input is answered -32053 at
//   once, saying the client closed its input and nothing was sent;
// - a call at a server reached by URL when a signal stops the gateway (no grace for a remote
//   server) is answered -32054, never retried, with `currentEpoch` null (when the client closes
//   its input instead, the call is first given the hold timeout and gets -32603 `shutting_down`:
//   the shutdown, and the session's end with it, comes only after);
// - a call at a stdio process that dies is answered -32054 with `currentEpoch` null: the next
//   epoch is not known yet when the call is answered.
// Real gateway (dist), the lenient fixture or the HTTP fixture, a raw client over real pipes.
import { existsSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { readJsonLines, tempDir, waitFor } from "../helpers/files.js";
import type { WireMessage } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { type RawGateway, rawGateway } from "../helpers/raw.js";
import { killWithReplayHeld, newEpoch } from "../helpers/replayHeld.js";
import { startFixture } from "../http/upstreamFixture.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/** What src/guard/refusals.ts tells a request that waited when the connection ended. */
const RECONNECT = "reconnect, list tools again, then retry";
const NOT_DECIDED =
  "The gateway ended the connection before this request could be decided; nothing was sent to the server.";

/** The epoch the gateway logged as serving first, and the one it logged as new (if any). */
const firstEpoch = (gw: RawGateway) => /serving .* epoch=(\w+)/.exec(gw.stderr())?.[1];

interface Logged {
  method: string;
  pid: number;
}

/**
 * A gateway in front of the lenient fixture (test/fixtures/servers/lenient.mjs), initialized, its
 * catalog listed. Files in `dir`: `hold` (absent at first) holds the initialize of a process
 * started while it exists, `refuse` makes such a process refuse it.
 */
async function lenient(env: Record<string, string> = {}) {
  const dir = tempDir("pc-refusal-epoch-");
  const methodLog = join(dir, "methods.jsonl");
  const hold = join(dir, "hold");
  const refuse = join(dir, "refuse");
  const gw = rawGateway({
    args: ["--label", "epochs", "--approval", "none", "--", ...fixtureCommand("lenient")],
    env: { FIXTURE_METHOD_LOG: methodLog, FIXTURE_INIT_HOLD: hold, FIXTURE_INIT_REFUSE: refuse, ...env },
  });
  cleanup.push(() => gw.close());
  await gw.initialize({}, 20_000);
  const listed = await gw.request("tools/list", {}, 20_000);
  expect(listed.result, JSON.stringify(listed)).toBeDefined();
  const logged = () => (existsSync(methodLog) ? readJsonLines<Logged>(methodLog) : []);
  const serverPid = logged().find((l) => l.method === "initialize")!.pid;
  return { gw, hold, refuse, logged, serverPid };
}

/**
 * Kills the server with `hold` in place, so the gateway's replayed initialize waits at the next
 * process; then puts a tools/call (held by the guard for the new epoch's catalog) and a ping
 * (relayed, so kept behind the handshake) in front of it. Resolves once the gateway read both.
 */
async function waitingBehindReplay({ gw, hold, logged, serverPid }: Awaited<ReturnType<typeof lenient>>) {
  await killWithReplayHeld(gw, hold, serverPid, logged);
  gw.send({ jsonrpc: "2.0", id: "call", method: "tools/call", params: { name: "echo", arguments: {} } });
  gw.send({ jsonrpc: "2.0", id: "ping", method: "ping" });
  // answered by the gateway itself: the lines before it were read
  expect((await gw.request("tasks/list", {}, 10_000)).error).toBeDefined();
}

/** The -32053 every request that waited for the replayed handshake gets as the connection ends. */
function expectEndedPending(answer: WireMessage, reason: string, currentEpoch: string | undefined) {
  expect(answer.error, JSON.stringify(answer)).toEqual({
    code: -32053,
    message: NOT_DECIDED,
    data: { error: "identity_pending", reason, retry: RECONNECT, currentEpoch },
  });
}

describe("-32053 identity_pending when a replayed handshake fails", () => {
  it("the new process never answers the replayed initialize: held call and ping get -32053, reason the timeout, retry reconnect first", async () => {
    // (5 s: long enough for the requests to be read before it passes)
    const s = await lenient({ PORTCULLIS_HANDSHAKE_TIMEOUT_MS: "5000" });
    await waitingBehindReplay(s);
    const call = await s.gw.next((m) => m.id === "call", 30_000);
    const ping = await s.gw.next((m) => m.id === "ping", 30_000);
    expect((await s.gw.exited).code).toBe(1);

    const reason =
      "the new server process did not answer initialize within 5 s: a server that cannot start; ending the connection";
    // currentEpoch: the new process's epoch, known (its catalog is what was not)
    expectEndedPending(call, reason, newEpoch(s.gw));
    expectEndedPending(ping, reason, newEpoch(s.gw));
    expect(newEpoch(s.gw)).not.toBe(firstEpoch(s.gw));
  }, 90_000);

  it("the new process refuses the replayed initialize: held call and ping get -32053, reason the refusal, retry reconnect first", async () => {
    const s = await lenient();
    await waitingBehindReplay(s);
    // the process held now refuses when it answers
    writeFileSync(s.refuse, "");
    rmSync(s.hold);
    const call = await s.gw.next((m) => m.id === "call", 20_000);
    const ping = await s.gw.next((m) => m.id === "ping", 20_000);
    expect((await s.gw.exited).code).toBe(1);

    const reason = "the new server process refused initialize: not today";
    expectEndedPending(call, reason, newEpoch(s.gw));
    expectEndedPending(ping, reason, newEpoch(s.gw));
  }, 90_000);

  it("the client closes its input while the replayed initialize waits: what waited gets -32053 at once, saying the client closed its input and nothing was sent", async () => {
    const s = await lenient();
    await waitingBehindReplay(s);
    s.gw.closeStdin();
    // the hold is never lifted: what waited is answered with the handshake still under way
    const call = await s.gw.next((m) => m.id === "call", 20_000);
    const ping = await s.gw.next((m) => m.id === "ping", 20_000);
    for (const answer of [call, ping])
      expect(answer.error, JSON.stringify(answer)).toEqual({
        code: -32053,
        message:
          "The client closed its input before this request could be sent to the new server process; nothing was sent to the server.",
        data: {
          error: "identity_pending",
          reason: "the client closed its input: nothing more is sent to the server for it",
          retry: RECONNECT,
          currentEpoch: newEpoch(s.gw),
        },
      });
    // nothing but the handshake reached the new process
    const newPid = s.logged().find((l) => l.method === "held initialize")!.pid;
    expect(
      s
        .logged()
        .filter((l) => l.pid === newPid && !/^held /.test(l.method))
        .map((l) => l.method),
    ).toEqual(["initialize"]);
    expect(await s.gw.exited).toEqual({ code: 0, signal: null });
  }, 90_000);
});

/** The -32054 of a call whose server went away before answering it (never retried). */
function expectLostCall(answer: WireMessage, requestEpoch: string | undefined) {
  expect(requestEpoch).toMatch(/^\w{26}$/);
  expect(answer.error, JSON.stringify(answer)).toEqual({
    code: -32054,
    message:
      "The server process that received this call went away before answering; the call was not retried.",
    data: {
      error: "epoch_transition",
      reason: "server execution epoch changed while the call was in flight",
      retry: "check whether the call took effect before repeating it; list tools again first",
      requestEpoch,
      currentEpoch: null,
      retried: false,
    },
  });
}

/**
 * A gateway in front of the HTTP fixture (test/fixtures/servers/http-fixture.mjs, plain HTTP),
 * with a `hang` call at the server (the fixture never answers it): only the gateway can end it.
 * `hangs()`: how many times the server received that call.
 */
async function remoteCallAtServer(extra: string[] = []) {
  const record = join(tempDir("pc-refusal-epoch-"), "calls.jsonl");
  const server = await startFixture({ FIXTURE_RECORD: record }, null);
  cleanup.push(() => server.kill());
  const gw = rawGateway({ args: ["--url", server.url, "--label", "remote", "--approval", "none", ...extra] });
  cleanup.push(() => gw.close());
  await gw.initialize({}, 20_000);
  expect((await gw.request("tools/list", {}, 20_000)).result).toBeDefined();
  gw.send({ jsonrpc: "2.0", id: "hang", method: "tools/call", params: { name: "hang", arguments: {} } });
  const hangs = () => readJsonLines(record).filter((r) => r.tool === "hang").length;
  await waitFor(() => hangs() === 1, 20_000, "the call at the server");
  return { gw, hangs };
}

describe("-32054 epoch_transition for a call at a server that goes away, currentEpoch null", () => {
  it("a server reached by URL, a call at it, SIGTERM to the gateway: the call gets -32054, retried false, currentEpoch null", async () => {
    const { gw, hangs } = await remoteCallAtServer();
    gw.kill("SIGTERM");
    const answer = await gw.next((m) => m.id === "hang", 20_000);
    expectLostCall(answer, firstEpoch(gw));
    expect(await gw.exited).toEqual({ code: 0, signal: null });
    // never retried: the server received it once
    expect(hangs()).toBe(1);
  }, 90_000);

  it("a server reached by URL, a call at it, the client closes its input: the call is waited for (hold timeout), then gets -32603 shutting_down, not -32054", async () => {
    // docs/refusals.md, -32603 row: the client's end of input is not the shutdown's start; the
    // answers in flight are awaited first (bounded by the hold timeout, shortened here)
    const { gw, hangs } = await remoteCallAtServer(["--hold-timeout", "2000"]);
    gw.closeStdin();
    const answer = await gw.next((m) => m.id === "hang", 20_000);
    expect(answer.error, JSON.stringify(answer)).toMatchObject({
      code: -32603,
      data: { error: "shutting_down", reason: "client closed its input; server shutting down" },
    });
    expect(await gw.exited).toEqual({ code: 0, signal: null });
    expect(hangs()).toBe(1);
  }, 90_000);

  it("a stdio server process dies with a call at it: the call gets -32054 with currentEpoch null, though a new epoch follows", async () => {
    const s = await lenient();
    // the lenient fixture never answers a call whose message is "hang"
    s.gw.send({
      jsonrpc: "2.0",
      id: "hang",
      method: "tools/call",
      params: { name: "echo", arguments: { message: "hang" } },
    });
    await waitFor(() => s.logged().some((l) => l.method === "tools/call"), 20_000, "the call at the server");
    process.kill(s.serverPid, "SIGKILL");
    const answer = await s.gw.next((m) => m.id === "hang", 20_000);
    expectLostCall(answer, firstEpoch(s.gw));
    // the next process comes up after: its epoch was not known when the call was answered
    await waitFor(() => newEpoch(s.gw), 20_000, "the next epoch");
    expect(newEpoch(s.gw)).not.toBe(firstEpoch(s.gw));
    expect(s.logged().filter((l) => l.method === "tools/call")).toHaveLength(1);
  }, 90_000);
});
