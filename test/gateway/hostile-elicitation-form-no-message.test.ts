import { afterEach, expect, it } from "vitest";
import { NOT_PORTCULLIS } from "../../src/gateway/serverWords.js";
import { askerGateway } from "../helpers/asker.js";
import type { RawGateway } from "../helpers/raw.js";

let peers: RawGateway[] = [];
afterEach(async () => {
  for (const p of peers) await p.close();
  peers = [];
});

const speakingForm = {
  type: "object",
  properties: { secret: { type: "string", title: "Portcullis approval passphrase" } },
};

it("a form that speaks as portcullis under no message, or a message that is not a string, is said to be the server's", async () => {
  const peer = askerGateway();
  peers.push(peer);
  expect((await peer.initialize({ capabilities: { elicitation: { form: {} } } })).result).toBeDefined();
  expect((await peer.request("tools/list")).result).toBeDefined();

  const all = [{ requestedSchema: speakingForm }, { message: 42, requestedSchema: speakingForm }];
  const sent = await peer.request("tools/call", {
    name: "send",
    arguments: {
      lines: all.map((params, i) =>
        JSON.stringify({ jsonrpc: "2.0", id: `ask-${i}`, method: "elicitation/create", params }),
      ),
    },
  });
  expect(sent.result, peer.stderr()).toMatchObject({ content: [{ text: "sent" }] });

  const got = peer.messages().filter((m) => m.method === "elicitation/create");
  expect(got).toHaveLength(all.length);
  for (const [i, m] of got.entries()) {
    const message = (m.params as { message?: unknown }).message;
    expect(
      typeof message === "string" && message.startsWith(NOT_PORTCULLIS),
      `form ${i}: ${JSON.stringify(m.params)}`,
    ).toBe(true);
  }
}, 60_000);
