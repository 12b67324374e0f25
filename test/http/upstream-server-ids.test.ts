// A server reached by `run --url` that sends the client requests (on a call's SSE stream) under
// ids JSON.parse would round or respell: each answer reaches the server under the id exactly as
// the server wrote it. The server reports the id text of every answer it received. Through a
// stdio client, and through the HTTP front (`run --listen --url`), answered by POST.
import { request } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { type RawPeer, rawGateway } from "../helpers/raw.js";
import { SERVER_IDS } from "../relay/serverIds.js";
import { type Listener, startListener } from "./listen.js";
import { openSession, raw } from "./raw.js";
import { HOSTILE, startFixture } from "./upstreamFixture.js";

/** POSTs `body` and hands each SSE message to `onMessage` as it arrives; resolves at the stream's end. */
function streamPost(
  l: Listener,
  headers: Record<string, string>,
  body: string,
  onMessage: (m: { id?: unknown; method?: string; params?: { marker?: string }; result?: unknown }) => void,
): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port: l.port, path: "/mcp", method: "POST", headers }, (res) => {
      let buffer = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        buffer += chunk;
        for (let end = buffer.indexOf("\n\n"); end !== -1; end = buffer.indexOf("\n\n")) {
          const event = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          for (const line of event.split("\n"))
            if (line.startsWith("data: ") && line.length > 6) onMessage(JSON.parse(line.slice(6)));
        }
      });
      res.on("end", () => resolve(res.statusCode ?? 0));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(body);
  });
}

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

  it("are answered under the id as the server wrote it through the HTTP front (run --listen --url)", async () => {
    const server = await startFixture({}, null, 0, HOSTILE);
    cleanup.push(() => server.kill());
    const l = await startListener([], { args: ["--approval", "none", "--url", server.url] });
    cleanup.push(() => l.close());
    const session = await openSession(l);
    const h = l.headers({ "mcp-session-id": session });
    const answers: Promise<number>[] = [];
    let done: unknown = null;
    const status = await streamPost(
      l,
      h,
      JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "tools/call",
        params: { name: "bad", arguments: { mode: "ask", ids: SERVER_IDS } },
      }),
      (m) => {
        if (m.method !== undefined) {
          // a request of the server's, on the call's stream: answered by a POST of its own
          const body = JSON.stringify({ jsonrpc: "2.0", id: m.id, result: { marker: m.params?.marker } });
          answers.push(raw(l, { headers: h, body }).then((r) => r.status));
        } else if (m.id === 1) done = m.result;
      },
    );
    expect(status).toBe(200);
    expect(await Promise.all(answers)).toEqual(SERVER_IDS.map(() => 202));
    const text = (done as { content: { text: string }[] }).content[0]!.text;
    const received = new Map(JSON.parse(text) as [string, string][]);
    SERVER_IDS.forEach((id, i) => {
      expect(received.get(id), `the answer under ${id.slice(0, 40)}`).toBe(`k${i}`);
    });
  });
});
