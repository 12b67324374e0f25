// Over `run --listen` as on stdio (test/gateway/hostile-exact-results.test.ts): an integer a server
// writes that re-serialising would change (`9007199254740993`, which JSON.parse rounds) reaches an
// HTTP client as the server wrote it, in a call's result and in a notification. Before, the HTTP
// session wrote every message again from what the gateway read, so the client got …992. So does
// initialize's answer, with the gateway's own change to it written in (before: response_invalid
// in its place; test/gateway/hostile-exact-handshake-answers.test.ts on stdio). Raw HTTP,
// so the bytes are what the client reads; the rawlines fixture answers with the line it is given.
import { afterEach, describe, expect, it } from "vitest";
import { fixtureCommand } from "../helpers/paths.js";
import { startListener } from "./listen.js";
import { initializeBody, openSession, raw } from "./raw.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const TOOLS = [
  { name: "echo_raw", inputSchema: { type: "object", properties: { line: { type: "string" } } } },
];

describe("integers a server writes, over HTTP", () => {
  it("a call's result and a notification reach the client as the server wrote them", async () => {
    const l = await startListener(fixtureCommand("rawlines"), {
      args: ["--approval", "none"],
      env: { FIXTURE_RAW_TOOLS: JSON.stringify(TOOLS) },
    });
    cleanup.push(() => l.close());
    const h = l.headers({ "mcp-session-id": await openSession(l) });
    const post = async (body: string) => {
      const r = await raw(l, { headers: h, body });
      expect(r.status, r.body).toBe(200);
      return r.body;
    };
    await post('{"jsonrpc":"2.0","id":1,"method":"tools/list"}');
    const answer =
      '{"jsonrpc":"2.0","id":ID,"result":{"content":[{"type":"text","text":"ok"}],"structuredContent":{"id":9007199254740993,"list":[1,12345678901234567891]}}}';
    const called = await post(
      JSON.stringify({
        jsonrpc: "2.0",
        id: "call-7",
        method: "tools/call",
        params: { name: "echo_raw", arguments: { line: answer } },
      }),
    );
    expect(called).toContain('"structuredContent":{"id":9007199254740993,"list":[1,12345678901234567891]}');
    expect(called).toContain('"id":"call-7"');
    expect(called).not.toContain("9007199254740992");

    const sent = await post(
      JSON.stringify({
        jsonrpc: "2.0",
        id: 8,
        method: "raw/send",
        params: {
          lines: [
            '{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":{"n":9007199254740993}}}',
          ],
        },
      }),
    );
    expect(sent).toContain('"data":{"n":9007199254740993}');
    expect(sent).not.toContain("9007199254740992");
  });

  it("initialize's answer holding one reaches the client as written, with the gateway's listChanged written in", async () => {
    const answer =
      '{"jsonrpc":"2.0","id":ID,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{},"experimental":{"q":{"limit":12345678901234567891}}},"serverInfo":{"name":"x","version":"1","build":9007199254740993}}}';
    const l = await startListener(fixtureCommand("rawlines"), {
      args: ["--approval", "none"],
      env: { FIXTURE_RAW_ANSWERS: JSON.stringify({ initialize: answer }) },
    });
    cleanup.push(() => l.close());
    const init = await raw(l, { body: initializeBody("init-1") });
    expect(init.status, init.body).toBe(200);
    expect(init.body).toContain('"id":"init-1"');
    expect(init.body).toContain('"build":9007199254740993');
    expect(init.body).toContain('"limit":12345678901234567891');
    expect(init.body).toContain('"tools":{"listChanged":true}');
    expect(init.body).not.toContain("9007199254740992");
    expect(init.body).not.toContain("response_invalid");
    const h = l.headers({ "mcp-session-id": init.headers["mcp-session-id"] as string });
    const done = await raw(l, { headers: h, body: '{"jsonrpc":"2.0","method":"notifications/initialized"}' });
    expect(done.status).toBe(202);
    const listed = await raw(l, { headers: h, body: '{"jsonrpc":"2.0","id":2,"method":"tools/list"}' });
    expect(listed.status, listed.body).toBe(200);
    expect(listed.body).toContain('"tools":[]');
  });
});
