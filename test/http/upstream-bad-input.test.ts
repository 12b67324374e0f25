// Bad answers from a server reached by `run --url`: each request still gets one JSON-RPC answer
// (the server's own words when it gave one, else upstream_http_error, message_too_large or
// response_invalid), the gateway keeps serving, and the execution epoch does not change for an
// answer that is only bad.
// Also the SSE reader on its own: framing the standard allows, and data over the limit.
import { afterEach, describe, expect, it } from "vitest";
import { SseReader } from "../../src/supervisor/sse.js";
import { readJsonLines, tempDir, waitFor } from "../helpers/files.js";
import { startGateway } from "../helpers/gateway.js";
import { rawGateway } from "../helpers/raw.js";
import { newStateDir } from "../helpers/state.js";
import { gatewayRow } from "../helpers/status.js";
import { HOSTILE, startFixture } from "./upstreamFixture.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/**
 * The gateway's epoch as `portcullis status --json` shows it, read in the test process
 * (listGateways, as status reads it): these cases are about the answers, not about the status
 * command, which was a process of its own (about 0.2 s of CPU) at each look.
 */
async function epochOf(stateDir: string): Promise<string> {
  return (await gatewayRow(stateDir, (r) => r.epoch !== null, "the gateway's epoch")).epoch as string;
}

function error(e: unknown) {
  return e as { code: number; data: Record<string, unknown> };
}

describe("a remote server that answers badly", () => {
  it("every bad answer becomes one error for its request; the gateway and the epoch stay", async () => {
    const server = await startFixture({}, null, 0, HOSTILE);
    cleanup.push(() => server.kill());
    const stateDir = newStateDir();
    const gw = await startGateway({
      args: ["--url", server.url, "--approval", "none", "--max-message-bytes", "100000"],
      stateDir,
    });
    cleanup.push(() => gw.close());
    await gw.client.listTools();
    const epoch = () => epochOf(stateDir);
    const before = await epoch();
    const call = (mode: string) =>
      gw.client
        .callTool({ name: "bad", arguments: { mode } }, undefined, { timeout: 20_000 })
        .catch((e) => e);

    for (const [mode, status] of [
      ["html", 200],
      ["notjson", 200],
      ["500", 500],
      ["401", 401],
      ["otherid", 200],
    ] as const) {
      const e = error(await call(mode));
      expect(e.code, mode).toBe(-32603);
      expect(e.data, mode).toMatchObject({ error: "upstream_http_error", status });
    }
    for (const mode of ["huge", "hugesse"]) {
      const huge = error(await call(mode));
      expect(huge.code, mode).toBe(-32603);
      expect(huge.data, mode).toMatchObject({ error: "message_too_large" });
    }
    for (const mode of ["deep", "deepbatch"]) {
      const deep = error(await call(mode));
      expect(deep.code, mode).toBe(-32603);
      expect(deep.data, mode).toMatchObject({ error: "message_too_deep", limit: 512 });
    }
    for (const mode of ["malformed", "bothmembers"]) {
      const invalid = error(await call(mode));
      expect(invalid.code, mode).toBe(-32603);
      expect(invalid.data, mode).toMatchObject({ error: "response_invalid" });
    }
    // garbage and foreign events on a stream are dropped; the answer in it still arrives (CRLF framing)
    const sse = (await call("sse")) as { content: { text: string }[] };
    expect(sse.content[0]!.text).toBe("sse ok");

    expect((await call("fine")).content[0].text).toBe("ok fine");
    expect(await epoch()).toBe(before);
    expect(gw.stderr()).not.toMatch(/TypeError|Unhandled|at .*\.js:\d+/);
  });
});

