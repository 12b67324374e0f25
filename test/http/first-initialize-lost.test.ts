// A client whose FIRST initialize is lost to an epoch change (the server reached by URL changed
// its certificate as the initialize arrived: the epoch ended before anything answered it) is told
// to send initialize again, and its next initialize, sent at once, reaches the new epoch's server:
// the session starts normally. Nothing was negotiated, so the gateway has no handshake to replay
// (ClientSession.replayInitialize): the client's own is the new epoch's handshake. Before, one
// sent before the next epoch was minted was refused server_unavailable ("no live server
// process"), and the client (the SDK's, as most, gives up on a failed initialize) never started.
// Real gateway, real fixtures (the official SDK's server transports).
import { afterEach, describe, expect, it } from "vitest";
import { auditEvents } from "../helpers/approvals.js";
import { tempDir } from "../helpers/files.js";
import { type RawGateway, rawGateway } from "../helpers/raw.js";
import { makeTls, OLDER_SSE, startFixture, type Tls } from "./upstreamFixture.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const INIT = { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "raw", version: "1" } };

/**
 * The client's first initialize gets epoch_transition, telling it to send initialize again; its
 * next one, sent at once, is answered by the new epoch's server, which then lists and calls, and
 * whose identity (its chain, its serverInfo) is recorded as any remote epoch's.
 */
async function startsAfterLoss(peer: RawGateway, tls: Tls, serverName: string, transport: string) {
  const lost = await peer.request("initialize", INIT, 20_000);
  expect(lost.error, JSON.stringify(lost)).toMatchObject({
    code: -32054,
    data: { error: "epoch_transition", retried: false },
  });
  expect((lost.error as { data: { retry: string } }).data.retry).toMatch(/send initialize again/);
  const init = await peer.initialize({}, 20_000);
  expect(init.result, `${JSON.stringify(init)}\n${peer.stderr()}`).toMatchObject({
    serverInfo: { name: serverName },
  });
  const list = await peer.request("tools/list", undefined, 20_000);
  expect(list.result, JSON.stringify(list)).toMatchObject({
    tools: expect.arrayContaining([expect.objectContaining({ name: "echo" })]),
  });
  const call = await peer.request("tools/call", { name: "echo", arguments: { message: "hi" } }, 20_000);
  expect(call.result, JSON.stringify(call)).toMatchObject({ content: [{ text: "Echo: hi" }] });
  const events = await auditEvents(peer.stateDir);
  const started = events.filter((e) => e.type === "server_started");
  expect(started).toHaveLength(2);
  const identified = events.filter((e) => e.type === "server_identified");
  expect(identified).toHaveLength(1);
  const epoch = (started[1] as { epoch?: string }).epoch;
  expect(identified[0]).toMatchObject({ epoch });
  expect(identified[0]!.record).toMatchObject({
    remote: { transport, serverInfo: { name: serverName }, certificateChainSha256: tls.chainDigest() },
  });
  // the call went to the new epoch, after its identity was recorded
  const forwarded = events.findIndex((e) => e.type === "tool_called");
  expect(forwarded).toBeGreaterThan(events.indexOf(identified[0]!));
}

describe("a client's first initialize lost to an epoch change (run --url)", () => {
  it("the older HTTP+SSE transport, its certificate changed at the initialize POST: the client's next initialize starts the session", async () => {
    const tls = await makeTls();
    const server = await startFixture(
      {
        FIXTURE_HEADER: "x-team",
        FIXTURE_HEADER_LOG: `${tempDir("pc-first-init-")}/h.jsonl`,
        FIXTURE_RELOAD_AFTER_POST: "1",
      },
      tls,
      0,
      OLDER_SSE,
    );
    cleanup.push(() => server.kill());
    await tls.renew(); // read by the server at the first POST only
    const peer = rawGateway({
      args: ["--url", server.url.replace(/\/mcp$/, "/sse"), "--approval", "none"],
      env: { NODE_EXTRA_CA_CERTS: tls.ca.caFile },
    });
    cleanup.push(() => peer.close());
    await startsAfterLoss(peer, tls, "http-sse", "http+sse");
  });

  it("Streamable HTTP, its certificate changed and the connection closed at the initialize POST: the client's next initialize starts the session", async () => {
    const tls = await makeTls();
    const server = await startFixture({ FIXTURE_RELOAD_AT_INITIALIZE: "1" }, tls);
    cleanup.push(() => server.kill());
    await tls.renew(); // read by the server at the first initialize only
    const peer = rawGateway({
      args: ["--url", server.url, "--approval", "none"],
      env: { NODE_EXTRA_CA_CERTS: tls.ca.caFile },
    });
    cleanup.push(() => peer.close());
    await startsAfterLoss(peer, tls, "http-fixture", "streamable-http");
  });
});
