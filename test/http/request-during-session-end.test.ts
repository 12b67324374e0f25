// A 2026-07-28 client's request that arrives while its session's end is under way (the end waiting
// for a decision of that session, before it answers what the session holds) opens a new session,
// which serves it: a modern client has no session id, so the ending session's `session_ended`
// (whose advice is a new session) would leave it nothing to do. The old session's end goes on: its
// decision, once it returns, is closed in its own run's audit, before that run's end.
//
// The window is held open for as long as the test needs, not timed: another process holds the
// store's write lock, so the old session's call has its intent record waiting for it; the client
// closes that call's stream (its cancellation in this era), the session goes idle and the idle
// timeout begins its end, which waits for that decision (PORTCULLIS_END_DECISIONS_MS lengthened
// from its 2 s; the lock holds it there). The new request is sent then, and the lock let go only
// once the front opened the new session (the old one's server still running: its end has not
// answered what it holds yet). A modern session's idle end holds no request whose client still
// waits (a closed stream is a cancellation, an open one keeps the session from being idle), so what
// the old session is left to end is the cancelled call. Real `run --listen` (dist), the modern
// fixture, HTTP/1.1 connections held by the test.
//
// What failed before e277641b: the ending session was still the client's (isEnded turned true only
// once the end was done), so the request was answered session_ended and never served.
import { afterEach, describe, expect, it } from "vitest";
import { verifiedAuditEvents } from "../helpers/approvals.js";
import { alive, waitFor } from "../helpers/files.js";
import { holdStoreLock } from "../helpers/lock.js";
import { FIXTURES, NODE } from "../helpers/paths.js";
import { startListener } from "./listen.js";
import { Connection, modernRequester } from "./pipeline.js";
import { messagesOf } from "./raw.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const request = modernRequester("request-during-session-end");

describe("a modern client's request while its HTTP session's end waits for a decision", () => {
  it("opens a new session, which serves it; the old session's call is closed in its own run before that run's end", async () => {
    const l = await startListener([NODE, FIXTURES.modern], {
      args: ["--approval", "none", "--listen-idle-timeout", "1000"],
      env: {
        // the end waits for the stalled decision as long as the test holds the lock
        PORTCULLIS_END_DECISIONS_MS: "600000",
        PORTCULLIS_BUSY_TIMEOUT_MS: "600000",
        PORTCULLIS_STORE_CHECK_MS: "600000",
      },
    });
    cleanup.push(() => l.close());
    /** The sessions the front opened so far (one status line each). */
    const opened = () => l.stderr().match(/http session \S+ \(modern\) from pid/g)?.length ?? 0;
    // both connections open (and the client known from the first) before any other process starts
    const [client, caller] = await Promise.all([Connection.open(l), Connection.open(l)]);
    cleanup.push(() => {
      client.close();
      caller.close();
    });
    const listed = await client.post(request(1, "tools/list"));
    expect(listed.status, listed.body).toBe(200);
    expect(opened()).toBe(1);
    // the first session's server process: stopped only once its end answered what it holds
    const serverPid = Number(/serving .*?: pid=(\d+)/.exec(l.stderr())?.[1]);
    expect(serverPid).toBeGreaterThan(0);

    const lock = await holdStoreLock(l.stateDir);
    let held = true;
    const release = async () => {
      if (held) await lock.release();
      held = false;
    };
    cleanup.push(release);
    // the call's intent waits for the lock; the client gives up on it (closes its stream)
    void caller
      .post(request(2, "tools/call", { name: "echo", arguments: { text: "stalled" } }))
      .catch(() => {});
    await waitFor(
      () => /is locked by another process: the audit records/.test(l.stderr()) || null,
      20_000,
      "the call's intent to meet the lock",
    );
    caller.close();
    // nothing open: the idle timeout ends the session, and its end waits for the stalled decision
    await waitFor(() => /idle for 1000 ms: ended/.test(l.stderr()) || null, 20_000, "the idle end to begin");

    // the client asks again meanwhile: a new session is opened for it
    const again = client.post(request(3, "tools/list"));
    await waitFor(() => opened() === 2 || null, 20_000, "a new session for the request");
    // the first session's end still waits for its decision: its server runs on
    expect(alive(serverPid)).toBe(true);
    await release();
    const answer = await again;
    expect(answer.status, answer.body).toBe(200);
    const [reply] = messagesOf(answer.body).filter((m) => m.id === 3);
    expect(reply?.error, answer.body).toBeUndefined();
    expect(JSON.stringify(reply?.result)).toContain('"echo"');

    l.proc.kill("SIGTERM");
    await l.exited;
    const events = await verifiedAuditEvents(l.stateDir);
    const runs = events.filter((e) => e.type === "run_started").map((e) => e.run);
    expect(runs).toHaveLength(2);
    const [first, second] = runs;
    const ofFirst = events.filter((e) => e.run === first);
    // the old session's call: its intent, written once the lock went, closed as cancelled
    expect(ofFirst.filter((e) => e.requestId === 2).map((e) => [e.type, e.reason ?? null])).toEqual([
      ["tool_called", null],
      ["call_interrupted", "cancelled"],
    ]);
    expect(ofFirst.at(-1)?.type).toBe("run_ended");
    // the new session's list is its own run's
    expect(events.filter((e) => e.type === "catalog_served").map((e) => e.run)).toEqual([first, second]);
  }, 120_000);
});
