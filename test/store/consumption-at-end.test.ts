// A call approved for one call whose gateway is taking that one-call grant while another process
// holds the store's write lock, when a signal ends the gateway: the taking stops waiting for the
// lock at the connection's end, the call is answered before the client's output closes (told the
// connection ends and nothing was sent) and its refusal is recorded before the run's end, so
// nothing of the run is recorded after its run_ended. Real gateway (`portcullis run`), real
// server, a real second process holding the lock, the audit read by `portcullis audit verify`.
//
// What failed before: the taking waited for the lock up to 30 s whatever the end did, so the end's
// wait for decisions ran out, the client's output closed with the call unanswered, and the call's
// decision returned (if ever) after the run's end was written and the store closed.
import { afterEach, describe, expect, it } from "vitest";
import { decideByCli, nextStoredRequest, verifiedAuditEvents } from "../helpers/approvals.js";
import { waitFor } from "../helpers/files.js";
import { holdStoreLock } from "../helpers/lock.js";
import { makeProject } from "../helpers/project.js";
import { rawGateway } from "../helpers/raw.js";
import { newStateDir } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

describe("a one-call approval being taken while the store is locked, when a signal ends the gateway", () => {
  it("stops waiting for the lock: the call is answered and recorded before the run's end", async () => {
    const stateDir = newStateDir();
    const project = makeProject("A");
    cleanup.push(() => project.cleanup());
    const gw = rawGateway({
      args: [
        "--label",
        "inventory",
        "--approval",
        "per-call",
        "--approval-timeout",
        "120000",
        "--",
        ...project.command,
      ],
      cwd: project.dir,
      // the gateway's last attempt at the lock waits for the test to let it go (not 10 s)
      env: { ...project.env, PORTCULLIS_BUSY_TIMEOUT_MS: "600000", PORTCULLIS_STORE_CHECK_MS: "600000" },
      stateDir,
    });
    cleanup.push(() => gw.close());
    await gw.initialize({}, 20_000);
    await gw.request("tools/list", {}, 20_000);
    gw.send({
      jsonrpc: "2.0",
      id: "call",
      method: "tools/call",
      params: { name: "read_status", arguments: {} },
    });
    const { request } = await nextStoredRequest(stateDir);

    // The gateway is stopped while the human approves and the lock is taken: its next poll is the
    // first to see the approval, and it must take the one-call grant under the lock.
    gw.kill("SIGSTOP");
    let stopped = true;
    cleanup.push(() => (stopped ? gw.kill("SIGCONT") : undefined));
    await decideByCli(stateDir, "approve", request, "--for", "call");
    const lock = await holdStoreLock(stateDir);
    let held = true;
    const release = async () => {
      if (held) await lock.release();
      held = false;
    };
    cleanup.push(release);
    gw.kill("SIGCONT");
    stopped = false;
    await waitFor(
      () =>
        /is locked by another process: the one-call approval of "read_status" waits/.test(gw.stderr()) ||
        null,
      40_000,
      "the taking of the one-call grant to meet the lock",
    );

    gw.kill("SIGTERM");
    // answered while the output is open (before, the output closed with it unanswered)
    const answer = await gw.next((m) => m.id === "call", 30_000);
    expect(answer.error?.code, JSON.stringify(answer)).toBe(-32050);
    expect(answer.error?.data).toMatchObject({
      error: "authorization_required",
      approvalRequest: request,
      reason: "the connection ends: the one-call approval was not taken for this call",
    });
    expect(JSON.stringify(answer)).not.toMatch(/"revision"/);

    await release();
    expect(await gw.exited).toMatchObject({ code: 0 });
    expect(gw.stderr()).not.toMatch(/stayed locked|cannot record|SqliteError|internal error/);
    expect(project.records().filter((r) => r.tool === "read_status")).toEqual([]);

    const events = await verifiedAuditEvents(stateDir);
    const run = events.find((e) => e.type === "approval_requested")?.run;
    const ofRun = events.filter((e) => e.run === run);
    // the run's end is its last record: the call's refusal came before it
    expect(ofRun.at(-1)?.type).toBe("run_ended");
    expect(ofRun.filter((e) => e.type === "run_ended")).toHaveLength(1);
    expect(
      ofRun.filter((e) => e.requestId === "call").map((e) => [e.type, e.reason ?? null, e.outcome ?? null]),
    ).toEqual([["authorization_denied", "authorization_required", null]]);
  }, 120_000);
});
