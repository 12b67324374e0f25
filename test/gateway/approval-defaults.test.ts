// The defaults of a call that needs a human, with neither --approval-timeout nor --request-ttl
// given: its request stays pending 10 minutes, outliving the call; the call's own hold is 50 s,
// below common client timeouts. The hold is read where it shows without waiting it out: a
// request never ends before the hold of the call that raised it (askHuman.ts, newRequest), so
// under a shorter --request-ttl it lives exactly the hold.
import { describe, it } from "vitest";
import { nextRequest, storedPending } from "../helpers/approvals.js";
import { inventoryGateway } from "../helpers/inventoryGateway.js";
import { type Cleanup, teardownOf } from "../helpers/teardown.js";

/** How long the request raised by one call of adjust_inventory stays pending, in ms. */
async function requestLifetime(runArgs: string[], cleanup: Cleanup) {
  const { stateDir, gw } = await inventoryGateway("A", ["--approval", "per-call", ...runArgs], cleanup, {
    credentials: true,
  });
  // the client gives up after 1.5 s (the SDK cancels): the request stays pending all the same
  const call = gw.client
    .callTool({ name: "adjust_inventory", arguments: { sku: "S-1", delta: 1 } }, undefined, { timeout: 1500 })
    .catch((e: unknown) => e);
  const r = await nextRequest(stateDir, new Set(), storedPending);
  await call;
  return Date.parse(r.expiresAt) - Date.parse(r.createdAt);
}

describe.concurrent("a call that needs a human, under the default timings", () => {
  it("raises a request that stays pending 10 minutes", async ({ expect, onTestFinished }) => {
    expect(await requestLifetime([], teardownOf(onTestFinished))).toBe(10 * 60_000);
  });

  it("is held 50 s: a request given a shorter life still outlives that hold", async ({
    expect,
    onTestFinished,
  }) => {
    expect(await requestLifetime(["--request-ttl", "1000"], teardownOf(onTestFinished))).toBe(50_000);
  });
});
