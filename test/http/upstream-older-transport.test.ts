// A server reached by `run --url` that speaks only the older HTTP+SSE transport (MCP 2024-11-05:
// GET opens an SSE stream whose first event, `endpoint`, names where to POST; every answer comes
// on that stream). It answers the streamable initialize POST with a 4xx; the gateway then looks,
// as the standard's backward-compatibility section describes (GET the URL, look for an
// `endpoint` event), and speaks that transport for the epoch: lists, calls, records, under the
// same guarantees (the endpoint on the URL's own origin or refused, the configured headers to
// that origin only, the stream's end ending the epoch). Real gateway, real fixture (the official
// SDK's SSEServerTransport).
import { createServer, type Server } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { auditEvents } from "../helpers/approvals.js";
import { readJsonLines, tempDir, waitFor } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { rawGateway } from "../helpers/raw.js";
import { gatewayRow } from "../helpers/status.js";
import { makeTls, OLDER_SSE, startFixture } from "./upstreamFixture.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

async function olderServer(env: Record<string, string> = {}, port = 0) {
  const server = await startFixture(env, null, port, OLDER_SSE);
  cleanup.push(() => server.kill());
  return { ...server, url: server.url.replace(/\/mcp$/, "/sse") };
}

/** A port free on 127.0.0.1 now (the fixture is started on it, so its endpoint can name it). */
async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const { port } = probe.address() as { port: number };
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

/**
 * The epoch the gateway's row names (as `portcullis status --json` shows it), read in the test
 * process (listGateways, as status reads it) once it is not `not`: the case is about epochs, not
 * about the status command, and the command was a process of its own (about 0.2 s of CPU) at
 * every look while the case waited for a new epoch.
 */
async function epochOf(stateDir: string, not: string | null = null, ms = 10_000): Promise<string> {
  const row = await gatewayRow(stateDir, (r) => r.epoch !== null && r.epoch !== not, "an epoch", ms);
  return row.epoch as string;
}

