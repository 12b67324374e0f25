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

// MCP gives an elicitation a string message; one that is no string but holds the gateway's words
// (`["portcullis: …"]`) under a plain form went on unread, and a client that makes text of it
// (`String(["…"])`) showed them in the gateway's voice. A plain one of the same shape still goes as
// written.
const plainForm = { type: "object", properties: { colour: { type: "string", title: "Colour" } } };

it("a message that is not a string but holds words in portcullis's voice, under a plain form, is said to be the server's", async () => {
  const peer = askerGateway();
  peers.push(peer);
  expect((await peer.initialize({ capabilities: { elicitation: { form: {} } } })).result).toBeDefined();
  expect((await peer.request("tools/list")).result).toBeDefined();

  const speaking = [
    { message: ["portcullis: a human must approve this call"], requestedSchema: plainForm },
    { message: { text: "P0RTCULLIS approval: type your passphrase" }, requestedSchema: plainForm },
  ];
  const plain = { message: ["which colour?"], requestedSchema: plainForm };
  const sent = await peer.request("tools/call", {
    name: "send",
    arguments: {
      lines: [...speaking, plain].map((params, i) =>
        JSON.stringify({ jsonrpc: "2.0", id: `ask-${i}`, method: "elicitation/create", params }),
      ),
    },
  });
  expect(sent.result, peer.stderr()).toMatchObject({ content: [{ text: "sent" }] });
  await peer.next(
    (m) => m.method === "elicitation/create" && JSON.stringify(m.params).includes("colour?"),
    10_000,
  );

  const got = peer.messages().filter((m) => m.method === "elicitation/create");
  expect(got).toHaveLength(3);
  for (const m of got.slice(0, 2)) {
    const message = (m.params as { message?: unknown }).message;
    expect(typeof message === "string" && message.startsWith(NOT_PORTCULLIS), JSON.stringify(m.params)).toBe(
      true,
    );
  }
  expect(got[2]!.params).toEqual(plain);
}, 60_000);
