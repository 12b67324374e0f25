// What a gateway records of the calls waiting on a request is best effort, never a call's burden:
// while another process holds the store's write lock (a database browser with an unsaved edit),
// a call the client cancels is over at once and the gateway goes on answering; the row, which
// cannot be written meanwhile, still says a call waits, and says the client cancelled it once the
// lock is given back (the mark kept and tried again), as `approvals --json` then shows.
import { afterEach, describe, expect, it } from "vitest";
import { openStoreToRead } from "../../src/store/db.js";
import { nextStoredRequest } from "../helpers/approvals.js";
import { deployGateway } from "../helpers/deployGateway.js";
import { waitFor } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { holdStoreLock } from "../helpers/lock.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

function callWaitOf(stateDir: string, request: string): string | null {
  const db = openStoreToRead(stateDir);
  try {
    return (
      db.prepare("SELECT call_wait FROM approval_requests WHERE request = ?").get(request) as {
        call_wait: string | null;
      }
    ).call_wait;
  } finally {
    db.close();
  }
}

describe("a call cancelled while another process holds the store's lock", () => {
  it("is over at once; its request's row says so once the lock is given back", async () => {
    const gw = await deployGateway("session", 600_000, cleanup);
    gw.send({
      jsonrpc: "2.0",
      id: "first",
      method: "tools/call",
      params: { name: "deploy", arguments: { note: "ship it" } },
    });
    const { request } = await nextStoredRequest(gw.stateDir);
    expect(callWaitOf(gw.stateDir, request)).toBe("waiting");

    const lock = await holdStoreLock(gw.stateDir);
    let held = true;
    cleanup.push(() => (held ? lock.release() : undefined));
    gw.send({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: "first" } });
    await waitFor(
      () => gw.stderr().includes(`approval request ${request} stays pending for a retry`) || null,
      20_000,
      "the call to stop waiting",
    );
    // the gateway goes on: a ping is answered while the lock is held
    expect((await gw.request("ping", {}, 5_000)).result).toEqual({});
    // (readers are not kept out by a writer's lock; the row could not be written)
    expect(callWaitOf(gw.stateDir, request)).toBe("waiting");

    held = false;
    await lock.release();
    await waitFor(
      () => callWaitOf(gw.stateDir, request) === "cancelled" || null,
      20_000,
      "the kept mark to be written once the lock is free",
    );
    const r = await runCli(["approvals", "--json", "--state-dir", gw.stateDir]);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).requests).toMatchObject([
      { request, callWaiting: false, callLeft: { how: "cancelled" } },
    ]);
    expect(gw.stderr()).not.toMatch(/internal error|SQLITE_BUSY|at .*\.cjs:\d+/);
  });
});
