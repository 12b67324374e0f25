// A legacy client that already negotiated sends initialize again on the same pipe (the SDK's server
// answers a second initialize; a host that re-initializes its session does this) while no server
// process is up: between a crash and the respawn. As a first initialize lost to an epoch change is
// (first-initialize-lost.test.ts), it is carried to the next process rather than refused
// server_unavailable: there it waits behind the session's replayed handshake, which is the
// initialize a server ANSWERED, not this one (before, the gateway kept the unanswered one as the
// handshake to replay, and refused it). Real gateway, the lenient fixture logging every method.
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { readJsonLines, removeDir, tempDir, waitFor } from "../helpers/files.js";
import { FIXTURES, NODE } from "../helpers/paths.js";
import { rawGateway } from "../helpers/raw.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

describe("a negotiated client's initialize sent again while no server process is up", () => {
  it("is carried to the respawned process, after the replayed handshake of the initialize a server answered", async () => {
    const dir = tempDir("portcullis-init-again-");
    cleanup.push(() => removeDir(dir));
    const methods = join(dir, "methods.jsonl");
    const peer = rawGateway({
      args: ["--label", "init-again", "--approval", "none", "--", NODE, FIXTURES.lenient],
      // a respawn well after the client's initialize: it must wait for it, not be refused
      env: { FIXTURE_METHOD_LOG: methods, PORTCULLIS_RESPAWN_BACKOFF_MS: "1500" },
    });
    cleanup.push(() => peer.close());
    const first = await peer.initialize({ clientInfo: { name: "first", version: "1" } }, 20_000);
    expect(first.result, JSON.stringify(first)).toMatchObject({ serverInfo: { name: "lenient-fixture" } });
    expect((await peer.request("tools/list", undefined, 20_000)).result).toBeDefined();
    const pid = readJsonLines<{ pid: number }>(methods)[0]!.pid;
    process.kill(pid, "SIGKILL");
    await waitFor(() => /respawn|exited|killed/i.test(peer.stderr()) || undefined, 20_000, "the crash seen");
    const again = await peer.request(
      "initialize",
      { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "again", version: "2" } },
      20_000,
    );
    expect(again.result, `${JSON.stringify(again)}\n${peer.stderr()}`).toMatchObject({
      serverInfo: { name: "lenient-fixture" },
    });
    peer.send({ jsonrpc: "2.0", method: "notifications/initialized" });
    const list = await peer.request("tools/list", undefined, 20_000);
    expect(list.result, JSON.stringify(list)).toMatchObject({ tools: expect.any(Array) });
    const next = readJsonLines<{ pid: number; method: string; params: { clientInfo?: { name: string } } }>(
      methods,
    ).filter((m) => m.pid !== pid);
    // the session's handshake (the initialize the first process answered), then the client's own
    expect(next.slice(0, 3).map((m) => m.method)).toEqual([
      "initialize",
      "notifications/initialized",
      "initialize",
    ]);
    expect(next[0]!.params.clientInfo?.name).toBe("first");
    expect(next[2]!.params.clientInfo?.name).toBe("again");
    expect(next.map((m) => m.method)).toContain("tools/list");
    expect(peer.stderr()).not.toMatch(/unhandled|TypeError|at .*\.js:\d+/i);
  }, 90_000);
});
