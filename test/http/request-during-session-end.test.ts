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
import { messagesOf } from "./raw.js";
import { endWithStalledCall } from "./stalledDecision.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

describe("a modern client's request while its HTTP session's end waits for a decision", () => {
  it("opens a new session, which serves it; the old session's call is closed in its own run before that run's end", async () => {
    // the end waits for the stalled decision as long as the test holds the lock
    const { l, client, request, serverPid, release } = await endWithStalledCall(
      "request-during-session-end",
      { PORTCULLIS_END_DECISIONS_MS: "600000" },
      cleanup,
    );
    /** The sessions the front opened so far (one status line each). */
    const opened = () => l.stderr().match(/http session \S+ \(modern\) from pid/g)?.length ?? 0;
    expect(opened()).toBe(1);

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
