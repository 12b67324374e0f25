// Step 9's rule that a call never written to a server may be decided again, at the one place a
// decided call can still meet an epoch change: between its intent record and its forward
// (docs/design.md, step 8). The intent of epoch A waits for the store, another program holding
// its lock; the server is rebuilt and restarted meanwhile. Once the lock goes, the call is not
// sent to the code of epoch B on A's decision: its first intent is closed `call_interrupted`
// (`redecided`, `not_forwarded`), it is decided again for B, recorded again, and runs once, on
// B's code. Real gateway, the revisioned fixture server, a real second process holding the lock.
import { afterEach, describe, expect, it } from "vitest";
import { verifiedAuditEvents } from "../helpers/approvals.js";
import { waitForAuditEvents } from "../helpers/auditWait.js";
import { waitFor } from "../helpers/files.js";
import { startInventory } from "../helpers/gateway.js";
import { holdStoreLock } from "../helpers/lock.js";
import { makeProject } from "../helpers/project.js";
import { newStateDir } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const text = (r: unknown) => (r as { content: { text: string }[] }).content[0]!.text;

describe("an epoch change between a call's intent and its forward", () => {
  it("the call is decided again for the new epoch, its first intent closed redecided, and it runs once on the new code", async () => {
    const stateDir = newStateDir();
    const project = makeProject("A");
    cleanup.push(() => project.cleanup());
    // the intent waits for the lock as long as the test needs (never the busy timeout's refusal)
    const gw = await startInventory(project, ["--approval", "none", "--on-change", "restart"], {
      stateDir,
      env: { PORTCULLIS_BUSY_TIMEOUT_MS: "600000", PORTCULLIS_STORE_CHECK_MS: "600000" },
    });
    cleanup.push(() => gw.close());
    await gw.client.listTools();
    expect(text(await gw.client.callTool({ name: "read_status", arguments: {} }))).toMatch(/"revision":"A"/);

    const lock = await holdStoreLock(stateDir);
    let held = true;
    const release = async () => {
      if (held) await lock.release();
      held = false;
    };
    cleanup.push(release);

    // decided under epoch A; its intent waits for the lock, so nothing is forwarded yet
    let answered = false;
    const call = gw.client
      .callTool({ name: "read_status", arguments: {} }, undefined, { timeout: 120_000 })
      .finally(() => {
        answered = true;
      });
    await gw.waitForStderr(/is locked by another process: the audit records/, 30_000);
    expect(answered).toBe(false);
    expect(project.records()).toHaveLength(1);

    // the code changes and the server is restarted while that intent waits
    const from = gw.stderr().length;
    project.rebuild("B");
    await waitFor(
      () => /new execution epoch: .*; restart\)/.test(gw.stderr().slice(from)) || undefined,
      30_000,
      "epoch B",
    );
    expect(answered).toBe(false);
    await release();

    // answered by B's code, never by A's, and run once
    expect(text(await call)).toMatch(/"revision":"B"/);
    expect(project.records().map((r) => [r.revision, r.tool])).toEqual([
      ["A", "read_status"],
      ["B", "read_status"],
    ]);

    const isCall = (e: Record<string, unknown>) =>
      e.tool === "read_status" && ["tool_called", "call_interrupted", "tool_result"].includes(String(e.type));
    await waitForAuditEvents(
      stateDir,
      (all) => all.filter(isCall).length >= 6,
      "the calls' intents, the interruption and the results",
    );
    const events = (await verifiedAuditEvents(stateDir)).filter(isCall);
    const epochs = [...new Set(events.map((e) => e.epoch))];
    expect(epochs).toHaveLength(2);
    const [epochA, epochB] = epochs;
    expect(events.map((e) => [e.type, e.epoch])).toEqual([
      ["tool_called", epochA],
      ["tool_result", epochA],
      ["tool_called", epochA],
      ["call_interrupted", epochA],
      ["tool_called", epochB],
      ["tool_result", epochB],
    ]);
    expect(events[3]).toMatchObject({ reason: "redecided", outcome: "not_forwarded" });
  }, 120_000);
});