describe("a remote server that speaks only the older HTTP+SSE transport", () => {
  for (const post of ["405", "404"])
    it(`(initialize answered ${post}): spoken to over that transport; lists, calls, and the configured header goes to its origin only`, async () => {
      const headerLog = `${tempDir("pc-older-")}/headers.jsonl`;
      const server = await olderServer({
        FIXTURE_POST_STATUS: post,
        FIXTURE_HEADER: "x-team",
        FIXTURE_HEADER_LOG: headerLog,
      });
      const peer = rawGateway({
        args: ["--url", server.url, "--header", "X-Team: blue", "--approval", "none"],
      });
      cleanup.push(() => peer.close());
      const init = await peer.initialize({}, 20_000);
      expect(init.result, JSON.stringify(init)).toMatchObject({ serverInfo: { name: "http-sse" } });
      const list = await peer.request("tools/list", undefined, 20_000);
      expect(list.result).toMatchObject({ tools: [{ name: "echo" }] });
      const call = await peer.request("tools/call", { name: "echo", arguments: { message: "hi" } }, 20_000);
      expect(call.result).toMatchObject({ content: [{ text: "Echo: hi" }] });
      // the line comes on stderr, what was awaited on another pipe (or the store, or the exit): read in either order
      await waitFor(
        () => /speaks the older HTTP\+SSE transport/.test(peer.stderr()),
        20_000,
        "the gateway's line on the older transport",
      );
      expect(peer.stderr()).toMatch(/speaks the older HTTP\+SSE transport \(MCP 2024-11-05\)/);
      expect(peer.stderr()).not.toMatch(/remote session ended|TypeError|Unhandled/);
      // every request carried the configured header; the messages went to the endpoint the
      // stream named, the streamable initialize and the stream to the URL
      const seen = readJsonLines<{ method: string; path: string; value: string | null }>(headerLog);
      expect(seen.every((r) => r.value === "blue")).toBe(true);
      expect(seen.slice(0, 2).map((r) => `${r.method} ${r.path}`)).toEqual(["POST /sse", "GET /sse"]);
      expect(seen.slice(2).every((r) => r.method === "POST" && r.path === "/messages")).toBe(true);
      expect(seen.length).toBeGreaterThanOrEqual(6); // initialize, initialized, list, call
      // the execution record says so too, not only stderr: the epoch's completed record
      const identified = (await auditEvents(peer.stateDir)).filter((e) => e.type === "server_identified");
      expect(identified).toHaveLength(1);
      expect(identified[0]!.record).toMatchObject({
        remote: { transport: "http+sse", serverInfo: { name: "http-sse" } },
      });
      const shown = await runCli(["status", "--state-dir", peer.stateDir]);
      expect(shown.stdout).toContain("transport  the older HTTP+SSE transport (MCP 2024-11-05)");
    });

  it("the stream's end ends the epoch; the server back, a new epoch serves", async () => {
    const server = await olderServer();
    const peer = rawGateway({ args: ["--url", server.url, "--approval", "none"] });
    cleanup.push(() => peer.close());
    await peer.initialize({}, 20_000);
    expect((await peer.request("tools/list", undefined, 20_000)).result).toBeDefined();
    const before = await epochOf(peer.stateDir);
    // a new process on the same port: the old stream ends with the old one
    const again = await server.restart();
    cleanup.push(() => again.kill());
    await waitFor(
      () => /remote session ended: the server's SSE stream/.test(peer.stderr()),
      20_000,
      "the epoch's end",
    );
    const after = await epochOf(peer.stateDir, before, 30_000);
    expect(after).not.toBe(before);
    const call = await waitFor(
      async () => {
        const r = await peer.request("tools/call", { name: "echo", arguments: { message: "back" } }, 20_000);
        return r.result ? r : undefined;
      },
      30_000,
      "a call served by the new epoch",
    );
    expect(call.result).toMatchObject({ content: [{ text: "Echo: back" }] });
  });

  it("an endpoint on another origin is refused: nothing is sent there, and the client is told why", async () => {
    let reached = 0;
    const other: Server = createServer((_req, res) => {
      reached++;
      res.writeHead(202).end();
    });
    await new Promise<void>((resolve) => other.listen(0, "127.0.0.1", resolve));
    cleanup.push(() => new Promise<void>((resolve) => other.close(() => resolve())));
    const otherPort = (other.address() as { port: number }).port;
    const server = await olderServer({
      FIXTURE_SSE_ENDPOINT: `http://127.0.0.1:${otherPort}/messages?sessionId=x`,
    });
    const peer = rawGateway({
      args: ["--url", server.url, "--header", "X-Team: blue", "--approval", "none"],
    });
    cleanup.push(() => peer.close());
    const init = await peer.initialize({}, 20_000);
    const e = init.error as { code: number; message: string; data: Record<string, unknown> };
    expect(e?.code, JSON.stringify(init)).toBe(-32603);
    expect(e.data).toMatchObject({ error: "upstream_older_transport", status: 405 });
    expect(e.message).toMatch(/older HTTP\+SSE transport.*another origin than http:\/\/127\.0\.0\.1:\d+ /);
    expect(String(e.data.retry)).not.toMatch(/retry later/);
    // the other origin is not quoted, and was never reached
    expect(JSON.stringify(init)).not.toContain(String(otherPort));
    expect(reached).toBe(0);
  });

  // The same origin written with user credentials, or the same host and port under another
  // scheme: the server's words would choose an Authorization (node sends a URL's user:password as
  // Basic) or a connection whose chain nobody checks. Refused like another origin.
  for (const [what, endpoint] of [
    [
      "user credentials on the URL's own origin",
      (port: number) => `http://agent:hunter2@127.0.0.1:${port}/messages?sessionId=x`,
    ],
    [
      "the URL's host and port under https://",
      (port: number) => `https://127.0.0.1:${port}/messages?sessionId=x`,
    ],
    [
      "a protocol-relative URL naming another port",
      (port: number) => `//127.0.0.1:${port + 1}/messages?sessionId=x`,
    ],
  ] as const)
    it(`an endpoint with ${what} is refused: nothing is posted, and the client is told why`, async () => {
      const port = await freePort();
      const headerLog = `${tempDir("pc-older-")}/headers.jsonl`;
      const server = await olderServer(
        { FIXTURE_SSE_ENDPOINT: endpoint(port), FIXTURE_HEADER: "x-team", FIXTURE_HEADER_LOG: headerLog },
        port,
      );
      const peer = rawGateway({
        args: ["--url", server.url, "--header", "X-Team: blue", "--approval", "none"],
      });
      cleanup.push(() => peer.close());
      const init = await peer.initialize({}, 20_000);
      const e = init.error as { code: number; message: string; data: Record<string, unknown> };
      expect(e?.code, JSON.stringify(init)).toBe(-32603);
      expect(e.data).toMatchObject({ error: "upstream_older_transport" });
      expect(JSON.stringify(init)).not.toContain("hunter2");
      expect(peer.stderr()).not.toContain("hunter2");
      // the streamable initialize and the GET that found the stream (and the client's
      // notifications/initialized, to the URL): nothing reached the endpoint
      const seen = readJsonLines<{ method: string; path: string }>(headerLog);
      expect(seen.slice(0, 2).map((r) => `${r.method} ${r.path}`)).toEqual(["POST /sse", "GET /sse"]);
      expect(seen.filter((r) => r.path !== "/sse")).toEqual([]);
    });

  it("over https, the GET that looks for the stream goes out only on a connection that presents the epoch's chain", async () => {
    // The server's certificate changes between the initialize POST (on the epoch's chain) and
    // the GET that looks for the older transport's stream (a new connection): that GET, which
    // carries the configured header, is not written there, and the epoch ends.
    const tls = await makeTls();
    const headerLog = `${tempDir("pc-older-")}/headers.jsonl`;
    const server = await startFixture(
      { FIXTURE_HEADER: "x-team", FIXTURE_HEADER_LOG: headerLog, FIXTURE_RELOAD_AFTER_POST: "1" },
      tls,
      0,
      OLDER_SSE,
    );
    cleanup.push(() => server.kill());
    await tls.renew(); // read by the server at the first POST only
    const peer = rawGateway({
      args: ["--url", server.url.replace(/\/mcp$/, "/sse"), "--header", "X-Team: blue", "--approval", "none"],
      env: { NODE_EXTRA_CA_CERTS: tls.ca.caFile },
    });
    cleanup.push(() => peer.close());
    const init = await peer.initialize({}, 20_000);
    expect(init.error, JSON.stringify(init)).toBeDefined(); // its epoch ended under it
    // (stderr and the answer travel on different pipes: waited for, not read at once)
    await waitFor(
      () => /different TLS certificate chain/.test(peer.stderr()),
      10_000,
      "the certificate line",
    );
    const seen = readJsonLines<{ method: string; path: string; certificate: number }>(headerLog);
    expect(seen.filter((r) => r.certificate === 0).map((r) => `${r.method} ${r.path}`)).toEqual([
      "POST /sse",
    ]);
    // on the new certificate, a next epoch's own initialize (if one was sent yet) comes first
    expect(seen.find((r) => r.certificate === 1)?.method ?? "POST").toBe("POST");
  });

  it("a 4xx from a URL whose GET opens no such stream is still the plain HTTP error", async () => {
    const server = await olderServer();
    const peer = rawGateway({
      args: ["--url", server.url.replace(/\/sse$/, "/elsewhere"), "--approval", "none"],
    });
    cleanup.push(() => peer.close());
    const init = await peer.initialize({}, 20_000);
    expect(init.error).toMatchObject({ code: -32603, data: { error: "upstream_http_error", status: 405 } });
    expect(peer.stderr()).not.toMatch(/older HTTP\+SSE/);
  });
});
