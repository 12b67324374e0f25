// Bad input on the HTTP side of `run --listen`: each transport problem gets its HTTP status and a
// clear body, nothing crashes, and the gateway keeps serving the sessions that behave. Refusals of
// the gateway itself stay JSON-RPC errors in a 200 body. The cases that need no option of their
// own share one gateway (one start instead of three), each with a session of its own.
import { Agent } from "node:http";
import { SUPPORTED_PROTOCOL_VERSIONS } from "@modelcontextprotocol/sdk/types.js";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { LEGACY_PROTOCOL_VERSIONS } from "../../src/transport/httpVersion.js";
import { fixtureCommand } from "../helpers/paths.js";
import { type Listener, startListener } from "./listen.js";
import { expectRpcError, initializeBody, messagesOf, openSession, raw } from "./raw.js";

let cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

async function listener(args: string[] = []): Promise<Listener> {
  const l = await startListener(fixtureCommand("echo"), { args: ["--approval", "none", ...args] });
  cleanup.push(() => l.close());
  return l;
}

/** The gateway with no option of its own, started by the first case that asks for it. */
let sharedListener: Promise<Listener> | undefined;
function shared(): Promise<Listener> {
  sharedListener ??= startListener(fixtureCommand("echo"), { args: ["--approval", "none"] });
  return sharedListener;
}
afterAll(async () => {
  await (await sharedListener)?.close();
});

const call = (id: number, message = "hi") =>
  JSON.stringify({
    jsonrpc: "2.0",
    id,
    method: "tools/call",
    params: { name: "echo", arguments: { message } },
  });

async function stillServes(l: Listener, session: string): Promise<void> {
  const r = await raw(l, { headers: l.headers({ "mcp-session-id": session }), body: call(424242, "alive") });
  expect(r.status).toBe(200);
  const [answer] = messagesOf(r.body);
  expect(answer!.id).toBe(424242);
  expect(JSON.stringify(answer!.result)).toContain("alive");
}

