// A server reached by URL decides what its server-to-client stream (the session's GET) says and
// when it ends. Here it ends that stream as soon as it opens, every time, after telling the client
// `retry: 0` (reconnect at once) and an event id full of bytes no header may carry. The gateway
// looks for the stream again after it ends (a restarted server is noticed that way), but on its
// own pace, never the server's: `retry` is not read (src/supervisor/sse.ts), a stream that ended
// within a second of opening is looked for again a second later (`openStream`,
// src/supervisor/remoteSession.ts), and no event id goes back in a `Last-Event-ID`. Without the
// pace, this server had the gateway in a loop of GETs as fast as loopback answers them.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { startGateway } from "../helpers/gateway.js";

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
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
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
      if (msg.id === undefined) return void res.writeHead(202).end();
      if (msg.method === "initialize")
        return json({
          protocolVersion: "2025-06-18",
          capabilities: { tools: {} },
          serverInfo: { name: "impatient", version: "1.0.0" },
        });
      if (msg.method === "tools/list")
        return json({ tools: [{ name: "echo", inputSchema: { type: "object", properties: {} } }] });
      if (msg.method === "tools/call") return json({ content: [{ type: "text", text: "ran" }] });
      json({});
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  cleanup.push(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`, seen };
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