describe("a remote server's initialize answer", () => {
  it("on an SSE stream the server keeps open: later requests go on, and a warning says so", async () => {
    const server = await startFixture({ FIXTURE_INIT: "sse-open" }, null, 0, HOSTILE);
    cleanup.push(() => server.kill());
    const gw = await startGateway({
      args: ["--url", server.url, "--approval", "none", "--hold-timeout", "3000"],
    });
    cleanup.push(() => gw.close());
    // held behind the open stream, these would end identity_pending once the hold timeout passed
    expect((await gw.client.listTools()).tools.map((t) => t.name)).toEqual(["bad"]);
    const r = (await gw.client.callTool({ name: "bad", arguments: { mode: "fine" } })) as {
      content: { text: string }[];
    };
    expect(r.content[0]!.text).toBe("ok fine");
    await gw.waitForStderr(/keeps the SSE stream of a request open after answering it/);
    expect(gw.stderr()).not.toMatch(/remote session ended/);
  });

  it("never given: the epoch ends once the hold timeout has passed, and its requester is told", async () => {
    const server = await startFixture({ FIXTURE_INIT: "silent" }, null, 0, HOSTILE);
    cleanup.push(() => server.kill());
    const peer = rawGateway({ args: ["--url", server.url, "--approval", "none", "--hold-timeout", "2000"] });
    cleanup.push(() => peer.close());
    const init = await peer.initialize({}, 20_000);
    expect(init.error?.code).toBe(-32054);
    expect(init.error?.data).toMatchObject({ error: "epoch_transition", retried: false });
    // the gateway's stderr and its answer travel on different pipes: wait for the line
    const ended = /remote session ended: the server did not answer initialize within 2 s/;
    await waitFor(() => ended.test(peer.stderr()), 10_000, "the line saying why the session ended");
  });
});

describe("a remote server's initialize answered twice", () => {
  it("the first answer is the one: the record and the MCP-Protocol-Version sent are what the client negotiated; the second is dropped", async () => {
    const headerLog = `${tempDir("pc-init-twice-")}/versions.jsonl`;
    const server = await startFixture(
      { FIXTURE_INIT: "twice", FIXTURE_HEADER: "mcp-protocol-version", FIXTURE_HEADER_LOG: headerLog },
      null,
      0,
      HOSTILE,
    );
    cleanup.push(() => server.kill());
    const peer = rawGateway({ args: ["--url", server.url, "--approval", "none"] });
    cleanup.push(() => peer.close());
    const init = await peer.initialize({ protocolVersion: "2025-06-18" });
    expect(init.result).toMatchObject({ protocolVersion: "2025-06-18" });
    expect((await peer.request("tools/list")).result).toBeDefined();
    const call = await peer.request("tools/call", { name: "bad", arguments: { mode: "fine" } });
    expect(call.result).toBeDefined();

    // every POST after initialize carried the version the client negotiated, never the second's
    const sent = readJsonLines<{ value: string | null }>(headerLog).map((l) => l.value);
    expect(sent[0]).toBeNull(); // the initialize itself
    expect(sent.slice(1).length).toBeGreaterThanOrEqual(3);
    expect(new Set(sent.slice(1))).toEqual(new Set(["2025-06-18"]));
    // the epoch's record says what the first answer said (its row as status reads it, read here)
    const row = await gatewayRow(peer.stateDir, (r) => r.record !== null, "the epoch's record");
    const remote = row.record?.remote;
    expect(remote?.protocolVersion).toBe("2025-06-18");
    expect(remote?.capabilities).toEqual({ tools: {} });
    // the line comes on stderr, what was awaited on another pipe (or the store, or the exit): read in either order
    await waitFor(
      () => /dropped a second answer to initialize/.test(peer.stderr()),
      20_000,
      "the gateway's line on the second answer",
    );
    expect(peer.stderr()).toMatch(/dropped a second answer to initialize/);
    expect(peer.stderr()).not.toMatch(/remote session ended|TypeError|Unhandled|at .*\.js:\d+/);
  });
});

describe("a remote server's initialize answered with a protocolVersion that cannot be sent back", () => {
  for (const [what, version] of [
    ["a line break", '"2025-06-18\\r\\nX-Injected: 1"'],
    ["a character past U+00FF", '"2025-06-18\\u0100"'],
    ["100,000 characters", JSON.stringify("9".repeat(100_000))],
  ] as const) {
    it(`(${what}): the client's initialize gets response_invalid at once, nothing is sent with it, no session is lost`, async () => {
      const headerLog = `${tempDir("pc-init-version-")}/versions.jsonl`;
      const server = await startFixture(
        {
          FIXTURE_INIT_VERSION: version,
          FIXTURE_HEADER: "mcp-protocol-version",
          FIXTURE_HEADER_LOG: headerLog,
        },
        null,
        0,
        HOSTILE,
      );
      cleanup.push(() => server.kill());
      const peer = rawGateway({ args: ["--url", server.url, "--approval", "none"] });
      cleanup.push(() => peer.close());
      const init = await peer.initialize({}, 20_000);
      expect(init.error?.code, JSON.stringify(init).slice(0, 300)).toBe(-32603);
      expect(init.error?.data).toMatchObject({ error: "response_invalid" });
      expect(init.error?.message).toMatch(/answered initialize with a protocolVersion that is not a version/);
      // the value itself is never quoted
      expect(JSON.stringify(init)).not.toMatch(/Injected|\u0100|9{100}/);
      // what the client sends next is not sent with that version (before: every request failed
      // before it was made, each ended the epoch, and supervision gave up)
      await peer.request("ping", undefined, 20_000);
      expect(readJsonLines<{ value: string | null }>(headerLog).every((l) => l.value === null)).toBe(true);
      expect(peer.stderr()).not.toMatch(/remote session ended|could not be made|TypeError|Unhandled/);
    });
  }
});

