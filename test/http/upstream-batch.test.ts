// A server reached by `run --url` that answers with JSON-RPC batches (the 2025-03-26 revision
// allowed them): each message of a batch reaches the gateway as the server wrote it and is read
// by the same checks as any message (the shared id check, the depth limit), never written again
// from its parsed value. A hostile server (test/fixtures/servers/http-hostile.mjs), real
// processes over real HTTP.
import { afterEach, describe, expect, it } from "vitest";
import { waitFor } from "../helpers/files.js";
import { type RawPeer, rawGateway } from "../helpers/raw.js";
import { SERVER_IDS } from "../relay/serverIds.js";
import { HOSTILE, startFixture } from "./upstreamFixture.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

async function hostileGateway(): Promise<RawPeer> {
  const server = await startFixture({}, null, 0, HOSTILE);
  cleanup.push(() => server.kill());
  const peer = rawGateway({ args: ["--label", "hostile", "--url", server.url, "--approval", "none"] });
  cleanup.push(() => peer.close());
  await peer.initialize();
  return peer;
}

describe("a batch from a server reached by URL", () => {
  it("of the server's requests: each is answered under its id as written, one nested too deep with an error", async () => {
    const peer = await hostileGateway();
    peer.send({
      jsonrpc: "2.0",
      id: "ask",
      method: "tools/call",
      params: { name: "bad", arguments: { mode: "askbatch", ids: SERVER_IDS } },
    });
    for (let i = 0; i < SERVER_IDS.length; i++) {
      const req = await peer.next((m) => m.method !== undefined && m.params?.marker === `k${i}`, 20_000);
      peer.send({ jsonrpc: "2.0", id: req.id, result: { marker: `k${i}` } });
    }
    // the server finishes the call once every request of the batch is answered, deep-ping too
    const done = await peer.next((m) => m.id === "ask", 20_000);
    expect(done.error).toBeUndefined();
    const received = JSON.parse(done.result.content[0].text) as [string, string | null][];
    // 9007199254740993 and …992, 1e2 and 100, 1.0 and 1, -0 and 0 stay apart: each answer under
    // the id it belongs to, none under its neighbour's
    expect(new Map(received)).toEqual(
      new Map([...SERVER_IDS.map((id, i) => [id, `k${i}`] as const), ['"deep-ping"', null]]),
    );
    expect(received).toHaveLength(SERVER_IDS.length + 1);
    // (stderr and the answers travel on different pipes: waited for, not read at once)
    const dropped = /dropped a message from the server nested deeper than 512 levels/;
    await waitFor(() => dropped.test(peer.stderr()), 10_000, "the line saying the deep message was dropped");
  });

  it("of answers under ids that are no ids (1e400), one nested too deep, one to nobody: dropped; the call gets its own answer; the gateway serves on", async () => {
    const peer = await hostileGateway();
    peer.send({
      jsonrpc: "2.0",
      id: 7,
      method: "tools/call",
      params: { name: "bad", arguments: { mode: "oddbatch" } },
    });
    const answer = await peer.next((m) => m.id === 7, 20_000);
    expect(answer.error).toBeUndefined();
    expect(answer.result.content[0].text).toBe("batch answer");
    // nothing else reached the client as an answer (under null or any other id)
    peer.send({
      jsonrpc: "2.0",
      id: 8,
      method: "tools/call",
      params: { name: "bad", arguments: { mode: "fine" } },
    });
    const next = await peer.next((m) => m.method === undefined, 20_000);
    expect(next.id).toBe(8);
    expect(next.result.content[0].text).toBe("ok fine");
    // the lines come on stderr, what was awaited on another pipe: read in either order
    await waitFor(
      () => /response without a valid id/.test(peer.stderr()) && /unknown id 987654/.test(peer.stderr()),
      20_000,
      "the gateway's lines on the dropped answers",
    );
    const err = peer.stderr();
    expect(err).toMatch(/dropped an invalid message from the server: response without a valid id/);
    expect(err).toMatch(/dropped a response from the server with an unknown id 987654/);
    expect(err).not.toMatch(/TypeError|Unhandled|at .*\.js:\d+/);
  });
});
