// A gateway SIGKILLed while a call waits for a human never closes its approval request itself.
// Whoever lists the requests next (the real CLI, here two at once) closes it: recorded once as
// `approval_expired`, never listed again, never decidable.

import { spawn } from "node:child_process";
import { afterEach, describe, expect, it } from "vitest";
import { auditEvents, nextRequest, pending } from "../helpers/approvals.js";
import { waitFor } from "../helpers/files.js";
import { hostEnv, runCli, startInventory } from "../helpers/gateway.js";
import { CLI, NODE } from "../helpers/paths.js";
import { makeProject } from "../helpers/project.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/** A gateway in front of the inventory fixture whose calls wait long for a human. */
async function waitingGateway(stateDir: string) {
  const project = makeProject("A");
  cleanup.push(() => project.cleanup());
  // long waits: only the gateway's death can end a request within the test
  const gw = await startInventory(project, ["--approval", "per-call", "--approval-timeout", "60000"], {
    stateDir,
    credentials: true,
  });
  cleanup.push(() => gw.close());
  await gw.client.listTools();
  const call = gw.client.callTool({ name: "adjust_inventory", arguments: { sku: "S-1", delta: 1 } });
  call.catch(() => {}); // it dies with the gateway
  return { gw, project };
}

describe("the request of a gateway that died", () => {
  it("is closed by whoever lists next, recorded as approval_expired exactly once, and can no longer be decided", async () => {
    const stateDir = newStateDir();
    const { gw, project } = await waitingGateway(stateDir);
    const req = await nextRequest(stateDir);

    gw.kill("SIGKILL");
    await gw.exited;

    // two listers at once: both see nothing pending, and only one of them records the expiry
    const [a, b] = await Promise.all([pending(stateDir), pending(stateDir)]);
    expect(a).toEqual([]);
    expect(b).toEqual([]);
    const expired = (await auditEvents(stateDir)).filter((e) => e.type === "approval_expired");
    expect(expired).toEqual([
      expect.objectContaining({
        approvalRequest: req.request,
        tool: "adjust_inventory",
        serverLabel: "inventory",
        reason: expect.stringMatching(/gateway that waited for it \(pid \d+\) is gone/),
      }),
    ]);

    // never decidable afterwards
    const late = await runCli(["approve", req.request, "--for", "call", "--state-dir", stateDir], {
      env: passphraseEnv(),
    });
    expect(late.code).toBe(1);
    expect(late.stderr).toMatch(/no longer pending: it was expired/);
    const next = await runCli(["approve", "--next", "--for", "call", "--state-dir", stateDir], {
      env: passphraseEnv(),
    });
    expect(next.stderr).toMatch(/no approval request is pending/);
    expect(project.records()).toEqual([]);
    // listing again records nothing more
    expect(await pending(stateDir)).toEqual([]);
    expect((await auditEvents(stateDir)).filter((e) => e.type === "approval_expired")).toHaveLength(1);
  });

  it("approvals --watch closes it too: its line says expired", async () => {
    const stateDir = newStateDir();
    const { gw } = await waitingGateway(stateDir);
    const watcher = spawn(NODE, [CLI, "approvals", "--watch", "--json", "--state-dir", stateDir], {
      env: hostEnv(),
      stdio: ["ignore", "pipe", "pipe"],
    });
    cleanup.push(() => {
      if (watcher.exitCode === null) watcher.kill("SIGKILL");
    });
    let out = "";
    watcher.stdout.on("data", (c: Buffer) => {
      out += c.toString();
    });
    const lines = () =>
      out
        .split("\n")
        .filter((l) => l.trim() !== "")
        .map((l) => JSON.parse(l) as { change: string; request: unknown; state?: string });
    const appeared = await waitFor(
      () => lines().find((l) => l.change === "pending"),
      20_000,
      "the request's pending line",
    );
    const id = (appeared.request as { request: string }).request;
    gw.kill("SIGKILL");
    await gw.exited;
    const closed = await waitFor(
      () => lines().find((l) => l.change === "closed"),
      20_000,
      "the request's closed line",
    );
    expect(closed).toMatchObject({ request: id, state: "expired" });
    const expired = (await auditEvents(stateDir)).filter((e) => e.type === "approval_expired");
    expect(expired).toEqual([
      expect.objectContaining({
        approvalRequest: id,
        by: expect.stringMatching(/^'portcullis approvals' \(pid \d+\)$/),
      }),
    ]);
  });
});
