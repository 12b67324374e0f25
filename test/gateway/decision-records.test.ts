// A human's decision is in the audit chain exactly once, before any call it allows, whether a
// call still waited for it or not: the real CLI decides while a real gateway serves a real
// client, and the chain is read back with the test passphrase. A request outlives its call, so a
// session approval given after the call's hold ended is used by a retry that finds the grant
// live in the store, and a denial nobody retries is never seen by a gateway: the decider records
// both.

import { afterEach, describe, expect, it } from "vitest";
import { auditEvents, decideByCli, nextStoredRequest } from "../helpers/approvals.js";
import { startInventory } from "../helpers/gateway.js";
import { makeProject } from "../helpers/project.js";
import { newStateDir } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

async function setup(runArgs: string[]) {
  const stateDir = newStateDir();
  const project = makeProject("A");
  cleanup.push(() => project.cleanup());
  const gw = await startInventory(project, runArgs, { stateDir });
  cleanup.push(() => gw.close());
  await gw.client.listTools();
  return { stateDir, gw };
}

function refusalData(e: unknown): Record<string, unknown> {
  return (e as { data: Record<string, unknown> }).data;
}

/** The audit events of `type` about approval request `request`. */
function about(events: Record<string, unknown>[], type: string, request: string) {
  return events.filter((e) => e.type === type && e.approvalRequest === request);
}

const CLI_DECIDER = /via 'portcullis' \(pid \d+, passphrase verified\)$/;

describe("a decision is recorded once, with who decided", () => {
  it("a session approval given after the call stopped waiting: approval_granted before the retry's tool_called", async () => {
    const { stateDir, gw } = await setup(["--approval", "session", "--approval-timeout", "300"]);
    const timedOut = await gw.client.callTool({ name: "read_status", arguments: {} }).catch((e) => e);
    const data = refusalData(timedOut);
    expect(data.error).toBe("approval_timeout");
    const request = data.approvalRequest as string;

    // nobody waits on the request now: the human approves it, and the agent's retries proceed
    await decideByCli(stateDir, "approve", request, "--for", "session");
    expect((await gw.client.callTool({ name: "read_status", arguments: {} })).isError).toBeFalsy();
    expect((await gw.client.callTool({ name: "read_status", arguments: {} })).isError).toBeFalsy();

    const events = await auditEvents(stateDir);
    const granted = about(events, "approval_granted", request);
    expect(granted).toEqual([
      expect.objectContaining({
        tool: "read_status",
        serverLabel: "inventory",
        mode: "session",
        expiresWhen: "agent-run-ends",
        decidedBy: expect.stringMatching(CLI_DECIDER),
      }),
    ]);
    const grant = granted[0]!.grant as string;
    const calls = events.filter((e) => e.type === "tool_called" && e.grant === grant);
    expect(calls).toHaveLength(2);
    expect(events.indexOf(granted[0]!)).toBeLessThan(events.indexOf(calls[0]!));
  });

  it("an approval given while the call waits is recorded once, not again by the gateway", async () => {
    const { stateDir, gw } = await setup(["--approval", "session", "--approval-timeout", "40000"]);
    const waiting = gw.client.callTool({ name: "read_status", arguments: {} });
    const { request } = await nextStoredRequest(stateDir);
    await decideByCli(stateDir, "approve", request, "--for", "session");
    expect((await waiting).isError).toBeFalsy();

    const events = await auditEvents(stateDir);
    const granted = about(events, "approval_granted", request);
    expect(granted).toHaveLength(1);
    const first = events.find((e) => e.type === "tool_called" && e.grant === granted[0]!.grant);
    expect(events.indexOf(granted[0]!)).toBeLessThan(events.indexOf(first!));
  });

  it("a denial given while nobody waits is recorded at once, and once when a retry is told of it", async () => {
    const { stateDir, gw } = await setup(["--approval", "per-call", "--approval-timeout", "300"]);
    const args = { sku: "S-7", delta: 7 };
    const timedOut = await gw.client.callTool({ name: "adjust_inventory", arguments: args }).catch((e) => e);
    const request = refusalData(timedOut).approvalRequest as string;
    await decideByCli(stateDir, "deny", request, "--reason", "not this sku");

    // no call has seen the denial yet: it is in the chain all the same
    const denied = {
      type: "approval_denied",
      outcome: "denied",
      reason: "not this sku",
      tool: "adjust_inventory",
      decidedBy: expect.stringMatching(CLI_DECIDER),
    };
    expect(about(await auditEvents(stateDir), "approval_denied", request)).toEqual([
      expect.objectContaining(denied),
    ]);

    // the retry is told of it; the chain still holds it once
    const told = await gw.client.callTool({ name: "adjust_inventory", arguments: args }).catch((e) => e);
    expect(refusalData(told)).toMatchObject({ error: "approval_denied", approvalRequest: request });
    expect(about(await auditEvents(stateDir), "approval_denied", request)).toEqual([
      expect.objectContaining(denied),
    ]);
  });
});
