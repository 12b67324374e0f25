// The tests of `run --url` play the server in this process: node's HTTP server on loopback,
// answering as the test's server would (forgetting its sessions, ending its streams at once, …).
// Starting such a server, closing it at the test's end, and the answers of a plain server with one
// tool are the same in each; what the server does that is hostile stays in the test.
import { createServer, type RequestListener, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Cleanup } from "./teardown.js";

/**
 * Serves `handler` on a free loopback port and resolves with the port and the MCP URL there; the
 * server's close, every connection cut first, goes on `cleanup`.
 */
export async function serveOnLoopback(
  handler: RequestListener,
  cleanup: Cleanup,
): Promise<{ url: string; port: number }> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  cleanup.push(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/mcp`, port };
}

/**
 * Answers `msg` as a server with one tool, `echo`, whose every call says "ran": a notification
 * with 202 and no body; initialize with `protocolVersion` and serverInfo `name` 1.0.0; tools/list;
 * tools/call; anything else with an empty result. `json` writes a result for `msg`'s id.
 */
export function answerWithEchoTool(
  res: ServerResponse,
  msg: { id?: unknown; method?: string },
  json: (result: unknown) => void,
  server: { name: string; protocolVersion: string },
): void {
  if (msg.id === undefined) res.writeHead(202).end();
  else if (msg.method === "initialize")
    json({
      protocolVersion: server.protocolVersion,
      capabilities: { tools: {} },
      serverInfo: { name: server.name, version: "1.0.0" },
    });
  else if (msg.method === "tools/list")
    json({ tools: [{ name: "echo", inputSchema: { type: "object", properties: {} } }] });
  else if (msg.method === "tools/call") json({ content: [{ type: "text", text: "ran" }] });
  else json({});
}
