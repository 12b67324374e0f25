// A decision that an HTTP session's end left under way (the end waits 2 s for its decisions: here
// another process holds the store's write lock, so the call's intent record waits for it) and that
// returns once the lock is given back is recorded before its run's end: the session's last writes
// (its run's end among them) wait for it, once the lock is free. Nothing of a run is recorded after
// its `run_ended`. Real `run --listen` (dist), the modern fixture, a real second process holding
// the lock, the audit verified by `portcullis audit verify`.
//
// The sequence is held by the lock, not timed: the client closes the call's stream (its
// cancellation in this era), the idle timeout begins the session's end, whose wait for the stalled
// decision runs out (2 s); its server is stopped, and only then is the lock let go.
//
// What failed before: the session's last writes went as soon as the lock was free, and the
// decision, returning after them, had its records (the call's intent's end, call_interrupted
// cancelled) written after the run's run_ended (7 runs of 7 here; in principle a race: the audit
// sink's retry of the intent against the session's look for the lock, whichever comes first).
import { afterEach, describe, expect, it } from "vitest";
import { verifiedAuditEvents } from "../helpers/approvals.js";
import { waitForAuditEvents } from "../helpers/auditWait.js";
import { alive, waitFor } from "../helpers/files.js";
import { endWithStalledCall } from "./stalledDecision.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

describe("a decision an HTTP session's end left under way", () => {
  it("returns once the lock is given back and is recorded before its run's end", async () => {
    const { l, client, serverPid, release } = await endWithStalledCall(
      "decision-after-session-end",
      {},
      cleanup,
    );
    client.close();
    // the end's wait for the decision runs out (2 s), and the session's server is stopped
    await waitFor(() => !alive(serverPid) || null, 20_000, "the session's server to stop");
    await release();

    await waitForAuditEvents(
      l.stateDir,
      (events) => events.some((e) => e.type === "run_ended"),
      "the run's end",
    );
    l.proc.kill("SIGTERM");
    await l.exited;
    const events = await verifiedAuditEvents(l.stateDir);
    const run = events.find((e) => e.type === "run_started")?.run;
    const ofRun = events.filter((e) => e.run === run);
    // the call's intent, written once the lock went, closed as cancelled; then the run's end
    expect(ofRun.filter((e) => e.requestId === 2).map((e) => [e.type, e.reason ?? null])).toEqual([
      ["tool_called", null],
      ["call_interrupted", "cancelled"],
    ]);
    expect(ofRun.at(-1)?.type).toBe("run_ended");
    expect(ofRun.filter((e) => e.type === "run_ended")).toHaveLength(1);
  }, 120_000);
});
