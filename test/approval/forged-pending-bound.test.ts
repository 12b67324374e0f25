// The bound on a run's pending approval requests (50, src/approval/askHuman.ts) counts the
// requests the gateway made itself, not the store's pending rows naming its run. Any process of
// the user can write such rows: 60 copies of a real request, naming the live run, made the gateway
// refuse every later call that needed a human ("50 approval requests of this agent run already
// wait for a human"), asking nobody. The bound's purpose stands: with the forged rows there, the
// agent's own flood is still refused past 50 of its requests, and one of them decided frees a place.
// Real gateway, real fixture server, rows written with SQLite, decisions through the real CLI.
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterEach, describe, expect, it } from "vitest";
import { decideByCli, nextRequest, type Pending, storedPending } from "../helpers/approvals.js";
import { waitFor } from "../helpers/files.js";
import { forgeManyInSameRun, forgeNewerInSameRun } from "../helpers/forgedRequests.js";
import { type Session, startInventory } from "../helpers/gateway.js";
import { makeProject } from "../helpers/project.js";
import { newStateDir } from "../helpers/state.js";

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup.length = 0;
});

/** More forged rows than the bound: on their own they reached it. */
const FORGED = 60;

/** The refusal of a call past the bound (src/guard/refusals.ts, tooManyPending). */
const TOO_MANY = /50 approval requests of this agent run already wait for a human/;

type Gateway = Session<Client>;

/**
 * A gateway asking a human for every call of `adjust_inventory`, with one real request made and
 * FORGED copies of it naming its run written beside it; `seen` holds every ID so far.
 */
async function gatewayWithForgedRows(): Promise<{
  gw: Gateway;
  stateDir: string;
  seen: Set<string>;
  first: Pending;
  firstCall: Promise<{ isError?: unknown }>;
}> {
  const stateDir = newStateDir();
  const project = makeProject("A");
  cleanup.push(() => project.cleanup());
  const gw = await startInventory(project, ["--approval", "per-call", "--approval-timeout", "60000"], {
    stateDir,
    credentials: true,
  });
  cleanup.push(() => gw.close());
  await gw.client.listTools();
  const seen = new Set<string>();
  const firstCall = call(gw, "S-first");
  firstCall.catch(() => {});
  const first = await nextRequest(stateDir, seen, storedPending);
  const forged = Array.from({ length: FORGED }, (_, i) => `forged-${i}`);
  forgeManyInSameRun(stateDir, first.request, forged);
  for (const id of forged) seen.add(id);
  // the rows name the live run, as the gateway's own do
  const ofRun = storedPending(stateDir).filter((r) => r.agentRun === first.agentRun);
  expect(ofRun.length).toBe(FORGED + 1);
  return { gw, stateDir, seen, first, firstCall };
}

function call(gw: Gateway, sku: string): Promise<{ isError?: unknown }> {
  return gw.client.callTool({ name: "adjust_inventory", arguments: { sku, delta: 1 } }, undefined, {
    timeout: 90_000,
  }) as Promise<{ isError?: unknown }>;
}

describe("forged pending rows naming a live run", () => {
  it("do not stop its gateway asking a human: a new call makes a request, listed and approved", async () => {
    const { gw, stateDir, seen, first, firstCall } = await gatewayWithForgedRows();
    const second = call(gw, "S-second");
    // The request the call makes, or the call's own answer if it made none (refused at once).
    const made = await Promise.race([
      nextRequest(stateDir, seen),
      second.then(
        (r) => Promise.reject(new Error(`the call was answered without a request: ${JSON.stringify(r)}`)),
        (e: Error) => Promise.reject(new Error(`the call was refused without a request: ${e.message}`)),
      ),
    ]);
    // listed by `portcullis approvals --json` (nextRequest reads it), the gateway's own
    expect(made.agentRun).toBe(first.agentRun);
    expect(made.tool).toBe("adjust_inventory");
    await decideByCli(stateDir, "approve", made.request);
    expect((await second).isError).toBeFalsy();
    // and the first call's request is decided as before
    await decideByCli(stateDir, "approve", first.request);
    expect((await firstCall).isError).toBeFalsy();
  }, 60_000);

  it("leave the agent's own flood refused past 50 of its requests, and a decided one frees a place", async () => {
    const { gw, stateDir, seen } = await gatewayWithForgedRows();
    const refused: string[] = [];
    // 49 more of its own make 50 with the first; 5 past them are refused
    for (let i = 0; i < 54; i++) call(gw, `S-${i}`).catch((e: Error) => refused.push(e.message));
    // each call either made a request of its own or was refused
    const own = () => storedPending(stateDir).filter((r) => !r.request.startsWith("forged-"));
    await waitFor(() => refused.length + own().length >= 55 || null, 30_000, "every call asked or refused");
    expect(refused.every((m) => TOO_MANY.test(m))).toBe(true);
    expect(own()).toHaveLength(50);
    expect(refused).toHaveLength(5);
    // one of its own denied: the next call asks a human again
    const mine = own();
    for (const r of mine) seen.add(r.request);
    await decideByCli(stateDir, "deny", mine[0]!.request);
    const next = call(gw, "S-after-deny");
    next.catch(() => {});
    const made = await Promise.race([
      nextRequest(stateDir, seen, storedPending),
      next.then(
        () => Promise.reject(new Error("answered without a request")),
        (e: Error) => Promise.reject(new Error(`refused without a request: ${e.message}`)),
      ),
    ]);
    expect(made.tool).toBe("adjust_inventory");
    expect(made.request.startsWith("forged-")).toBe(false);
  }, 60_000);

  it("are never joined by a retry: a copy dated after the gateway's request is passed over, the retry joins the gateway's own", async () => {
    const stateDir = newStateDir();
    const project = makeProject("A");
    cleanup.push(() => project.cleanup());
    const gw = await startInventory(project, ["--approval", "session", "--approval-timeout", "60000"], {
      stateDir,
    });
    cleanup.push(() => gw.close());
    await gw.client.listTools();
    const status = () =>
      gw.client.callTool({ name: "read_status", arguments: {} }, undefined, { timeout: 90_000 }) as Promise<{
        isError?: unknown;
      }>;
    const first = status();
    first.catch(() => {});
    const seen = new Set<string>();
    const own = await nextRequest(stateDir, seen, storedPending);
    // the newest request of this very call is now the copy: before, the retry joined it and waited
    // for a decision that could never verify (the gateway never wrote that review)
    forgeNewerInSameRun(stateDir, own.request, "forged-newer");
    const retry = status();
    retry.catch(() => {});
    const joined = await gw.waitForStderr(/joins approval request \S+/, 20_000);
    expect(joined).toContain(`joins approval request ${own.request}`);
    expect(joined).not.toContain("forged-newer");
    // one decision of the gateway's own request answers both calls
    await decideByCli(stateDir, "approve", own.request);
    expect((await first).isError).toBeFalsy();
    expect((await retry).isError).toBeFalsy();
  }, 60_000);
});
