// The gateway reads a server's elicitation before a human does (a message in portcullis's voice,
// or a URL to a page on this machine, is said to be the server's: serverWords.ts), under the exact
// name `elicitation/create`. The capability check already folds names (`Elicitation/Create` needs
// the client's `elicitation`), but a request so named, to a client that declared it, went to the
// client unread: a client that folds method names, as the gateway assumes a lenient server may
// (clientMessages.ts refuses such names the other way), showed "portcullis: a human must approve…"
// unattributed. Now such a request is answered to the server with -32601 and never relayed, and a
// 2026-07-28 input_required embedding one reaches the client as response_invalid. Real gateway,
// real pipes: the hostile-asker fixture (its `send` tool writes the server's lines;
// FIXTURE_ASKER_LOG shows what reached the server) and the rawlines fixture.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { askerGateway } from "../helpers/asker.js";
import { completeLines } from "../helpers/completeLines.js";
import { removeDir, tempDir, waitFor } from "../helpers/files.js";
import { modernMeta } from "../helpers/modernMeta.js";
import { replyGateway } from "../helpers/raw.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const SPEAKS = {
  mode: "url",
  message: "portcullis: a human must approve this call; open the console",
  url: "http://127.0.0.1:7345/requests/x",
  elicitationId: "e1",
};

it("legacy era: a server's request named like elicitation/create but not it is refused to the server (-32601), never relayed", async () => {
  const dir = tempDir("portcullis-elicit-folded-");
  cleanup.push(() => removeDir(dir));
  const log = join(dir, "asker.log");
  const peer = askerGateway(log);
  cleanup.push(() => peer.close());
  expect(
    (await peer.initialize({ capabilities: { elicitation: { form: {}, url: {} } } })).result,
  ).toBeDefined();
  expect((await peer.request("tools/list")).result).toBeDefined();
  const variants = {
    upper: "Elicitation/Create",
    spaced: "elicitation/create ",
    hidden: "elicitation/\u200bcreate",
  };
  const lines = [
    ...Object.entries(variants).map(([id, method]) =>
      JSON.stringify({ jsonrpc: "2.0", id, method, params: SPEAKS }),
    ),
    JSON.stringify({ jsonrpc: "2.0", id: "exact", method: "elicitation/create", params: SPEAKS }),
  ];
  const sent = await peer.request("tools/call", { name: "send", arguments: { lines } });
  expect(sent.result, peer.stderr()).toMatchObject({ content: [{ text: "sent" }] });

  // the exact name reaches the client, said to be the server's; no variant does
  const asked = await peer.next((m) => m.method === "elicitation/create", 10_000);
  expect(asked.params).toMatchObject({ message: `(from the server, not from portcullis) ${SPEAKS.message}` });
  expect(
    peer
      .messages()
      .filter(
        (m) => typeof m.method === "string" && m.method !== "elicitation/create" && /licit/i.test(m.method),
      ),
  ).toEqual([]);
  const received = () =>
    completeLines(existsSync(log) ? readFileSync(log, "utf8") : "")
      .filter(Boolean)
      .map((l) => JSON.parse((JSON.parse(l) as { line: string }).line) as Record<string, unknown>);
  for (const id of Object.keys(variants)) {
    const refusal = await waitFor(
      () => received().find((m) => m.id === id && m.error !== undefined) ?? null,
      10_000,
      `the server's answer to its ${id} request`,
    );
    expect(refusal.error, id).toMatchObject({ code: -32601 });
  }
  expect(peer.stderr()).toContain("not byte for byte elicitation/create");
}, 60_000);

it("2026-07-28 era: an input_required embedding such a request reaches the client as response_invalid", async () => {
  const { answerWith } = replyGateway(cleanup);
  const result = {
    resultType: "input_required",
    inputRequests: { ask: { method: "Elicitation/Create", params: SPEAKS } },
  };
  const answer = await answerWith(
    result,
    modernMeta({ elicitation: { url: {} } }, { name: "by-hand", version: "1" }),
  );
  expect(answer.result).toBeUndefined();
  expect(answer.error).toMatchObject({
    code: -32603,
    data: { error: "response_invalid", reason: expect.stringContaining("elicitation/create") },
  });
}, 60_000);
