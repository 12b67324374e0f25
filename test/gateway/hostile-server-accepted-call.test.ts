// A server reached by `run --url` that answers a tools/call's POST with 202 Accepted and no body
// (what MCP says for a notification or a response, never for a request), while it offers no
// server-to-client stream (GET 405). Nothing can carry the call's answer any more: the gateway
// knows it at once, as it does for a 204 or a 200 without a JSON-RPC answer (upstream_http_error).
// It waited instead: the call was never answered, its intent stayed open in the audit, and only
// the client's end of the connection (after the hold timeout) answered it `shutting_down`.
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { REPO } from "../helpers/paths.js";
import { rawGateway } from "../helpers/raw.js";
import { startFixture } from "../http/upstreamFixture.js";

const OPEN = join(REPO, "test", "fixtures", "servers", "hostile-http-open.mjs");

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

describe("a remote server that answers a call's POST with 202 and has no server-to-client stream", () => {
  it("gets the call answered with an error that says what happened, not left waiting for ever", async () => {
    const server = await startFixture({}, null, 0, OPEN);
    cleanup.push(() => server.kill());
    const gw = rawGateway({ args: ["--label", "accepted", "--url", server.url, "--approval", "none"] });
    cleanup.push(() => gw.close());
    await gw.initialize();
    expect((await gw.request("tools/list")).result).toBeDefined();

    gw.send({
      jsonrpc: "2.0",
      id: "acc-1",
      method: "tools/call",
      params: { name: "accepted", arguments: {} },
    });
    // the gateway still serves meanwhile
    expect((await gw.request("ping")).result).toEqual({});
    const answer = await gw.next((m) => m.id === "acc-1", 10_000);
    expect(answer.error?.code).toBe(-32603);
    expect(answer.error?.message).toMatch(/202/);
    // a call the server may have run: its requester is told to check, not to send it again blindly
    const data = answer.error?.data as { error: string; retry: string };
    expect(data.error).toBe("upstream_http_error");
    expect(data.retry).toMatch(/check whether it took effect/);
  }, 30_000);
});
