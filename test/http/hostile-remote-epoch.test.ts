// A server reached by URL (`run --url`) that forgets its session and comes back speaking another
// protocol version, or that hands out a new Mcp-Session-Id mid-session. The server is real
// (node's HTTP server on loopback, in this process); the gateway is a real process.
import type { IncomingMessage, ServerResponse } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { startGateway } from "../helpers/gateway.js";
import { answerWithEchoTool, serveOnLoopback } from "../helpers/loopbackMcpServer.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

interface Moody {
  url: string;
  /** every request: its method, JSON-RPC method and Mcp-Session-Id */
  requests: { http: string; method: string | null; session: string | null }[];
  /** the server forgets every session; its next initialize answers `version` */
  restart(version: string): void;
  /** from now on, every answer carries another Mcp-Session-Id than the one it gave */
  rotateIds(): void;
}

async function moodyServer(): Promise<Moody> {
  let generation = 1;
  let version: string | null = null;
  let rotate = false;
  const requests: Moody["requests"] = [];
  const { url } = await serveOnLoopback((req: IncomingMessage, res: ServerResponse) => {
    const session = (req.headers["mcp-session-id"] as string | undefined) ?? null;
    const chunks: Buffer[] = [];
    req.on("data", (b: Buffer) => chunks.push(b));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      const msg = (body ? JSON.parse(body) : {}) as {
        id?: unknown;
        method?: string;
        params?: { protocolVersion?: string };
      };
      requests.push({ http: req.method ?? "", method: msg.method ?? null, session });
      if (req.method === "GET") return void res.writeHead(405).end();
      if (req.method === "DELETE") return void res.writeHead(200).end();
      const mine = `s-${generation}`;
      if (msg.method !== "initialize" && session !== mine) return void res.writeHead(404).end();
      const headers: Record<string, string> = {
        "content-type": "application/json",
        "mcp-session-id": rotate ? `other-${requests.length}` : mine,
      };
      const json = (result: unknown) =>
        res.writeHead(200, headers).end(JSON.stringify({ jsonrpc: "2.0", id: msg.id, result }));
      answerWithEchoTool(res, msg, json, {
        name: "moody",
        protocolVersion: version ?? msg.params?.protocolVersion ?? "2025-06-18",
      });
    });
  }, cleanup);
  return {
    url,
    requests,
    restart: (v) => {
      generation++;
      version = v;
    },
    rotateIds: () => {
      rotate = true;
    },
  };
}

describe("a server reached by URL changes its session under the gateway", () => {
  it("comes back speaking another protocol version: the gateway ends the connection, and no call goes to the new session", async () => {
    const server = await moodyServer();
    const gw = await startGateway({ args: ["--url", server.url, "--label", "moody", "--approval", "none"] });
    cleanup.push(() => gw.close());
    await gw.client.listTools();
    const negotiated = gw.received().find((m) => m.id === 0)?.result?.protocolVersion as string;
    expect(negotiated).toBeTruthy();
    const other = negotiated === "2024-11-05" ? "2025-03-26" : "2024-11-05";
    server.restart(other);
    const lost = (await gw.client.callTool({ name: "echo", arguments: {} }).catch((x) => x)) as {
      data?: { error?: string };
    };
    expect(lost.data?.error).toBe("epoch_transition");
    await gw.exited;
    expect(gw.stderr()).toMatch(/negotiated a different protocol version/);
    // the new session got the replayed initialize, and nothing of the client's after it
    const onNew = server.requests.filter((r) => r.session === "s-2");
    expect(onNew.filter((r) => r.method === "tools/call")).toEqual([]);
    expect(server.requests.filter((r) => r.method === "tools/call" && r.session === "s-1")).toHaveLength(1);
  });

  it("hands out another Mcp-Session-Id on later answers: the gateway keeps the one initialize gave", async () => {
    const server = await moodyServer();
    const gw = await startGateway({ args: ["--url", server.url, "--label", "moody", "--approval", "none"] });
    cleanup.push(() => gw.close());
    await gw.client.listTools();
    server.rotateIds();
    for (let i = 0; i < 3; i++) {
      const r = (await gw.client.callTool({ name: "echo", arguments: {} })) as {
        content: { text: string }[];
      };
      expect(r.content[0]!.text).toBe("ran");
    }
    const posts = server.requests.filter((r) => r.http === "POST" && r.method !== "initialize");
    expect(new Set(posts.map((r) => r.session))).toEqual(new Set(["s-1"]));
  });
});
