// Plain HTTP against `run --listen`, for what an SDK client never sends: foreign Host headers,
// wrong content types, broken bodies, resumption by hand. node:http, because fetch does not let
// a caller choose the Host header.
import { type Agent, request } from "node:http";
import { expect } from "vitest";
import type { Listener } from "./listen.js";

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

export function raw(
  l: Listener,
  opts: {
    method?: string;
    headers?: Record<string, string>;
    body?: string | Buffer;
    path?: string;
    /** the address to connect to (default 127.0.0.1) */
    host?: string;
    /** a keep-alive agent, for requests that must share one connection */
    agent?: Agent;
  },
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: opts.host ?? "127.0.0.1",
        ...(opts.agent ? { agent: opts.agent } : {}),
        port: l.port,
        path: opts.path ?? "/mcp",
        method: opts.method ?? "POST",
        headers: opts.headers ?? l.headers(),
      },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (c) => {
          body += c;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(opts.body);
  });
}

/**
 * A refusal of the transport to a POST: a JSON-RPC error with id null and a message saying why
 * (docs/refusals.md), never text a client cannot parse.
 */
export function expectRpcError(r: RawResponse, message: RegExp, code = -32000): void {
  expect(r.headers["content-type"], r.body).toBe("application/json");
  const body = JSON.parse(r.body);
  expect(body).toMatchObject({ jsonrpc: "2.0", id: null, error: { code } });
  expect(body.error.message).toMatch(message);
}

export const initializeBody = (id: number | string = 0) =>
  JSON.stringify({
    jsonrpc: "2.0",
    id,
    method: "initialize",
    params: {
      protocolVersion: "2025-06-18",
      // a client that answers what the server asks (the gateway sends none it did not declare)
      capabilities: { roots: {}, sampling: {}, elicitation: {} },
      clientInfo: { name: "raw", version: "1" },
    },
  });

/** A legacy session opened by hand (initialize + initialized): its Mcp-Session-Id. */
export async function openSession(l: Listener): Promise<string> {
  const init = await raw(l, { body: initializeBody() });
  if (init.status !== 200) throw new Error(`initialize: ${init.status} ${init.body}`);
  const id = init.headers["mcp-session-id"] as string;
  const done = await raw(l, {
    headers: l.headers({ "mcp-session-id": id }),
    body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }),
  });
  if (done.status !== 202) throw new Error(`initialized: ${done.status}`);
  return id;
}

/** The JSON-RPC messages in a body: one JSON object, or the data lines of SSE events. */
export function messagesOf(
  body: string,
): { id?: unknown; method?: string; result?: unknown; error?: { code: number } }[] {
  const t = body.trim();
  if (t.startsWith("{")) return [JSON.parse(t)];
  return t
    .split("\n")
    .filter((line) => line.startsWith("data: ") && line.length > 6)
    .map((line) => JSON.parse(line.slice(6)));
}
