// A burst of approval requests (an agent making many distinct calls at once). It is told to the
// human in one notification per quiet time, not one notifier process each: a thousand calls
// spawned a thousand notifiers before (300 calls: 300 processes). The first request is told at
// once; those of the quiet time after it in one more, with their number. And it is bounded: past
// 50 requests of the run waiting for a human, a call that would make a new one is refused
// (before: 1,000 calls, 1,000 requests, every held call polling the store). Real gateway, real
// notifier script.
import { chmodSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { storedPending } from "../helpers/approvals.js";
import { completeLines } from "../helpers/completeLines.js";
import { tempDir, waitFor } from "../helpers/files.js";
import { startInventory } from "../helpers/gateway.js";
import { makeProject } from "../helpers/project.js";
import { newStateDir } from "../helpers/state.js";

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup.length = 0;
});

describe("desktop notifications of a burst of requests", () => {
  it("the first is told at once, the rest of the quiet time in one notification with their number", async () => {
    const dir = tempDir("portcullis-notify-");
    const notifier = join(dir, "notify.sh");
    const out = join(dir, "argv");
    // one line per notification: its body
    writeFileSync(notifier, `#!/bin/sh\nprintf '%s\\n' "$2" >> "${out}"\n`);
    chmodSync(notifier, 0o755);
    const stateDir = newStateDir();
    const project = makeProject("A");
    cleanup.push(() => project.cleanup());
    const gw = await startInventory(project, ["--approval", "per-call", "--approval-timeout", "40000"], {
      stateDir,
      credentials: true,
      env: { PORTCULLIS_NOTIFY: "1", PORTCULLIS_NOTIFY_COMMAND: notifier },
    });
    cleanup.push(() => gw.close());
    await gw.client.listTools();
    const calls = 40;
    for (let i = 0; i < calls; i++)
      void gw.client
        .callTool({ name: "adjust_inventory", arguments: { sku: `S-${i}`, delta: i } })
        .catch(() => {});
    const lines = () => (existsSync(out) ? completeLines(readFileSync(out, "utf8")).filter(Boolean) : []);
    // the count of the quiet time comes in one notification at its end
    await waitFor(
      () => lines().some((l) => /more approval requests?/.test(l)),
      30_000,
      "the burst's notification",
    );
    const told = lines();
    expect(told[0]).toMatch(/^tool adjust_inventory on server inventory/);
    // far fewer notifiers than requests: one at once, then one per quiet time (5 s) at most
    expect(told.length).toBeLessThan(6);
    const counted = told
      .map((l) => /^(\d+) more approval requests?/.exec(l)?.[1])
      .filter((n): n is string => n !== undefined)
      .reduce((sum, n) => sum + Number(n), 0);
    // every request made so far is told, at once or counted (the last quiet time may still run)
    await waitFor(
      () => {
        const all = lines();
        const n = all
          .map((l) => /^(\d+) more/.exec(l)?.[1])
          .filter(Boolean)
          .reduce((s, x) => s + Number(x), 0);
        return 1 + n >= calls ? all : null;
      },
      30_000,
      "every request told",
    );
    expect(counted).toBeGreaterThan(0);
  }, 90_000);

  it("past 50 requests of the run waiting for a human, a call that would make a new one is refused, saying so", async () => {
    const stateDir = newStateDir();
    const project = makeProject("A");
    cleanup.push(() => project.cleanup());
    const gw = await startInventory(project, ["--approval", "per-call", "--approval-timeout", "40000"], {
      stateDir,
      credentials: true,
    });
    cleanup.push(() => gw.close());
    await gw.client.listTools();
    const refused: string[] = [];
    for (let i = 0; i < 60; i++)
      void gw.client
        .callTool({ name: "adjust_inventory", arguments: { sku: `S-${i}`, delta: i } })
        .catch((e: Error) => refused.push(e.message));
    await waitFor(() => (refused.length >= 10 ? refused : null), 30_000, "ten calls refused");
    expect(
      refused.every((m) => /50 approval requests of this agent run already wait for a human/.test(m)),
    ).toBe(true);
    await waitFor(() => storedPending(stateDir).length >= 50 || null, 30_000, "fifty requests stored");
    expect(storedPending(stateDir)).toHaveLength(50);
  }, 90_000);
});