describe("transport errors are HTTP statuses", () => {
  it("wrong content type 415, wrong Accept 406, malformed JSON and bad JSON-RPC 400, unknown session 404", async () => {
    const l = await shared();
    const session = await openSession(l);
    const h = (extra: Record<string, string> = {}) => l.headers({ "mcp-session-id": session, ...extra });
    expect((await raw(l, { headers: h({ "content-type": "text/plain" }), body: call(1) })).status).toBe(415);
    expect((await raw(l, { headers: h({ accept: "application/json" }), body: call(1) })).status).toBe(406);
    const parse = await raw(l, { headers: h(), body: '{"jsonrpc":"2.0","id":1,"method":' });
    expect(parse.status).toBe(400);
    expect(JSON.parse(parse.body).error.code).toBe(-32700);
    for (const body of [
      "[]",
      `[${call(1)}]`,
      '"text"',
      '{"id":1,"method":"tools/list"}',
      '{"jsonrpc":"2.0","id":{},"method":"x"}',
      '{"jsonrpc":"2.0","id":1}',
    ]) {
      const r = await raw(l, { headers: h(), body });
      expect(r.status, body).toBe(400);
      expect(JSON.parse(r.body).error.code, body).toBe(-32600);
    }
    // nested deeper than the gateway reads (JSON.stringify alone would throw on it): 400, named
    const depth = 100_000;
    const deep = await raw(l, {
      headers: h(),
      body: `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo","arguments":{"message":${"[".repeat(depth)}${"]".repeat(depth)}}}}`,
    });
    expect(deep.status).toBe(400);
    expect(JSON.parse(deep.body).error).toMatchObject({
      code: -32600,
      data: { error: "message_too_deep", limit: 512 },
    });
    // the data every refusal carries (docs/refusals.md): what went wrong and what to do next
    expect(JSON.parse(deep.body).error.data).toMatchObject({
      reason: expect.stringMatching(/nested deeper/),
      retry: expect.stringMatching(/at most 512 levels/),
    });
    await stillServes(l, session);
    const unknown = await raw(l, { headers: h({ "mcp-session-id": "0".repeat(32) }), body: call(1) });
    expect(unknown.status).toBe(404);
    expect((await raw(l, { headers: l.headers(), body: call(1) })).status).toBe(400); // no session, not initialize
    const put = await raw(l, { method: "PUT", headers: h(), body: call(1) });
    expect(put.status).toBe(405);
    expect(put.headers["content-type"]).toMatch(/^text\/plain/); // not a POST: a line of text
    const other = await raw(l, { path: "/other", headers: h(), body: call(1) });
    expect(other.status).toBe(404);
    expectRpcError(other, /the MCP endpoint is \/mcp/);
    const otherGet = await raw(l, { method: "GET", path: "/other", headers: h() });
    expect(otherGet.status).toBe(404);
    expect(otherGet.headers["content-type"]).toMatch(/^text\/plain/);
    expect((await raw(l, { method: "GET", headers: h({ "mcp-session-id": "f".repeat(32) }) })).status).toBe(
      404,
    );
    await stillServes(l, session);
  });

  it("MCP-Protocol-Version: 400 for one the session does not support; absent or supported, served", async () => {
    const l = await shared();
    const session = await openSession(l);
    const withVersion = (v?: string) =>
      l.headers({ "mcp-session-id": session, ...(v === undefined ? {} : { "mcp-protocol-version": v }) });
    for (const bad of ["1999-01-01", "2026-07-28", "not a version"]) {
      const r = await raw(l, { headers: withVersion(bad), body: call(7) });
      expect(r.status, bad).toBe(400);
      expect(JSON.parse(r.body)).toMatchObject({ id: null, error: { code: -32000 } });
      expect(JSON.parse(r.body).error.message).toMatch(/Unsupported protocol version.*2025-06-18/);
      const note = await raw(l, {
        headers: withVersion(bad),
        body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/roots/list_changed" }),
      });
      expect(note.status, bad).toBe(400);
      const get = await raw(l, { method: "GET", headers: withVersion(bad) });
      expect(get.status, bad).toBe(400);
    }
    // the negotiated version, another legacy one, and none at all (2025-03-26 is assumed)
    for (const good of ["2025-06-18", "2025-03-26", undefined]) {
      const r = await raw(l, { headers: withVersion(good), body: call(8, String(good)) });
      expect(r.status, String(good)).toBe(200);
      expect(JSON.stringify(messagesOf(r.body)[0]!.result)).toContain(String(good));
    }
    // a modern request with a version of no era the front speaks: refused before a session opens
    const modern = await raw(l, {
      headers: l.headers({ "mcp-protocol-version": "1999-01-01" }),
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "server/discover",
        params: { _meta: { "io.modelcontextprotocol/protocolVersion": "2026-07-28" } },
      }),
    });
    expect(modern.status).toBe(400);
    expect(l.stderr()).not.toMatch(/\(modern\)/); // no session (and no server) was started for it
    await stillServes(l, session);
  });

  it("the legacy versions the front takes are the ones the v1 SDK supports", () => {
    expect([...LEGACY_PROTOCOL_VERSIONS].sort()).toEqual([...SUPPORTED_PROTOCOL_VERSIONS].sort());
  });

  it("a body over --max-message-bytes is 413 and the session keeps serving", async () => {
    const l = await listener(["--max-message-bytes", "4096"]);
    const session = await openSession(l);
    const big = call(7, "x".repeat(10_000));
    const r = await raw(l, { headers: l.headers({ "mcp-session-id": session }), body: big });
    expect(r.status).toBe(413);
    // the data of the same refusal on stdio (docs/refusals.md: error, reason, retry, bytes), and the limit
    expect(JSON.parse(r.body).error).toMatchObject({
      code: -32600,
      data: {
        error: "message_too_large",
        reason: "request over the message size limit",
        retry: expect.stringMatching(/--max-message-bytes/),
        limit: 4096,
      },
    });
    expect(JSON.parse(r.body).error.data.bytes).toBeGreaterThan(4096);
    // declared by Content-Length or not: a chunked body is cut as it arrives
    const chunked = await raw(l, {
      headers: l.headers({ "mcp-session-id": session, "transfer-encoding": "chunked" }),
      body: big,
    });
    expect(chunked.status).toBe(413);
    await stillServes(l, session);
  });

  it("a refusal of the gateway is a JSON-RPC error with status 200", async () => {
    const l = await shared();
    const session = await openSession(l);
    const r = await raw(l, {
      headers: l.headers({ "mcp-session-id": session }),
      body: JSON.stringify({ jsonrpc: "2.0", id: 3, method: "Tools/Call", params: { name: "echo" } }),
    });
    expect(r.status).toBe(200);
    expect(messagesOf(r.body)[0]!.error!.code).toBe(-32601);
  });

  it("a flood of parallel requests and sessions: every one answered, 503 beyond the session cap, no crash", async () => {
    const l = await listener(["--listen-max-sessions", "3"]);
    const session = await openSession(l);
    // All sent at once, over 20 kept-alive connections: the front looks up the process behind
    // each new connection by walking every process's descriptors under /proc (procPeer.ts), once
    // per connection; a new connection per request made the flood cost 100 walks, each slower
    // for the sockets the flood itself holds open (12 s on a quiet machine, a minute under load).
    const agent = new Agent({ keepAlive: true, maxSockets: 20 });
    cleanup.push(async () => agent.destroy());
    const calls = await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        raw(l, { agent, headers: l.headers({ "mcp-session-id": session }), body: call(i, `m${i}`) }),
      ),
    );
    for (const [i, r] of calls.entries()) {
      expect(r.status).toBe(200);
      const [m] = messagesOf(r.body);
      expect(m!.id).toBe(i);
      expect(JSON.stringify(m!.result)).toContain(`m${i}`);
    }
    const opens = await Promise.all(Array.from({ length: 6 }, (_, i) => raw(l, { body: initializeBody(i) })));
    const statuses = opens.map((r) => r.status).sort();
    expect(statuses.filter((s) => s === 200)).toHaveLength(2); // 3 allowed, one already open
    expect(statuses.filter((s) => s === 503)).toHaveLength(4);
    const garbage = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        raw(l, { agent, headers: l.headers({ "mcp-session-id": session }), body: `{${i}` }),
      ),
    );
    expect(new Set(garbage.map((r) => r.status))).toEqual(new Set([400]));
    expect(l.proc.exitCode).toBeNull();
    await stillServes(l, session);
  });
});
