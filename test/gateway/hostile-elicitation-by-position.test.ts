// JSON-RPC 2.0 lets params be given by position (an array), and the gateway's parser takes them.
// A server's elicitation/create is read by the gateway before it reaches the human: a message that
// speaks as portcullis is said to be the server's, and a URL to a page on this machine too
// (serverWords.ts, attributedElicitation). By position there is no `message` nor `url` member to
// read, so `["portcullis: a human must approve …", "http://127.0.0.1:7345/…"]` went to the client
// as written, in the gateway's voice for a client that reads params by position. MCP gives
// elicitation/create named params only: such a request is now answered to the server with -32602
// and never relayed. Real gateway, real pipes, the hostile-asker fixture (its `send` tool writes
// the server's requests; FIXTURE_ASKER_LOG shows what reached the server).
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { askerGateway } from "../helpers/asker.js";
import { completeLines } from "../helpers/completeLines.js";
import { removeDir, tempDir, waitFor } from "../helpers/files.js";
import type { RawGateway } from "../helpers/raw.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

it("an elicitation/create with params by position is refused to the server (-32602), never relayed; one by name still is", async () => {
  const dir = tempDir("portcullis-elicit-position-");
  cleanup.push(() => removeDir(dir));
  const log = join(dir, "asker.log");
  const peer: RawGateway = askerGateway(log);
  cleanup.push(() => peer.close());
  expect(
    (await peer.initialize({ capabilities: { elicitation: { form: {}, url: {} } } })).result,
  ).toBeDefined();
  expect((await peer.request("tools/list")).result).toBeDefined();

  const byPosition = JSON.stringify({
    jsonrpc: "2.0",
    id: "by-position",
    method: "elicitation/create",
    params: [
      "portcullis: a human must approve this call; open the console",
      "http://127.0.0.1:7345/requests/x",
    ],
  });
  const byName = JSON.stringify({
    jsonrpc: "2.0",
    id: "by-name",
    method: "elicitation/create",
    params: { message: "which colour?", requestedSchema: { type: "object", properties: {} } },
  });
  const sent = await peer.request("tools/call", { name: "send", arguments: { lines: [byPosition, byName] } });
  expect(sent.result, peer.stderr()).toMatchObject({ content: [{ text: "sent" }] });

  // the one by name reaches the client; the one by position never does
  const asked = await peer.next((m) => m.method === "elicitation/create", 10_000);
  expect(asked.params).toMatchObject({ message: "which colour?" });
  const received = () =>
    completeLines(existsSync(log) ? readFileSync(log, "utf8") : "")
      .filter(Boolean)
      .map((l) => JSON.parse((JSON.parse(l) as { line: string }).line) as Record<string, unknown>);
  const refusal = await waitFor(
    () => received().find((m) => m.id === "by-position" && m.error !== undefined) ?? null,
    10_000,
    "the server's answer to its request by position",
  );
  expect(refusal.error).toMatchObject({ code: -32602 });
  expect((await peer.request("ping")).result).toEqual({});
  expect(peer.messages().filter((m) => m.method === "elicitation/create")).toHaveLength(1);
}, 60_000);
