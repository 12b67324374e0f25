// The respelled-number refusal (test/gateway/hostile-exact-numbers.test.ts) for numbers written
// with a fraction or an exponent. They are read and re-serialised the same way as integers, and
// reached the server as another number too: `12345678901234.567` (an amount of 17 significant
// digits) went out as `12345678901234.566`, `9007199254740993.0` as `9007199254740992`. A server
// that reads decimals exactly (Java's BigDecimal, Python's json.loads(parse_float=Decimal), Go's
// json.Number) acted on another amount than the client wrote, under an approval of the gateway's
// reading. Such a call is refused now, naming the field; a decimal a double holds goes as before.

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { completeLines } from "../helpers/completeLines.js";
import type { WireMessage } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { type RawGateway, rawGateway } from "../helpers/raw.js";
import { newStateDir } from "../helpers/state.js";

const peers: RawGateway[] = [];
afterEach(async () => {
  for (const p of peers.splice(0)) await p.close();
});

const SCHEMA = { type: "object", properties: { amount: { type: "number" } } };

it.each([
  ["17 significant digits with a fraction", "12345678901234.567", null],
  ["an integer beyond 2^53 written with a fraction", "9007199254740993.0", "9007199254740993"],
  ["an integer beyond 2^53 written with an exponent", "9.007199254740993e15", "9007199254740993"],
])(
  "%s (%s): refused, or forwarded as written, never as another number",
  async (_what, amount, same) => {
    const log = join(newStateDir(), "raw.log");
    const gw = rawGateway({
      args: ["--label", "decimals", "--approval", "none", "--", ...fixtureCommand("rawlines")],
      env: {
        FIXTURE_RAW_LOG: log,
        FIXTURE_RAW_TOOLS: JSON.stringify([{ name: "pay", inputSchema: SCHEMA }]),
      },
    });
    peers.push(gw);
    await gw.initialize();
    await gw.request("tools/list");
    gw.send(
      `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"pay","arguments":{"amount":${amount}}}}\n`,
    );
    const r: WireMessage = await gw.next(
      (m) => m.id === 7 && (m.result !== undefined || m.error !== undefined),
      20_000,
    );
    // a ping after it: the server's log holds everything the gateway wrote before the ping
    await gw.request("ping");
    const forwarded = completeLines(readFileSync(log, "utf8")).filter((l) => l.includes("tools/call"));
    if (forwarded.length === 0) {
      expect(r.result?.isError).toBe(true);
      return;
    }
    // forwarded: the amount as the client wrote it, or the same number exactly
    const line = JSON.parse(forwarded[0] as string) as string;
    const sent = /"amount":([-0-9.eE+]+)/.exec(line)?.[1];
    expect([amount, same], `forwarded as ${sent}`).toContain(sent);
  },
  60_000,
);
