// The modern era's side of first-initialize-rebuilt.test.ts: a client whose first request is
// server/discover (2026-07-28), the server's worker swapped under a watcher while that request
// waits for its answer. A server answers server/discover before it reads what follows it, as it
// does an initialize, so the gateway's probe (a ping of its own written behind it) says whether
// the gone worker took it: answered while the server/discover is not, the request was lost, the
// epoch is replaced and the request answered epoch_transition, as for a crash. Before the probe
// covered server/discover, the request waited for an answer that never came (the client's own
// timeout). Real gateway, real processes.
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { auditEvents } from "../helpers/approvals.js";
import { loggedMethod, readJsonLines, removeDir, tempDir, waitFor } from "../helpers/files.js";
import { modernMeta } from "../helpers/modernMeta.js";
import { watcherPeer } from "../helpers/watcherPeer.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const META = modernMeta({}, { name: "raw", version: "1" });

describe("a client's first server/discover lost to a rebuild", () => {
  it("the watcher replaces its worker while the client's first server/discover waits: answered epoch_transition, a new epoch, and the request sent again is answered by the new worker", async () => {
    const dir = tempDir("portcullis-first-discover-replaced-");
    cleanup.push(() => removeDir(dir));
    const hold = join(dir, "hold");
    const methods = join(dir, "methods.jsonl");
    const starts = join(dir, "starts.jsonl");
    writeFileSync(hold, ""); // the first worker holds the client's server/discover unanswered
    const peer = watcherPeer("first-discover-replaced", {
      FIXTURE_INIT_HOLD: hold,
      FIXTURE_METHOD_LOG: methods,
      FIXTURE_STARTS: starts,
    });
    cleanup.push(() => peer.close());
    peer.send({ jsonrpc: "2.0", id: "discover:1", method: "server/discover", params: { _meta: META } });
    await loggedMethod(methods, "held server/discover", "the first worker holding the server/discover");
    const { watcher: watcherPid, pid: workerPid } = readJsonLines<{ watcher: number; pid: number }>(
      starts,
    )[0]!;
    await waitFor(
      () => peer.stderr().includes(`before its first answer, process ${workerPid} `) || undefined,
      20_000,
      "the worker seen on the gateway's pipe before its first answer",
    );
    process.kill(watcherPid, "SIGHUP"); // the watcher replaces its worker: a rebuild
    const lost = await peer.next((m) => m.id === "discover:1", 30_000);
    expect(lost.error, `${JSON.stringify(lost)}\n${peer.stderr()}`).toMatchObject({
      code: -32054,
      data: { error: "epoch_transition", retried: false },
    });
    // a request that changes nothing: told to send it again, not to check whether a call ran
    expect((lost.error as { data: { retry: string; reason: string } }).data).toMatchObject({
      reason: "server execution epoch changed while server/discover was in flight",
      retry: expect.stringMatching(/^send server\/discover again/),
    });
    expect(peer.stderr()).toMatch(/the client's server\/discover was lost with the server's worker/);
    expect(peer.stderr()).toMatch(/running server replaced: /);
    rmSync(hold);

    const again = await peer.request("server/discover", { _meta: META }, 20_000);
    expect(again.result, `${JSON.stringify(again)}\n${peer.stderr()}`).toMatchObject({
      capabilities: expect.any(Object),
    });
    const list = await peer.request("tools/list", { _meta: META }, 20_000);
    expect(list.result, JSON.stringify(list)).toMatchObject({ tools: expect.any(Array) });
    const workers = readJsonLines<{ pid: number }>(starts).map((s) => s.pid);
    expect(workers).toHaveLength(2);
    // the new worker: the gateway's probe (answered), then the client's own requests
    const second = readJsonLines<{ pid: number; method: string }>(methods)
      .filter((m) => m.pid === workers[1])
      .map((m) => m.method);
    expect(second[0]).toBe("ping");
    expect(second).toContain("server/discover");
    expect(second).toContain("tools/list");
    const events = await auditEvents(peer.stateDir);
    expect(events.filter((e) => e.type === "server_replaced").length, JSON.stringify(events)).toBe(1);
  }, 90_000);
});
