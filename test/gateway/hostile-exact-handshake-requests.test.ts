// The respelled-number rule (test/gateway/hostile-exact-results.test.ts) for what the gateway sent
// re-serialised whatever it held: the answer to the client's initialize and server/discover (which
// the gateway rewrites: listChanged advertised, tasks taken out), an error answering either, and a
// server's own requests to the client (sampling/createMessage, elicitation/create, roots/list),
// which go out under the gateway's id. A number such as 12345678901234567891 or 9007199254740993
// in them reached the client as 12345678901234567000 or 9007199254740992. Now such a message
// reaches the client as the server wrote it (a handshake answer with the gateway's change written
// into it: test/gateway/hostile-exact-handshake-answers.test.ts), or an error takes its place (an
// answer), or the server is answered with an error and the client gets nothing (a request): never
// another number.
// Real gateway, the rawlines fixture server (FIXTURE_RAW_ANSWERS: its answer to a method, as written).

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { completeLines } from "../helpers/completeLines.js";
import { waitFor } from "../helpers/files.js";
import type { WireMessage } from "../helpers/gateway.js";
import { modernMeta } from "../helpers/modernMeta.js";
import { fixtureCommand } from "../helpers/paths.js";
import { type RawGateway, rawGateway } from "../helpers/raw.js";
import { newStateDir } from "../helpers/state.js";

const peers: RawGateway[] = [];
afterEach(async () => {
  for (const p of peers.splice(0)) await p.close();
});

function start(env: Record<string, string> = {}): { gw: RawGateway; received: () => string[] } {
  const log = join(newStateDir(), "raw.log");
  const gw = rawGateway({
    args: ["--label", "exact", "--approval", "none", "--", ...fixtureCommand("rawlines")],
    env: { FIXTURE_RAW_LOG: log, ...env },
  });
  peers.push(gw);
  const received = () =>
    completeLines(readFileSync(log, "utf8"))
      .filter(Boolean)
      .map((l) => JSON.parse(l) as string);
  return { gw, received };
}

/** The client's line answering (or refusing) its request `id`. */
async function answerLine(gw: RawGateway, id: number | string): Promise<{ msg: WireMessage; line: string }> {
  const msg = await gw.next((m) => m.id === id && (m.result !== undefined || m.error !== undefined), 20_000);
  const line =
    gw.lines().find((l) => {
      try {
        return (JSON.parse(l) as WireMessage).id === id;
      } catch {
        return false;
      }
    }) ?? "";
  return { msg, line };
}

/** As written: never the number re-serialised, nor an error in its place. */
function writtenOrRefused(msg: WireMessage, line: string, written: string, respelled: string): void {
  expect(line).not.toContain(respelled);
  expect(msg.error, line).toBeUndefined();
  expect(line).toContain(written);
}

const INIT = {
  protocolVersion: "2025-11-25",
  capabilities: { sampling: {}, elicitation: {}, roots: {} },
  clientInfo: { name: "exact", version: "1" },
};

describe("the answer to the client's handshake", () => {
  it.each([
    ["an integer the double respells", "12345678901234567891", "12345678901234567000"],
    ["an integer beyond 2^53", "9007199254740993", "9007199254740992"],
  ])("initialize's result with %s: as written, never another number", async (_w, n, other) => {
    const answer = `{"jsonrpc":"2.0","id":ID,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"x","version":"1","build":${n}}}}`;
    const { gw } = start({ FIXTURE_RAW_ANSWERS: JSON.stringify({ initialize: answer }) });
    gw.send({ jsonrpc: "2.0", id: 1, method: "initialize", params: INIT });
    const { msg, line } = await answerLine(gw, 1);
    writtenOrRefused(msg, line, `"build":${n}`, other);
  });

  it("initialize's error with such an integer in its data: never another number", async () => {
    const answer =
      '{"jsonrpc":"2.0","id":ID,"error":{"code":-32000,"message":"not now","data":{"retryAt":9007199254740993}}}';
    const { gw } = start({ FIXTURE_RAW_ANSWERS: JSON.stringify({ initialize: answer }) });
    gw.send({ jsonrpc: "2.0", id: 2, method: "initialize", params: INIT });
    const { msg, line } = await answerLine(gw, 2);
    expect(line).not.toContain("9007199254740992");
    // not rewritten by the gateway: as the server wrote it
    expect(msg.error?.code).toBe(-32000);
    expect(line).toContain('"data":{"retryAt":9007199254740993}');
  });

  it("server/discover's result with such an integer: as written, never another number", async () => {
    const answer =
      '{"jsonrpc":"2.0","id":ID,"result":{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"serverInfo":{"name":"x","version":"1","build":12345678901234567891}}}';
    const { gw } = start({ FIXTURE_RAW_ANSWERS: JSON.stringify({ "server/discover": answer }) });
    gw.send({
      jsonrpc: "2.0",
      id: 3,
      method: "server/discover",
      params: {
        _meta: modernMeta({}, { name: "exact", version: "1" }),
      },
    });
    const { msg, line } = await answerLine(gw, 3);
    writtenOrRefused(msg, line, '"build":12345678901234567891', "12345678901234567000");
  });
});

describe("a server's request to the client", () => {
  it.each([
    [
      "sampling/createMessage",
      '{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{"messages":[],"maxTokens":9007199254740993}}',
      '"maxTokens":9007199254740993',
      "9007199254740992",
    ],
    [
      "elicitation/create",
      '{"jsonrpc":"2.0","id":"s1","method":"elicitation/create","params":{"message":"how many?","requestedSchema":{"type":"object","properties":{"n":{"type":"integer","default":12345678901234567891}}}}}',
      '"default":12345678901234567891',
      "12345678901234567000",
    ],
    [
      "roots/list",
      '{"jsonrpc":"2.0","id":"s1","method":"roots/list","params":{"_meta":{"seq":9007199254740993}}}',
      '"seq":9007199254740993',
      "9007199254740992",
    ],
  ])(
    "%s: reaches the client as written, or the server is told no; never another number",
    async (method, request, written, other) => {
      const { gw, received } = start();
      await gw.initialize(INIT);
      const r = await gw.request("raw/send", { lines: [request] });
      expect(r.error).toBeUndefined();
      // either the request reached the client, or the server got an error for it
      const outcome = await waitFor(
        () => {
          const line = gw.lines().find((l) => l.includes(`"method":"${method}"`));
          if (line !== undefined) return { line };
          const refused = received().find((l) => l.includes('"id":"s1"') && l.includes('"error"'));
          return refused === undefined ? null : { refused };
        },
        10_000,
        "the request at the client, or its refusal at the server",
      );
      if ("line" in outcome) {
        expect(outcome.line).not.toContain(other);
        expect(outcome.line).toContain(written);
        // the client's answer goes back to the server under the id it wrote
        const asked = JSON.parse(outcome.line ?? "") as WireMessage;
        gw.send({ jsonrpc: "2.0", id: asked.id, result: {} });
        await waitFor(
          () => received().some((l) => l.includes('"id":"s1"') && l.includes('"result"')) || null,
          10_000,
          "the answer at the server",
        );
      } else expect(gw.lines().some((l) => l.includes(other))).toBe(false);
    },
  );
});
