// Two identical per-call calls in flight join one approval request. A one-call approval is for one
// call: the call that takes it runs, and the other is not left waiting out its hold on a request
// that is used up (to be told, falsely, that nobody approved in time): it asks again at once, and
// the human sees a second request for it. A denial of the joined request answers both. Real
// gateway, real fixture server, decisions by the real CLI.
import { afterEach, describe, expect, it } from "vitest";
import { decideByCli, nextStoredRequest } from "../helpers/approvals.js";
import { waitFor } from "../helpers/files.js";
import { startInventory } from "../helpers/gateway.js";
import { makeProject } from "../helpers/project.js";
import { newStateDir } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/** A gateway asking per call (or per session), with a hold long enough that no answer here comes from its end. */
async function twoJoinedCalls(mode: "per-call" | "session" = "per-call") {
  const stateDir = newStateDir();
  const project = makeProject("A");
  cleanup.push(() => project.cleanup());
  const gw = await startInventory(project, ["--approval", mode, "--approval-timeout", "120000"], {
    stateDir,
  });
  cleanup.push(() => gw.close());
  await gw.client.listTools();
  const call = () =>
    gw.client
      .callTool({ name: "read_status", arguments: {} }, undefined, { timeout: 180_000 })
      .catch((e: unknown) => e as { code: number; message: string; data: Record<string, unknown> });
  const calls = [call(), call()];
  const seen = new Set<string>();
  const first = await nextStoredRequest(stateDir, seen);
  await gw.waitForStderr(/joins approval request/, 20_000);
  return { stateDir, project, calls, first, seen };
}

describe("identical per-call calls joined on one request", () => {
  // Under per-call approval, and for a session request the human narrows to one call (the grant
  // is for one call, so the call that did not take it is in the same place).
  for (const [mode, title] of [
    ["per-call", "one approval runs one call; the other asks again at once and runs on its own approval"],
    ["session", "a session request approved for one call: the other call asks again at once and runs"],
  ] as const) {
    it(title, async () => {
      const { stateDir, project, calls, first, seen } = await twoJoinedCalls(mode);
      expect(first.mode).toBe(mode);
      const ok = await decideByCli(stateDir, "approve", first.request, "--for", "call");
      expect(ok.code).toBe(0);
      // a second request, for the call left without an approval, while its hold still runs
      const second = await nextStoredRequest(stateDir, seen);
      expect(second.request).not.toBe(first.request);
      expect(second.tool).toBe("read_status");
      // the approved call runs (the server records it as it is served: the second request may be
      // stored before that)
      await waitFor(() => project.records().length === 1 || undefined, 20_000, "the approved call to run");
      expect(project.records()).toHaveLength(1);
      const ok2 = await decideByCli(stateDir, "approve", second.request, "--for", "call");
      expect(ok2.code).toBe(0);
      const results = await Promise.all(calls);
      for (const r of results) expect(r).toHaveProperty("content");
      expect(project.records()).toHaveLength(2);
    }, 90_000);
  }

  it("a denial of the joined request answers both calls as denied", async () => {
    const { stateDir, project, calls, first } = await twoJoinedCalls();
    const no = await decideByCli(stateDir, "deny", first.request, "--reason", "not now");
    expect(no.code).toBe(0);
    const results = await Promise.all(calls);
    for (const r of results) {
      expect(r).toMatchObject({
        code: -32057,
        data: { error: "approval_denied", approvalRequest: first.request },
      });
    }
    expect(project.records()).toHaveLength(0);
  }, 90_000);
});
