// A server reached by URL decides what its server-to-client stream (the session's GET) says and
// when it ends. Here it ends that stream as soon as it opens, every time, after telling the client
// `retry: 0` (reconnect at once) and an event id full of bytes no header may carry. The gateway
// looks for the stream again after it ends (a restarted server is noticed that way), but on its
// own pace, never the server's: `retry` is not read (src/supervisor/sse.ts), a stream that ended
// within a second of opening is looked for again a second later (`openStream`,
// src/supervisor/remoteSession.ts), and no event id goes back in a `Last-Event-ID`. Without the
// pace, this server had the gateway in a loop of GETs as fast as loopback answers them.
import type { IncomingMessage, ServerResponse } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { startGateway } from "../helpers/gateway.js";
import { answerWithEchoTool, serveOnLoopback } from "../helpers/loopbackMcpServer.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

interface Seen {
  method: string;
  lastEventId: string | null;
}

async function impatientServer(): Promise<{ url: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  const { url } = await serveOnLoopback((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (b: Buffer) => chunks.push(b));
    req.on("end", () => {
      seen.push({
        method: req.method ?? "",
        lastEventId: (req.headers["last-event-id"] as string | undefined) ?? null,
      });
      if (req.method === "GET") {
        // retry 0, a hostile id (a byte past U+00FF and a CR-free control character), then gone
        res.writeHead(200, { "content-type": "text/event-stream" });
        return void res.end(`retry: 0\nid: \u0001\u4e2d${"x".repeat(2000)}\n: bye\n\n`);
      }
      if (req.method === "DELETE") return void res.writeHead(200).end();
      const msg = JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}") as {
        id?: unknown;
        method?: string;
      };
      const json = (result: unknown) =>
        res
          .writeHead(200, { "content-type": "application/json", "mcp-session-id": "impatient-1" })
          .end(JSON.stringify({ jsonrpc: "2.0", id: msg.id, result }));
      answerWithEchoTool(res, msg, json, { name: "impatient", protocolVersion: "2025-06-18" });
    });
  }, cleanup);
  return { url, seen };
}

describe("a remote server whose stream ends at once, saying retry: 0", () => {
  it("is looked for again about once a second, never with its event id; the epoch and the calls go on", async () => {
    const upstream = await impatientServer();
    const gw = await startGateway({ args: ["--url", upstream.url, "--approval", "none"] });
    cleanup.push(() => gw.close());
    await gw.client.listTools();
    const firstGet = upstream.seen.filter((s) => s.method === "GET").length;
    expect(firstGet).toBeGreaterThan(0);
    await new Promise((r) => setTimeout(r, 3000));
    const gets = upstream.seen.filter((s) => s.method === "GET");
    // three seconds at one a second, with room for a slow start: not the hundreds a loop makes
    expect(gets.length - firstGet, `${gets.length} GETs`).toBeLessThanOrEqual(5);
    expect(gets.map((g) => g.lastEventId)).toEqual(gets.map(() => null));
    const r = (await gw.client.callTool({ name: "echo", arguments: {} })) as { content: { text: string }[] };
    expect(r.content[0]!.text).toBe("ran");
    // one session throughout: the stream's ends are no lost session
    expect(upstream.seen.filter((s) => s.method === "POST").length).toBeLessThanOrEqual(4);
    expect(gw.stderr()).not.toMatch(/TypeError|Unhandled|ERR_INVALID_CHAR/);
  });
});
