// A call and a guarded read held by a `run --listen` session's gateway (for the server's catalog,
// or behind the handshake replayed to a new server process) when that HTTP session ends are
// refused identity_pending on their own exchange, and each refusal is in the audit once, as on
// stdio (test/gateway/held-refusals-at-end.test.ts): authorization_denied, reason identity_pending,
// against the epoch they waited for, before the run's run_ended, the chain verified by `portcullis
// audit verify`. The ends: the client's DELETE, the idle timeout (the call's connection dropped),
// the front's SIGTERM. Real `run --listen` (dist) on 127.0.0.1, the lenient fixture (its tools/list
// or its replayed initialize held while a file exists), raw HTTP.
//
// The gateway ending the session itself (the new process refuses the replayed handshake) answers
// and records them the same way (Gateway.end, then the session's end).
// A call waiting for a human when the client DELETEs its session is refused authorization_required,
// recorded, and its request closed with the run, as at SIGTERM (listen-lifecycle.test.ts).
//
// What failed before: a DELETE or the idle timeout answered the held requests (and a call waiting
// for a human) session_ended and ended the run; the gateway, never told, kept them held (the wait
// going on), and none was recorded. SIGTERM and the gateway's own end were right already (the
// front asked every gateway to answer what waits before the sessions ended; Gateway.end answers
// what it holds before it ends the session).
import { existsSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { argumentsDigest } from "../../src/audit/events.js";
import { openStore } from "../../src/store/db.js";
import { expectRequestClosedWithRun, verifiedAuditEvents } from "../helpers/approvals.js";
import { readJsonLines, removeDir, tempDir, waitFor } from "../helpers/files.js";
import { fixtureCommand } from "../helpers/paths.js";
import { killWithReplayHeld, newEpoch } from "../helpers/replayHeld.js";
import { type Listener, startListener } from "./listen.js";
import { messagesOf, openSession, type RawResponse, raw } from "./raw.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const ARGS = { message: "held at the session's end" };
const READ_URI = "lenient://held-read";
const CALL = JSON.stringify({
  jsonrpc: "2.0",
  id: "call",
  method: "tools/call",
  params: { name: "echo", arguments: ARGS },
});
const READ = JSON.stringify({
  jsonrpc: "2.0",
  id: "read",
  method: "resources/read",
  params: { uri: READ_URI },
});

/**
 * A front in front of the lenient fixture with one legacy session open, its server's method log
 * read back, and the files that hold its tools/list (`listHold`, made before it starts when
 * `catalogHeld`) and a next process's replayed initialize (`initHold`). Held requests wait two
 * minutes, so only the session's end answers them. Debug lines say what the gateway read.
 */
async function frontWithSession(catalogHeld: boolean, args: string[] = []) {
  const dir = tempDir("pc-http-held-end-");
  cleanup.push(() => removeDir(dir));
  const methodLog = join(dir, "methods.jsonl");
  const listHold = join(dir, "list-hold");
  const initHold = join(dir, "init-hold");
  const initRefuse = join(dir, "init-refuse");
  if (catalogHeld) writeFileSync(listHold, "");
  const l: Listener = await startListener(fixtureCommand("lenient"), {
    args: ["--approval", "none", "--hold-timeout", "120000", ...args],
    env: {
      FIXTURE_METHOD_LOG: methodLog,
      FIXTURE_LIST_HOLD: listHold,
      FIXTURE_INIT_HOLD: initHold,
      FIXTURE_INIT_REFUSE: initRefuse,
      PORTCULLIS_DEBUG: "1",
    },
  });
  cleanup.push(() => l.close());
  const session = await openSession(l);
  const logged = () =>
    existsSync(methodLog) ? readJsonLines<{ method: string; pid: number }>(methodLog) : [];
  const listed = catalogHeld ? "held tools/list" : "tools/list";
  await waitFor(() => logged().some((m) => m.method === listed), 20_000, `the server's ${listed}`);
  return { l, headers: l.headers({ "mcp-session-id": session }), logged, initHold, initRefuse };
}

/** Resolves once the gateway read the held call (its hold line) and the read (a debug line). */
async function heldRead(l: Listener): Promise<void> {
  await waitFor(() => /holding tools\/call "echo"/.test(l.stderr()), 20_000, "the held call");
  await waitFor(() => /← client .*resources\/read/.test(l.stderr()), 20_000, "the read, read");
}

/** The one answer to `id` in a POST's body. */
function answerOf(r: RawResponse, id: string) {
  const found = messagesOf(r.body).filter((m) => m.id === id && m.method === undefined);
  expect(found, r.body).toHaveLength(1);
  return found[0] as { error?: { code: number; message: string; data?: Record<string, unknown> } };
}

/** The held call's and read's answers (each one, on its own exchange) both match `error`. */
async function expectBothRefused(
  call: Promise<RawResponse>,
  read: Promise<RawResponse>,
  error: Record<string, unknown>,
): Promise<void> {
  for (const [r, id] of [
    [await call, "call"],
    [await read, "read"],
  ] as const)
    expect(answerOf(r, id).error).toMatchObject(error);
}

/** Whether every run in the store has ended (read there: a request would keep a session alive). */
function runsEnded(stateDir: string): boolean {
  const db = openStore(stateDir);
  try {
    const runs = db.prepare("SELECT ended_at FROM runs").all() as { ended_at: string | null }[];
    return runs.length > 0 && runs.every((r) => r.ended_at !== null);
  } finally {
    db.close();
  }
}

/**
 * Once the front exited: the audit verified, the held requests `ids` each refused once
 * (authorization_denied, identity_pending) against the epoch they waited for, with the run's
 * end after them. The session's run is ended before the front is signalled, so SIGTERM answers
 * nothing of that session: what is recorded is the session end's.
 */
async function expectRecorded(l: Listener, ids: ("call" | "read")[]): Promise<void> {
  await l.exited;
  const events = await verifiedAuditEvents(l.stateDir);
  const run = events.find((e) => e.type === "run_started")?.run;
  expect(run).toEqual(expect.any(String));
  const epochs = events.filter((e) => e.type === "server_started").map((e) => e.epoch);
  const denied = events.filter((e) => e.type === "authorization_denied");
  const want = {
    call: ["call", "echo", "identity_pending"],
    read: ["read", `resources/read ${READ_URI}`, "identity_pending"],
  };
  expect(denied.map((e) => [e.requestId, e.tool, e.reason]).sort()).toEqual(ids.map((id) => want[id]));
  // the epoch whose catalog they waited for: the last one begun
  for (const e of denied) expect(e).toMatchObject({ run, epoch: epochs.at(-1), serverLabel: "http-test" });
  const digests = { call: argumentsDigest(ARGS), read: argumentsDigest({ uri: READ_URI }) };
  for (const id of ids) expect(denied.find((e) => e.requestId === id)?.argumentsDigest).toBe(digests[id]);
  const ended = events.findIndex((e) => e.type === "run_ended");
  expect(ended).toBeGreaterThan(Math.max(...denied.map((e) => events.indexOf(e))));
}

describe("requests held for the catalog when the HTTP session ends", () => {
  it("the client's DELETE: each answered identity_pending and recorded once, before run_ended", async () => {
    const { l, headers } = await frontWithSession(true);
    const call = raw(l, { headers, body: CALL });
    const read = raw(l, { headers, body: READ });
    await heldRead(l);
    expect((await raw(l, { method: "DELETE", headers })).status).toBe(200);
    // before: session_ended, and nothing recorded. Told the session ended, and to reconnect, not
    // the hold timeout's "wait a moment, then list tools again and retry" (a session that is gone)
    await expectBothRefused(call, read, {
      code: -32053,
      message: expect.stringMatching(/^The client's session ended before this request could be decided/),
      data: {
        error: "identity_pending",
        reason: expect.stringMatching(/^the HTTP session ended/),
        retry: expect.stringMatching(/^reconnect/),
      },
    });
    await waitFor(() => runsEnded(l.stateDir), 20_000, "the session's run to end");
    l.proc.kill("SIGTERM");
    await expectRecorded(l, ["call", "read"]);
  }, 60_000);

  it("the idle timeout, the call's connection dropped: recorded once, before run_ended", async () => {
    const { l, headers } = await frontWithSession(true, ["--listen-idle-timeout", "1000"]);
    // a legacy client's dropped connection is no cancellation: the call stays held, the session idle
    const dropped = new Promise<void>((resolve) => {
      const req = request({ host: "127.0.0.1", port: l.port, path: "/mcp", method: "POST", headers });
      req.on("error", () => resolve());
      req.on("close", () => resolve());
      req.end(CALL);
      void waitFor(() => /holding tools\/call "echo"/.test(l.stderr()), 20_000, "the held call").then(() =>
        req.destroy(),
      );
    });
    await dropped;
    await waitFor(() => /idle for 1000 ms: ended/.test(l.stderr()), 20_000, "the idle timeout");
    await waitFor(() => runsEnded(l.stateDir), 20_000, "the session's run to end");
    l.proc.kill("SIGTERM");
    await expectRecorded(l, ["call"]);
  }, 60_000);

  it("SIGTERM: each answered identity_pending and recorded once (right before too)", async () => {
    const { l, headers } = await frontWithSession(true);
    const call = raw(l, { headers, body: CALL });
    const read = raw(l, { headers, body: READ });
    await heldRead(l);
    l.proc.kill("SIGTERM");
    await expectBothRefused(call, read, {
      data: {
        error: "identity_pending",
        reason: expect.stringMatching(/^the gateway is shutting down/),
        retry: expect.stringMatching(/^reconnect/),
      },
    });
    await expectRecorded(l, ["call", "read"]);
  }, 60_000);
});

describe("requests held behind the handshake replayed to a new server process when the HTTP session ends", () => {
  it("the client's DELETE: each told the session ended, nothing sent, and recorded once", async () => {
    const { l, headers, logged, initHold } = await frontWithSession(false);
    const serverPid = logged().find((m) => m.method === "initialize")!.pid;
    await killWithReplayHeld(l, initHold, serverPid, logged);
    const epoch = newEpoch(l);
    const call = raw(l, { headers, body: CALL });
    const read = raw(l, { headers, body: READ });
    await heldRead(l);
    expect((await raw(l, { method: "DELETE", headers })).status).toBe(200);
    await expectBothRefused(call, read, {
      code: -32053,
      message: expect.stringMatching(/^The client's session ended .*nothing was sent to the server/),
      data: {
        error: "identity_pending",
        currentEpoch: epoch,
        reason: expect.stringMatching(/^the HTTP session ended/),
      },
    });
    // the held initialize was never answered: nothing of the requests reached a server
    expect(logged().filter((m) => m.method === "tools/call" || m.method === "resources/read")).toEqual([]);
    await waitFor(() => runsEnded(l.stateDir), 20_000, "the session's run to end");
    l.proc.kill("SIGTERM");
    await expectRecorded(l, ["call", "read"]);
  }, 90_000);
});

describe("requests held behind a replayed handshake when the gateway ends the HTTP session", () => {
  it("the new process refuses the handshake: each told why, recorded once, before run_ended (right before too)", async () => {
    const { l, headers, logged, initHold, initRefuse } = await frontWithSession(false);
    const serverPid = logged().find((m) => m.method === "initialize")!.pid;
    await killWithReplayHeld(l, initHold, serverPid, logged);
    const epoch = newEpoch(l);
    const call = raw(l, { headers, body: CALL });
    const read = raw(l, { headers, body: READ });
    await heldRead(l);
    writeFileSync(initRefuse, "");
    rmSync(initHold);
    await expectBothRefused(call, read, {
      code: -32053,
      message: expect.stringMatching(/^The gateway ended the connection/),
      data: { error: "identity_pending", currentEpoch: epoch },
    });
    await waitFor(() => runsEnded(l.stateDir), 20_000, "the session's run to end");
    l.proc.kill("SIGTERM");
    await expectRecorded(l, ["call", "read"]);
  }, 90_000);
});

describe("a call waiting for a human when the HTTP session ends", () => {
  it("the client's DELETE: refused authorization_required, recorded, its request closed with the run", async () => {
    const l = await startListener(fixtureCommand("habits"), { args: ["--approval", "session"] });
    cleanup.push(() => l.close());
    const headers = l.headers({ "mcp-session-id": await openSession(l) });
    const listed = await raw(l, {
      headers,
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    });
    expect(listed.body).toContain("slow");
    const call = raw(l, {
      headers,
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: "waits",
        method: "tools/call",
        params: { name: "slow", arguments: { ms: 1 } },
      }),
    });
    await waitFor(() => /approval needed for "slow"/.test(l.stderr()), 10_000, "the approval request");
    expect((await raw(l, { method: "DELETE", headers })).status).toBe(200);
    // before: session_ended, the wait going on past the run's end
    expect(answerOf(await call, "waits").error).toMatchObject({
      code: -32050,
      data: { error: "authorization_required" },
    });
    await waitFor(() => runsEnded(l.stateDir), 20_000, "the session's run to end");
    l.proc.kill("SIGTERM");
    await l.exited;
    // as on stdio and at SIGTERM: the call's refusal recorded, then the run's end closes the request
    await expectRequestClosedWithRun(l.stateDir);
  }, 60_000);
});
