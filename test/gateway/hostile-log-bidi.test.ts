// The gateway's own stderr lines (the host's log) quote what a server said: a method name, an id.
// Their C0 and C1 controls were already written as escapes; a right-to-left override (U+202E), an
// isolate or a zero-width character went raw, and reordered or hid the rest of the gateway's own
// line in the host's log, so that a line of the gateway's read as the server chose. They are now
// written as their escapes too (`\u202e`), as `status` and every other view writes them. Real
// gateway, the hostile-asker fixture writing the server's lines verbatim.
import { afterEach, expect, it } from "vitest";
import { askerGateway } from "../helpers/asker.js";
import { waitFor } from "../helpers/files.js";
import type { RawGateway } from "../helpers/raw.js";

let peers: RawGateway[] = [];
afterEach(async () => {
  for (const p of peers) await p.close();
  peers = [];
});

it("a server's bidi override, isolate or zero-width character quoted in the gateway's log is written as its escape", async () => {
  const peer = askerGateway();
  peers.push(peer);
  expect((await peer.initialize()).result).toBeDefined();
  expect((await peer.request("tools/list")).result).toBeDefined();
  const lines = [
    // a response to nothing: its id is quoted in a warning
    JSON.stringify({ jsonrpc: "2.0", id: "x\u202e devorppa :llac", result: {} }),
    // a request by position: its method is quoted in a warning
    JSON.stringify({ jsonrpc: "2.0", id: 1, method: "x/\u2067evil\u2069\u200b", params: [] }),
  ];
  const sent = await peer.request("tools/call", { name: "send", arguments: { lines } });
  expect(sent.result, peer.stderr()).toMatchObject({ content: [{ text: "sent" }] });
  await waitFor(() => peer.stderr().includes("evil") || null, 10_000, "the warning of the request");
  const stderr = peer.stderr();
  expect(stderr).toContain('unknown id "x\\u202e devorppa :llac"');
  expect(stderr).toContain('"x/\\u2067evil\\u2069\\u200b"');
  expect(stderr).not.toMatch(/[\u202a-\u202e\u2066-\u2069\u200b-\u200f]/);
}, 60_000);
