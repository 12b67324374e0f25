// A server reached by `run --url` that sends the client requests (on a call's SSE stream) under
// ids JSON.parse would round or respell: each answer reaches the server under the id exactly as
// the server wrote it. The server reports the id text of every answer it received.
import { afterEach, describe, expect, it } from "vitest";
import { type RawPeer, rawGateway } from "../helpers/raw.js";
import { SERVER_IDS } from "../relay/serverIds.js";
import { HOSTILE, startFixture } from "./upstreamFixture.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

describe("the requests of a server reached by URL", () => {
  it("are answered under the id as the server wrote it", async () => {
    const server = await startFixture({}, null, 0, HOSTILE);
    cleanup.push(() => server.kill());
    const peer: RawPeer = rawGateway({
      args: ["--label", "hostile", "--url", server.url, "--approval", "none"],
    });
    cleanup.push(() => peer.close());
    await peer.initialize();
    peer.send({
      jsonrpc: "2.0",
      id: "ask",
      method: "tools/call",
      params: { name: "bad", arguments: { mode: "ask", ids: SERVER_IDS } },
    });
    for (let i = 0; i < SERVER_IDS.length; i++) {
      const req = await peer.next((m) => m.method !== undefined && m.params?.marker === `k${i}`, 20_000);
      expect(typeof req.id).toBe("number");
      peer.send({ jsonrpc: "2.0", id: req.id, result: { marker: `k${i}` } });
    }
    const done = await peer.next((m) => m.id === "ask", 20_000);
    expect(done.error).toBeUndefined();
    const received = new Map(JSON.parse(done.result.content[0].text) as [string, string][]);
    expect(received.size).toBe(SERVER_IDS.length);
    SERVER_IDS.forEach((id, i) => {
      expect(received.get(id), `the answer under ${id.slice(0, 40)}`).toBe(`k${i}`);
    });
  });
});
