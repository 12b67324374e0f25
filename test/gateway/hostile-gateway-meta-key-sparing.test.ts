// A server's message that carries the gateway's own `_meta` keys (`portcullis/…`) loses them with
// a warning said sparingly (docs/security.md): a server can write them on every message, and the
// warning must not let it fill the gateway's stderr. Its results and notifications were warned of
// so; its requests got a warning each. Twenty of each now give one line each kind.
// Real gateway, real pipes, the hostile-asker fixture (its `send` tool writes the server's lines).
import { afterEach, expect, it } from "vitest";
import { ASKER_FIXTURE } from "../helpers/asker.js";
import { NODE } from "../helpers/paths.js";
import { rawGateway } from "../helpers/raw.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

it("twenty requests and twenty notifications with a portcullis/ _meta key: one warning line each", async () => {
  const peer = rawGateway({ args: ["--label", "asker", "--approval", "none", "--", NODE, ASKER_FIXTURE] });
  cleanup.push(() => peer.close());
  expect((await peer.initialize()).result, peer.stderr()).toBeDefined();
  expect((await peer.request("tools/list")).result).toBeDefined();
  const requests = Array.from({ length: 20 }, (_, i) =>
    JSON.stringify({
      jsonrpc: "2.0",
      id: `ask${i}`,
      method: "roots/list",
      params: { _meta: { "portcullis/x": i } },
    }),
  );
  const notifications = Array.from({ length: 20 }, (_, i) =>
    JSON.stringify({
      jsonrpc: "2.0",
      method: "notifications/message",
      params: { level: "info", data: i, _meta: { "portcullis/x": i } },
    }),
  );
  // the fixture writes its lines before its answer, on one pipe: each was read before `sent`
  const sent = await peer.request("tools/call", {
    name: "send",
    arguments: { lines: [...requests, ...notifications] },
  });
  expect(sent.result, peer.stderr()).toMatchObject({ content: [{ text: "sent" }] });
  // every one reached the client, without the key
  const relayed = peer
    .messages()
    .filter((m) => m.method === "roots/list" || m.method === "notifications/message");
  expect(relayed).toHaveLength(40);
  expect(JSON.stringify(relayed)).not.toContain("portcullis/");
  const warned = (of: RegExp) =>
    peer
      .stderr()
      .split("\n")
      .filter((l) => of.test(l)).length;
  expect(warned(/took 1 _meta key\(s\) .* request:/), peer.stderr()).toBe(1);
  expect(warned(/took 1 _meta key\(s\) .*notifications\/message/), peer.stderr()).toBe(1);
}, 60_000);
