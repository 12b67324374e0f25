// A client that sends initialize, gets its answer, and then calls a tool (or lists tools) without
// ever sending notifications/initialized. The gateway fetches no catalog before that notification
// (MCP: no requests of the server's side before it), so nothing is being fetched; the call is held
// for the whole hold timeout. It was then refused identity_pending, "its tool catalog is still
// being fetched", retry "wait a moment, then list tools again and retry": untrue advice that
// cannot help (a client that follows it is held and refused again, for ever). The refusal says
// what the client has to do: send notifications/initialized (not_initialized, as for a client
// that never sent initialize).
import { afterEach, describe, expect, it } from "vitest";
import { fixtureCommand } from "../helpers/paths.js";
import { type RawGateway, rawGateway } from "../helpers/raw.js";

let peers: RawGateway[] = [];
afterEach(async () => {
  for (const p of peers) await p.close();
  peers = [];
});

describe("a request after initialize's answer but with no notifications/initialized", () => {
  it("is told to send notifications/initialized, not to wait for a catalog fetch nobody started", async () => {
    const gw = rawGateway({
      args: [
        "--label",
        "echo",
        "--approval",
        "none",
        "--hold-timeout",
        "1500",
        "--",
        ...fixtureCommand("echo"),
      ],
    });
    peers.push(gw);
    const init = await gw.request("initialize", {
      protocolVersion: "2025-06-18",
      capabilities: {},
      clientInfo: { name: "no-initialized", version: "1" },
    });
    expect(init.error).toBeUndefined();
    // no notifications/initialized
    const call = await gw.request("tools/call", { name: "echo", arguments: { message: "hi" } }, 20_000);
    const list = await gw.request("tools/list", undefined, 20_000);
    for (const answer of [call, list]) {
      expect(answer.error, JSON.stringify(answer)).toBeDefined();
      const data = answer.error!.data as { error: string; reason: string; retry: string };
      // whatever the code, what the client must do next is named
      expect(`${answer.error!.message} ${data.reason} ${data.retry}`, JSON.stringify(answer.error)).toMatch(
        /notifications\/initialized/,
      );
    }
  });
});
