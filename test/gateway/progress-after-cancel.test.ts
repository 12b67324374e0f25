// A call waiting for a human hears of it by notifications/progress under its token, and hears
// nothing more once its client cancelled it. The cancellation frees the token (a later request may
// use it and counts from its own first step), so a progress notification the cancelled decision
// sent afterwards began again at 1 under a token the client had seen at 1 already: a value that
// did not go up, about a request that no longer existed. The races property test met it on a
// loaded machine (a call asking again after a rebuild, cancelled while its new request was being
// stored); here the store's write lock, held by another process, keeps the decision at that
// point while the cancellation arrives.
import { afterEach, describe, expect, it } from "vitest";
import { nextStoredRequest } from "../helpers/approvals.js";
import { deployGateway } from "../helpers/deployGateway.js";
import { sleep, waitFor } from "../helpers/files.js";
import { holdStoreLock } from "../helpers/lock.js";
import type { RawGateway } from "../helpers/raw.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

function progressUnder(gw: RawGateway, token: string): number[] {
  return gw
    .messages()
    .filter((m) => m.method === "notifications/progress")
    .map((m) => m.params as { progressToken: unknown; progress: number })
    .filter((p) => p.progressToken === token)
    .map((p) => p.progress);
}

describe("a call cancelled while its approval request is being stored", () => {
  it("gets no progress notification after the cancellation", async () => {
    const gw = await deployGateway("per-call", 600_000, cleanup);

    // a first call, waiting: its progress says so (the token's first value, 1)
    gw.send({
      jsonrpc: "2.0",
      id: "first",
      method: "tools/call",
      params: { name: "deploy", arguments: { note: "one" }, _meta: { progressToken: "tok-first" } },
    });
    await nextStoredRequest(gw.stateDir);
    await waitFor(
      () => progressUnder(gw, "tok-first").length === 1 || null,
      20_000,
      "the first call's progress",
    );

    // the second call's request cannot be stored while another process holds the lock
    const lock = await holdStoreLock(gw.stateDir);
    let held = true;
    cleanup.push(() => (held ? lock.release() : undefined));
    gw.send({
      jsonrpc: "2.0",
      id: "second",
      method: "tools/call",
      params: { name: "deploy", arguments: { note: "two" }, _meta: { progressToken: "tok-second" } },
    });
    // (answered while the second call's decision waits for the lock: the gateway has read it)
    expect((await gw.request("ping", {}, 10_000)).result).toEqual({});
    await sleep(300);
    expect(progressUnder(gw, "tok-second")).toEqual([]);
    gw.send({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: "second" } });
    expect((await gw.request("ping", {}, 10_000)).result).toEqual({});

    held = false;
    await lock.release();
    await waitFor(
      () => gw.stderr().match(/approval request \S+ stays pending for a retry/) || null,
      20_000,
      "the cancelled call to stop waiting once its request is stored",
    );
    // a progress notification the decision would send goes out before that line is written
    expect((await gw.request("ping", {}, 10_000)).result).toEqual({});
    expect(progressUnder(gw, "tok-second")).toEqual([]);
    // nor is any answer sent for the cancelled call
    expect(gw.messages().filter((m) => m.id === "second")).toEqual([]);
    // the first call, never cancelled, still hears of its wait (every 3 s: counting up from 1)
    const first = progressUnder(gw, "tok-first");
    expect(first).toEqual(first.map((_, k) => k + 1));
  });
});
