// An integer a client writes in a call's arguments must reach the server as that integer, or not
// at all. The gateway parses the call (JSON.parse: doubles), digests, records and has a human
// approve what it parsed, and sends that on re-serialised: an integer literal beyond 2^53 is
// rounded (`9007199254740993` goes out as `9007199254740992`) and one that is a double exactly is
// respelled by its shortest digits (`12345678901234567168` goes out as `12345678901234567000`).
// A server that reads integers exactly (Python, Rust's u64, Go's json.Number, Java's BigInteger)
// would act on another number than the agent asked for: `delete_message(1234567890123456789)`
// deleting message 1234567890123456768. Such a call is refused as invalid arguments naming the
// field, as a number beyond the double range is (docs/security.md, "A peer wearing the gateway
// down"); an integer that goes out as written (2^53, a small one), and an id of any size, pass.
// Real gateway, the rawlines fixture server, which logs every line it receives as received.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { auditEvents } from "../helpers/approvals.js";
import { completeLines } from "../helpers/completeLines.js";
import { waitFor } from "../helpers/files.js";
import type { WireMessage } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { type RawGateway, rawGateway } from "../helpers/raw.js";
import { newStateDir } from "../helpers/state.js";

const peers: RawGateway[] = [];
afterEach(async () => {
  for (const p of peers.splice(0)) await p.close();
});

const SCHEMA = {
  type: "object",
  properties: { message_id: { type: "integer" }, items: { type: "array" }, note: { type: "string" } },
};

async function start(): Promise<{ gw: RawGateway; received: () => string[] }> {
  const log = join(newStateDir(), "raw.log");
  const gw = rawGateway({
    args: ["--label", "nums", "--approval", "none", "--", ...fixtureCommand("rawlines")],
    env: {
      FIXTURE_RAW_LOG: log,
      FIXTURE_RAW_TOOLS: JSON.stringify([{ name: "delete_message", inputSchema: SCHEMA }]),
    },
  });
  peers.push(gw);
  await gw.initialize();
  await gw.request("tools/list");
  const received = () =>
    completeLines(readFileSync(log, "utf8"))
      .filter(Boolean)
      .map((l) => JSON.parse(l) as string);
  return { gw, received };
}

/** Writes a tools/call of delete_message with `args` as raw JSON text under `id` (raw too), and waits for its answer. */
async function call(gw: RawGateway, id: string, args: string): Promise<WireMessage> {
  gw.send(
    `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"delete_message","arguments":${args}}}\n`,
  );
  const want = JSON.parse(id) as number | string;
  return gw.next((m) => m.id === want && (m.result !== undefined || m.error !== undefined), 20_000);
}

/** The tools/call lines the server received. */
function calls(received: () => string[]): string[] {
  return received().filter((l) => l.includes('"method":"tools/call"'));
}

describe("integers in a call's arguments that the gateway would not pass on as written", () => {
  it.each([
    ["beyond 2^53, rounded by JSON.parse", '{"message_id":9007199254740993}', "message_id"],
    ["a snowflake-sized id", '{"message_id":1234567890123456789}', "message_id"],
    [
      "a double exactly, respelled by its shortest digits",
      '{"message_id":12345678901234567168}',
      "message_id",
    ],
    ["negative, nested in an array", '{"items":[1,{"v":-18446744073709551615}]}', "items[1].v"],
    ["beyond 1e21, written back in exponent form", '{"message_id":123456789012345678901234}', "message_id"],
  ])("%s: refused naming the field, never forwarded as another number", async (_what, args, field) => {
    const { gw, received } = await start();
    const r = await call(gw, "7", args);
    // a ping after it: the server's log holds everything the gateway wrote before the ping
    await gw.request("ping");
    expect(calls(received)).toEqual([]);
    expect(r.error).toBeUndefined();
    expect(r.result?.isError).toBe(true);
    const text = JSON.stringify(r.result?.content);
    expect(text).toContain(JSON.stringify(field).slice(1, -1));
    const denied = await waitFor(
      async () => {
        const events = (await auditEvents(gw.stateDir)).filter((e) => e.type === "authorization_denied");
        return events.length > 0 ? events : null;
      },
      10_000,
      "the refusal's authorization_denied event",
    );
    expect(denied.map((e) => [e.tool, e.reason])).toEqual([["delete_message", "invalid_arguments"]]);
  });

  it("an integer that goes out as written, and a request id of any size, are forwarded unchanged", async () => {
    const { gw, received } = await start();
    const ok = await call(
      gw,
      "9007199254740993",
      '{"message_id":9007199254740992,"items":[-0,123456789012345],"note":"12345678901234567891"}',
    );
    expect(ok.error).toBeUndefined();
    expect(ok.result?.isError).toBeUndefined();
    const [line] = calls(received);
    expect(line).toContain(
      '"arguments":{"message_id":9007199254740992,"items":[0,123456789012345],"note":"12345678901234567891"}',
    );
  });
});
