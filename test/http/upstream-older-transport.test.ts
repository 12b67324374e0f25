// A server reached by `run --url` that speaks only the older HTTP+SSE transport (MCP 2024-11-05:
// GET opens an SSE stream whose first event, `endpoint`, names where to POST). It answers the
// streamable initialize POST with a 4xx; the gateway looks, as the standard's backward
// compatibility section describes (GET the URL, look for an `endpoint` event), and says plainly
// what the server speaks and what to do, instead of "retry later". Real gateway, real fixture
// (the official SDK's SSEServerTransport).
import { afterEach, describe, expect, it } from "vitest";
import { rawGateway } from "../helpers/raw.js";
import { OLDER_SSE, startFixture } from "./upstreamFixture.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

async function olderServer(env: Record<string, string> = {}) {
  const server = await startFixture(env, null, 0, OLDER_SSE);
  cleanup.push(() => server.kill());
  return { ...server, url: server.url.replace(/\/mcp$/, "/sse") };
}

describe("a remote server that speaks only the older HTTP+SSE transport", () => {
  for (const status of ["405", "404"])
    it(`(initialize answered ${status}): the client is told the server speaks the older transport, and what to do`, async () => {
      const server = await olderServer({ FIXTURE_POST_STATUS: status });
      const peer = rawGateway({ args: ["--url", server.url, "--approval", "none"] });
      cleanup.push(() => peer.close());
      const init = await peer.initialize({}, 20_000);
      const e = init.error as { code: number; message: string; data: Record<string, unknown> };
      expect(e?.code, JSON.stringify(init)).toBe(-32603);
      expect(e.data).toMatchObject({ error: "upstream_older_transport", status: Number(status) });
      expect(e.message).toMatch(/speaks the older HTTP\+SSE transport \(MCP 2024-11-05\)/);
      expect(String(e.data.retry)).toMatch(/Streamable HTTP URL/);
      expect(String(e.data.retry)).not.toMatch(/retry later/);
      expect(peer.stderr()).toMatch(/speaks the older HTTP\+SSE transport/);
      // nothing the stream said is quoted (its endpoint names the server's session)
      expect(JSON.stringify(init)).not.toMatch(/sessionId|\/messages/);
      expect(peer.stderr()).not.toMatch(/sessionId|\/messages|remote session ended|TypeError|Unhandled/);
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
