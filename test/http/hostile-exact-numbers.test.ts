// Over `run --listen` as on stdio (test/gateway/hostile-exact-numbers.test.ts): an integer in a
// call's arguments that the gateway would forward as another integer (JSON.parse rounds
// `9007199254740993` to …992; the HTTP session re-serialises the body before the gateway reads it)
// is refused as invalid arguments naming the field, never forwarded; one that goes out as written
// is forwarded. Raw HTTP, so the bytes are the test's; the rawlines fixture logs what it receives.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { completeLines } from "../helpers/completeLines.js";
import { fixtureCommand } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";
import { startListener } from "./listen.js";
import { messagesOf, openSession, raw } from "./raw.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const SCHEMA = { type: "object", properties: { message_id: { type: "integer" } } };

describe("integers in a call's arguments over HTTP", () => {
  it("one JSON.parse rounds is refused naming the field and never forwarded; one kept as written is forwarded", async () => {
    const log = join(newStateDir(), "raw.log");
    const l = await startListener(fixtureCommand("rawlines"), {
      args: ["--approval", "none"],
      env: {
        FIXTURE_RAW_LOG: log,
        FIXTURE_RAW_TOOLS: JSON.stringify([{ name: "delete_message", inputSchema: SCHEMA }]),
      },
    });
    cleanup.push(() => l.close());
    const h = l.headers({ "mcp-session-id": await openSession(l) });
    const post = async (body: string) => {
      const r = await raw(l, { headers: h, body });
      expect(r.status, r.body).toBe(200);
      return messagesOf(r.body).find((m) => m.result !== undefined || m.error !== undefined);
    };
    await post('{"jsonrpc":"2.0","id":1,"method":"tools/list"}');
    const calls = () =>
      completeLines(readFileSync(log, "utf8"))
        .filter(Boolean)
        .map((x) => JSON.parse(x) as string)
        .filter((x) => x.includes('"method":"tools/call"'));

    const refused = await post(
      '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"delete_message","arguments":{"message_id":9007199254740993}}}',
    );
    const result = refused?.result as { isError?: boolean; content: { text: string }[] };
    expect(result.isError).toBe(true);
    expect(result.content.map((c) => c.text).join("\n")).toContain('"message_id"');
    await post('{"jsonrpc":"2.0","id":3,"method":"ping"}');
    expect(calls()).toEqual([]);

    const ok = await post(
      '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"delete_message","arguments":{"message_id":9007199254740992}}}',
    );
    expect(ok?.error).toBeUndefined();
    expect(calls().map((c) => c.includes('"arguments":{"message_id":9007199254740992}'))).toEqual([true]);
  });
});
