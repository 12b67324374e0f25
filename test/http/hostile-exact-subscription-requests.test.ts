// Over `run --listen`, the respelled-number rule (test/http/hostile-exact-results.test.ts) for
// what still went re-serialised: an answer that names a subscription in its result's _meta (the
// HTTP session writes the client's subscription id back there, and so wrote the whole message
// again), the answer to initialize, a server's request to the client, and a call's argument so
// small that it reads as 0 or a subnormal (`1e-400` went to the server as `0`). A long integer
// reached the client as another (9007199254740993 as …992). Now each goes as written, or an
// error takes its place (an answer), or the server is told no (its request), or the call is
// refused naming the field: never another number. Raw HTTP; the rawlines fixture.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { completeLines } from "../helpers/completeLines.js";
import { fixtureCommand } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";
import { startListener } from "./listen.js";
import { initializeBody, messagesOf, openSession, raw } from "./raw.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const SUB = "io.modelcontextprotocol/subscriptionId";
const SCHEMA = { type: "object", properties: { amount: { type: "number" } } };

async function listener(env: Record<string, string> = {}) {
  const log = join(newStateDir(), "raw.log");
  const l = await startListener(fixtureCommand("rawlines"), {
    args: ["--approval", "none"],
    env: {
      FIXTURE_RAW_LOG: log,
      FIXTURE_RAW_TOOLS: JSON.stringify([{ name: "pay", inputSchema: SCHEMA }]),
      ...env,
    },
  });
  cleanup.push(() => l.close());
  const received = () =>
    completeLines(readFileSync(log, "utf8"))
      .filter(Boolean)
      .map((x) => JSON.parse(x) as string);
  return { l, received };
}

describe("numbers a server writes, over HTTP, where the message was written again", () => {
  it("an answer naming a subscription in its result's _meta: as written or an error, never another number", async () => {
    const { l } = await listener();
    const h = l.headers({ "mcp-session-id": await openSession(l) });
    const line = `{"jsonrpc":"2.0","id":ID,"result":{"_meta":{"${SUB}":1},"n":9007199254740993}}`;
    const r = await raw(l, {
      headers: h,
      body: JSON.stringify({ jsonrpc: "2.0", id: 5, method: "raw/reply", params: { line } }),
    });
    expect(r.status, r.body).toBe(200);
    expect(r.body).not.toContain("9007199254740992");
    const answer = messagesOf(r.body).find((m) => m.id === 5);
    expect(answer).toBeDefined();
    if (answer?.error === undefined) expect(r.body).toContain('"n":9007199254740993');
  });

  it("the answer to initialize: as written or an error, never another number", async () => {
    const answer =
      '{"jsonrpc":"2.0","id":ID,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"x","version":"1","build":9007199254740993}}}';
    const { l } = await listener({ FIXTURE_RAW_ANSWERS: JSON.stringify({ initialize: answer }) });
    const r = await raw(l, { body: initializeBody(1) });
    expect(r.body).not.toContain("9007199254740992");
    expect(messagesOf(r.body).find((m) => m.id === 1)).toBeDefined();
  });

  it("an error answering initialize: as the server wrote it", async () => {
    const answer =
      '{"jsonrpc":"2.0","id":ID,"error":{"code":-32000,"message":"not now","data":{"retryAt":9007199254740993}}}';
    const { l } = await listener({ FIXTURE_RAW_ANSWERS: JSON.stringify({ initialize: answer }) });
    const r = await raw(l, { body: initializeBody(1) });
    expect(r.body).toContain('"data":{"retryAt":9007199254740993}');
    expect(messagesOf(r.body).find((m) => m.id === 1)?.error?.code).toBe(-32000);
  });

  it("a server's sampling/createMessage: reaches the client as written, or the server is told no", async () => {
    const { l, received } = await listener();
    const h = l.headers({ "mcp-session-id": await openSession(l) });
    const request =
      '{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{"messages":[],"maxTokens":9007199254740993}}';
    const r = await raw(l, {
      headers: h,
      body: JSON.stringify({ jsonrpc: "2.0", id: 6, method: "raw/send", params: { lines: [request] } }),
    });
    expect(r.status, r.body).toBe(200);
    expect(r.body).not.toContain("9007199254740992");
    const asked = messagesOf(r.body).find((m) => m.method === "sampling/createMessage");
    if (asked !== undefined) expect(r.body).toContain('"maxTokens":9007199254740993');
    else {
      await raw(l, { headers: h, body: '{"jsonrpc":"2.0","id":7,"method":"ping"}' });
      expect(received().some((x) => x.includes('"id":"s1"') && x.includes('"error"'))).toBe(true);
    }
  });
});

describe("a call's number so small that a double reads it as 0 or a subnormal, over HTTP", () => {
  it("1e-400 is refused naming the field, never forwarded as 0", async () => {
    const { l, received } = await listener();
    const h = l.headers({ "mcp-session-id": await openSession(l) });
    const post = async (body: string) => {
      const r = await raw(l, { headers: h, body });
      expect(r.status, r.body).toBe(200);
      return messagesOf(r.body).find((m) => m.result !== undefined || m.error !== undefined);
    };
    await post('{"jsonrpc":"2.0","id":1,"method":"tools/list"}');
    const refused = await post(
      '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"pay","arguments":{"amount":1e-400}}}',
    );
    const result = refused?.result as { isError?: boolean; content: { text: string }[] };
    expect(result.isError).toBe(true);
    expect(result.content.map((c) => c.text).join("\n")).toContain('"amount"');
    await post('{"jsonrpc":"2.0","id":3,"method":"ping"}');
    expect(received().filter((x) => x.includes('"method":"tools/call"'))).toEqual([]);
  });
});
