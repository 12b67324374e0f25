// A cancellation the gateway cannot hand to the server (link.send is false: the server's stdin
// pipe broke while the process still runs, and it is being stopped for that; src/gateway/
// clientMessages.ts says why ignoring it is safe). Real processes: the crashy fixture closes its
// stdin in the middle of a call and runs on. The cancellation is whole on the gateway's side all
// the same: the call gets no answer (MCP), its one end is recorded as cancelled (never a second
// one when its epoch ends), the other call at that process is answered epoch_transition, and a
// respawned server serves the next call.
import { afterEach, describe, expect, it } from "vitest";
import { auditEvents } from "../helpers/approvals.js";
import { readJsonLines, sleep, tempDir, waitFor } from "../helpers/files.js";
import { fixtureCommand } from "../helpers/paths.js";
import { type RawGateway, rawGateway } from "../helpers/raw.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

describe("a cancellation that cannot reach the server", () => {
  it("the stdin pipe broke: the cancelled call gets no answer, one end, and the next server serves", async () => {
    const starts = `${tempDir("portcullis-pipes-")}/starts.jsonl`;
    const gw: RawGateway = rawGateway({
      args: ["--label", "pipes", "--approval", "none", "--", ...fixtureCommand("crashy")],
      env: { FIXTURE_CLOSE: "on-call", FIXTURE_STARTS: starts, PORTCULLIS_RESPAWN_BACKOFF_MS: "20" },
    });
    cleanup.push(() => gw.close());
    await gw.initialize();
    expect((await gw.request("tools/list", {}, 10_000)).result).toBeDefined();
    gw.send({
      jsonrpc: "2.0",
      id: "close",
      method: "tools/call",
      params: { name: "close_stdin", arguments: {} },
    });
    await waitFor(() => /closed its stdin, still running/.test(gw.stderr()), 10_000, "the fixture's close");
    // written to a pipe nobody reads: EPIPE, and the pipe is gone (the process still runs, and is
    // stopped half a second later). The pause lets the EPIPE come first, so that the cancellation
    // meets a pipe that cannot be written (link.send false; seen so with a debug line): had it
    // come first, it would be written into the broken pipe instead, and all below holds the same.
    gw.send({ jsonrpc: "2.0", id: "noop", method: "tools/call", params: { name: "noop", arguments: {} } });
    await sleep(100);
    gw.send({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: "close" } });
    const noop = await gw.next((m) => m.id === "noop", 10_000);
    expect(noop.error).toMatchObject({ data: { error: "epoch_transition" } });
    // a respawned server serves
    const served = await waitFor(
      async () => {
        const r = await gw.request("tools/call", { name: "noop", arguments: {} }, 10_000);
        return r.result ? r : null;
      },
      15_000,
      "a call served by the respawned server",
    );
    expect(served.result).toBeDefined();
    expect(readJsonLines(starts).length).toBe(2);
    // the cancelled call: never answered, one end
    expect(gw.messages().filter((m) => m.id === "close")).toEqual([]);
    gw.closeStdin();
    await gw.exited;
    const ends = (await auditEvents(gw.stateDir)).filter(
      (e) => (e.type === "call_interrupted" || e.type === "tool_result") && e.requestId === "close",
    );
    expect(ends).toHaveLength(1);
    expect(ends[0]).toMatchObject({ type: "call_interrupted", reason: "cancelled", outcome: "unknown" });
  });
});