describe("a remote server whose answer's headers cannot be read or sent back", () => {
  const unreadable = (e: unknown, what: RegExp) => {
    const err = e as { code?: number; message?: string; data?: { error?: string; retry?: string } };
    expect(err.code, JSON.stringify(e).slice(0, 300)).toBe(-32603);
    expect(err.data?.error).toBe("upstream_response_unreadable");
    expect(err.message).toMatch(what);
    expect(err.data?.retry).not.toMatch(/retry later/);
  };
  // what supervision said before: each failure ended the epoch, and after five it gave up
  const noLostSessions = /remote session ended|dropped \d+ sessions|could not be made|TypeError|Unhandled/;

  for (const [what, sid, said] of [
    ["a control character", '"QZXq\\u0001QZXw"', /Mcp-Session-Id.*U\+0001/],
    ["a space", '"QZXq QZXw"', /Mcp-Session-Id.*a space/],
    ["a character past U+007E", '"QZXq\\u00e9QZXw"', /Mcp-Session-Id.*U\+00E9/],
  ] as const) {
    it(`(a session id with ${what}): initialize gets one error saying so, nothing is sent with it, no session is lost`, async () => {
      const headerLog = `${tempDir("pc-session-id-")}/sessions.jsonl`;
      const server = await startFixture(
        { FIXTURE_SESSION_ID: sid, FIXTURE_HEADER: "mcp-session-id", FIXTURE_HEADER_LOG: headerLog },
        null,
        0,
        HOSTILE,
      );
      cleanup.push(() => server.kill());
      const peer = rawGateway({ args: ["--url", server.url, "--approval", "none"] });
      cleanup.push(() => peer.close());
      const init = await peer.initialize({}, 20_000);
      unreadable(init.error, said);
      // the value itself is never quoted
      expect(JSON.stringify(init)).not.toMatch(/QZX/);
      expect(peer.stderr()).not.toMatch(/QZX/);
      await peer.request("ping", undefined, 20_000);
      // initialize once (not again and again under new epochs), then the ping, with no session id
      const posts = readJsonLines<{ value: string | null }>(headerLog);
      expect(posts.map((p) => p.value)).toEqual([null, null, null]); // initialize, initialized, ping
      expect(peer.stderr()).not.toMatch(noLostSessions);
    });
  }

  it("(headers over node's 16 KiB limit on every answer): each request gets one error saying so, never retried", async () => {
    const headerLog = `${tempDir("pc-header-pad-")}/posts.jsonl`;
    const server = await startFixture(
      { FIXTURE_HEADER_PAD: "17000", FIXTURE_HEADER: "mcp-session-id", FIXTURE_HEADER_LOG: headerLog },
      null,
      0,
      HOSTILE,
    );
    cleanup.push(() => server.kill());
    const peer = rawGateway({ args: ["--url", server.url, "--approval", "none"] });
    cleanup.push(() => peer.close());
    const init = await peer.initialize({}, 20_000);
    unreadable(init.error, /headers are larger than node's 16 KiB limit/);
    expect(JSON.stringify(init)).not.toMatch(/ppppp/);
    const ping = await peer.request("ping", undefined, 20_000);
    unreadable(ping.error, /headers are larger than node's 16 KiB limit/);
    expect(readJsonLines(headerLog)).toHaveLength(3); // initialize, initialized, ping: once each
    expect(peer.stderr()).not.toMatch(noLostSessions);
    expect(peer.stderr()).not.toMatch(/ppppp/);
  });

  it("(one call's answer): that call gets the error, the epoch stays and serves on", async () => {
    const server = await startFixture({}, null, 0, HOSTILE);
    cleanup.push(() => server.kill());
    const peer = rawGateway({ args: ["--url", server.url, "--approval", "none"] });
    cleanup.push(() => peer.close());
    expect((await peer.initialize({}, 20_000)).result).toBeDefined();
    expect((await peer.request("tools/list", undefined, 20_000)).result).toBeDefined();
    const epoch = () => epochOf(peer.stateDir);
    const before = await epoch();
    const call = (mode: string) => peer.request("tools/call", { name: "bad", arguments: { mode } }, 20_000);
    unreadable((await call("bigheaders")).error, /headers are larger than node's 16 KiB limit/);
    unreadable(
      (await call("badheader")).error,
      /header x-note holds a character no header may hold \(U\+0001\)/i,
    );
    expect((await call("fine")).result).toMatchObject({ content: [{ text: "ok fine" }] });
    expect(await epoch()).toBe(before);
    expect(peer.stderr()).not.toMatch(noLostSessions);
    expect(peer.stderr()).not.toMatch(/ppppp|bad.note/);
  });
});

describe("a large answer as one SSE event", () => {
  it("arrives whole, and small calls made while it is under way are answered", async () => {
    const server = await startFixture({}, null, 0, HOSTILE);
    cleanup.push(() => server.kill());
    const gw = await startGateway({ args: ["--url", server.url, "--approval", "none"] });
    cleanup.push(() => gw.close());
    await gw.client.listTools();
    const call = (args: Record<string, unknown>) =>
      gw.client.callTool({ name: "bad", arguments: args }, undefined, { timeout: 50_000 }) as Promise<{
        content: { text: string }[];
      }>;
    // under the SDK client's own 10 MiB line limit
    const bytes = 8 * 1024 * 1024;
    const large = call({ mode: "large", bytes });
    // the server holds the large answer's end back until a "release" finds it written whole: each
    // release before that is a small call answered while the large one streams in
    let released = "released 0";
    let small = 0;
    while (released === "released 0") {
      released = (await call({ mode: "release" })).content[0]!.text;
      small++;
      if (released === "released 0") await new Promise((r) => setTimeout(r, 50));
    }
    expect(released).toBe("released 1");
    const text = (await large).content[0]!.text;
    expect(text.length).toBe(bytes);
    // (compared as a string: /^z+$/ over 8 MiB once threw "Maximum call stack size exceeded" in
    // CI, V8 having run it in its regexp interpreter)
    expect(text === "z".repeat(bytes)).toBe(true);
    // every call got its own answer: ids were not crossed
    const answers = gw.received().filter((m) => m.id !== undefined && m.method === undefined);
    const sent = gw.sent().filter((m) => m.method === "tools/call");
    expect(sent).toHaveLength(small + 1);
    for (const m of sent) expect(answers.filter((a) => a.id === m.id)).toHaveLength(1);
    expect((await call({ mode: "fine" })).content[0]!.text).toBe("ok fine");
  });
});

describe("SseReader", () => {
  const read = (chunks: string[], max = 1000) => {
    const events: { event: string; data: string; id: string | null }[] = [];
    const over: number[] = [];
    const r = new SseReader(
      (e) => events.push(e),
      (n) => over.push(n),
      max,
    );
    for (const c of chunks) r.push(Buffer.from(c, "utf8"));
    r.end();
    return { events, over };
  };

  it("joins data lines, keeps ids, accepts LF, CRLF and CR, split anywhere, and skips comments", () => {
    const text = ': hi\nid: 7\ndata: {"a":\ndata: 1}\n\nevent: x\r\ndata: y\r\n\r\ndata: z\r\rdata: é\n\n';
    const whole = read([text]);
    expect(whole.events).toEqual([
      { event: "message", data: '{"a":\n1}', id: "7" },
      { event: "x", data: "y", id: "7" },
      { event: "message", data: "z", id: "7" },
      { event: "message", data: "é", id: "7" },
    ]);
    // the same bytes one at a time (a \r\n split between chunks, é split between its two bytes)
    const bytes = Buffer.from(text, "utf8");
    const events: unknown[] = [];
    const r = new SseReader(
      (e) => events.push(e),
      () => {},
      1000,
    );
    for (const b of bytes) r.push(Buffer.from([b]));
    r.end();
    expect(events).toEqual(whole.events);
  });

  it("drops an event whose data is over the limit, says so once, and goes on", () => {
    const { events, over } = read(
      [`data: ${"x".repeat(600)}\ndata: ${"y".repeat(600)}\n\ndata: ok\n\n`],
      1000,
    );
    expect(over).toHaveLength(1);
    expect(over[0]).toBeGreaterThan(1000);
    expect(events.map((e) => e.data)).toEqual(["ok"]);
  });

  it("an unterminated event at the end of the stream is not dispatched", () => {
    expect(read(["data: a\n\ndata: b"]).events.map((e) => e.data)).toEqual(["a"]);
  });
});
