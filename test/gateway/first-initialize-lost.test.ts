// A client whose FIRST initialize is lost because the launched server process went away holding
// it (it exits as the initialize arrives) is told to send initialize again; its next initialize,
// sent at once (before the respawn), reaches the respawned process: the session starts normally.
// Nothing was negotiated, so there is no handshake to replay (ClientSession.replayInitialize): the
// client's own is the new process's handshake. Before, an initialize sent before the respawn was
// refused server_unavailable ("no live server process"), and a client that gives up on a failed
// initialize (the SDK's, as most) never started. Real gateway, real fixture process.
import { afterEach, describe, expect, it } from "vitest";
import { auditEvents } from "../helpers/approvals.js";
import { readJsonLines, tempDir, waitFor } from "../helpers/files.js";
import { fixtureCommand } from "../helpers/paths.js";
import { rawGateway } from "../helpers/raw.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

describe("a client's first initialize lost with its launched server process", () => {
  it("the process exits at initialize: the client's next initialize, sent at once, reaches the respawned one", async () => {
    const dir = tempDir("portcullis-first-init-");
    const starts = `${dir}/starts.jsonl`;
    const received = `${dir}/received.jsonl`;
    const peer = rawGateway({
      args: ["--label", "first-init", "--approval", "none", "--", ...fixtureCommand("crashy")],
      // a respawn well after the client's next initialize: it must wait for it, not be refused
      env: {
        FIXTURE_EXIT_AT_INITIALIZE: `${dir}/exited`,
        FIXTURE_STARTS: starts,
        FIXTURE_RECEIVED: received,
        PORTCULLIS_RESPAWN_BACKOFF_MS: "1000",
      },
    });
    cleanup.push(() => peer.close());
    const lost = await peer.request(
      "initialize",
      { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
      20_000,
    );
    expect(lost.error, JSON.stringify(lost)).toMatchObject({
      code: -32054,
      data: { error: "epoch_transition", retried: false },
    });
    expect((lost.error as { data: { retry: string } }).data.retry).toMatch(/send initialize again/);
    const init = await peer.initialize({}, 20_000);
    expect(init.result, `${JSON.stringify(init)}\n${peer.stderr()}`).toMatchObject({
      serverInfo: { name: "crashy-fixture" },
    });
    const list = await peer.request("tools/list", undefined, 20_000);
    expect(list.result, JSON.stringify(list)).toMatchObject({
      tools: expect.arrayContaining([expect.objectContaining({ name: "noop" })]),
    });
    const call = await peer.request("tools/call", { name: "noop", arguments: {} }, 20_000);
    const pids = readJsonLines<{ pid: number }>(starts).map((s) => s.pid);
    expect(pids).toHaveLength(2);
    expect(call.result, JSON.stringify(call)).toMatchObject({ content: [{ text: `noop ${pids[1]}` }] });
    const events = await auditEvents(peer.stateDir);
    const started = events.filter((e) => e.type === "server_started");
    expect(started).toHaveLength(2);
    // the call was recorded against the respawned process's epoch, after it was recorded
    const called = events.find((e) => e.type === "tool_called") as { epoch?: string } | undefined;
    expect(called?.epoch).toBe((started[1] as { epoch?: string }).epoch);
    expect(events.indexOf(called as never)).toBeGreaterThan(events.indexOf(started[1]!));
    // the respawned process got the client's initialize first, and its list only once initialized
    const second = readJsonLines<{ pid: number; method: string }>(received).filter((r) => r.pid === pids[1]);
    expect(second.map((r) => r.method)).toEqual([
      "initialize",
      "notifications/initialized",
      "tools/list",
      "tools/call",
    ]);
  });

  it("until the client sends initialize again it is told to, at once; its notifications/initialized of the lost one reaches nobody", async () => {
    const dir = tempDir("portcullis-first-init-");
    const received = `${dir}/received.jsonl`;
    const peer = rawGateway({
      args: ["--label", "first-init", "--approval", "none", "--", ...fixtureCommand("crashy")],
      env: {
        FIXTURE_EXIT_AT_INITIALIZE: `${dir}/exited`,
        FIXTURE_RECEIVED: received,
        PORTCULLIS_RESPAWN_BACKOFF_MS: "20",
      },
    });
    cleanup.push(() => peer.close());
    const lost = await peer.request(
      "initialize",
      { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "raw", version: "1" } },
      20_000,
    );
    expect(lost.error).toMatchObject({ data: { error: "epoch_transition" } });
    await waitFor(() => /new execution epoch/.test(peer.stderr()), 20_000, "the respawn");
    // a client that goes on as if its initialize had been answered
    peer.send({ jsonrpc: "2.0", method: "notifications/initialized" });
    const list = await peer.request("tools/list", undefined, 20_000);
    expect(list.error, JSON.stringify(list)).toMatchObject({
      code: -32600,
      data: { error: "not_initialized" },
    });
    const init = await peer.initialize({}, 20_000);
    expect(init.result, JSON.stringify(init)).toMatchObject({ serverInfo: { name: "crashy-fixture" } });
    const listed = await peer.request("tools/list", undefined, 20_000);
    expect(listed.result, JSON.stringify(listed)).toBeDefined();
    const byPid = readJsonLines<{ pid: number; method: string }>(received);
    const respawned = byPid.filter((r) => r.pid !== byPid[0]!.pid).map((r) => r.method);
    expect(respawned).toEqual(["initialize", "notifications/initialized", "tools/list"]);
  });
});
