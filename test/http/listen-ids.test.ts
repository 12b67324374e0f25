// Client ids over `run --listen` come back byte-for-byte as the client wrote them, as on stdio:
// ids JSON.parse would round or respell (9007199254740993, 1e2, 1.0, -0, "\u0041") in answers the
// server gave, answers the gateway gave itself (tools/list, a refusal), a cancellation, and the
// error a request still open gets when its session ends. Raw HTTP, so the bytes are the test's.
// And the server's own requests to the client: answered over HTTP, they reach the server under
// the id as the server wrote it.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { rawIdOf } from "../../src/relay/idScan.js";
import { auditEvents } from "../helpers/approvals.js";
import { completeLines } from "../helpers/completeLines.js";
import { readJsonLines, removeDir, tempDir, waitFor } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";
import { idTextOf, SERVER_IDS, serverRequestLine } from "../relay/serverIds.js";
import { startListener } from "./listen.js";
import { messagesOf, openSession, raw } from "./raw.js";
import { startFixture } from "./upstreamFixture.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const IDS = ["9007199254740993", "1e2", "1.0", "-0", "12345678901234567890123", '"\\u0041"', '"a\\/b"'];

/**
 * A `--listen` gateway (approval none) in front of the lenient fixture, which logs every method
 * it is sent to `methodLog`; one session opened (`h`: its headers), and `post` sending a raw body on it.
 */
async function lenientSession(stateDir?: string) {
  const dir = tempDir();
  cleanup.push(() => removeDir(dir));
  const methodLog = join(dir, "methods.jsonl");
  const l = await startListener(fixtureCommand("lenient"), {
    args: ["--approval", "none"],
    env: { FIXTURE_METHOD_LOG: methodLog },
    ...(stateDir ? { stateDir } : {}),
  });
  cleanup.push(() => l.close());
  const session = await openSession(l);
  const h = l.headers({ "mcp-session-id": session });
  return { methodLog, l, h, post: (body: string) => raw(l, { headers: h, body }) };
}

/** The top-level id of a JSON body exactly as written, read without parsing. */
function idText(body: string): string | null {
  return rawIdOf(body.trim());
}

describe("HTTP ids are kept as the client wrote them", () => {
  it("in answers from the server and from the gateway, through a cancellation and a session's end", async () => {
    const { methodLog, l, h, post } = await lenientSession();

    for (const id of IDS) {
      // answered by the server (ping passes through)
      const ping = await post(`{"jsonrpc":"2.0","id":${id},"method":"ping"}`);
      expect(ping.status, id).toBe(200);
      expect(idText(ping.body), ping.body).toBe(id);
      // answered by the gateway itself: the verified catalog, and a refusal
      const list = await post(`{"jsonrpc":"2.0","id":${id},"method":"tools/list"}`);
      expect(idText(list.body), list.body).toBe(id);
      const refused = await post(
        `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"no_such_tool","arguments":{}}}`,
      );
      expect(idText(refused.body), refused.body).toBe(id);
      expect(JSON.parse(refused.body).error.data.error).toBe("tool_not_in_catalog");
    }

    // Two reads whose ids JSON.parse makes one number; the first is cancelled by its own text.
    const reads = () =>
      existsSync(methodLog)
        ? readJsonLines<{ method: string }>(methodLog).filter((r) => r.method === "resources/read").length
        : 0;
    const first = post(
      '{"jsonrpc":"2.0","id":9007199254740993,"method":"resources/read","params":{"uri":"hang:1"}}',
    );
    const second = post(
      '{"jsonrpc":"2.0","id":9007199254740992,"method":"resources/read","params":{"uri":"hang:2"}}',
    );
    await waitFor(() => reads() === 2, 10_000, "both reads to reach the server");
    const cancel = await post(
      '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9007199254740993}}',
    );
    expect(cancel.status).toBe(202);
    expect((await first).status).toBe(204); // cancelled: no answer
    // the other read is still open: the session's end answers it, with its own id
    const ended = await raw(l, { method: "DELETE", headers: h });
    expect(ended.status).toBe(200);
    const last = await second;
    expect(idText(last.body), last.body).toBe("9007199254740992");
    // shaped as every refusal (docs/refusals.md): what happened, and what the agent should do
    const endedData = JSON.parse(last.body).error.data;
    expect(endedData.error).toBe("session_ended");
    expect(endedData.reason).toMatch(/^the HTTP session ended/);
    expect(endedData.retry).toMatch(/^check whether the request took effect/);
  });

  it("a cancellation ends its request however either spells the id (escapes, 1.0 for 1)", async () => {
    const { methodLog, post } = await lenientSession();
    // [the id as the request writes it, as its cancellation does]: one id each (JSON's equality)
    const pairs = [
      ['"a\\/b"', '"a\\/b"'], // PHP's json_encode escapes "/"
      ['"c\\/d"', '"c/d"'],
      ['"\\u00e9"', '"\u00e9"'], // Python's ensure_ascii
      ["1.0", "1"],
    ];
    const logged = (method: string) =>
      readJsonLines<{ method: string }>(methodLog).filter((r) => r.method === method).length;
    const reads = pairs.map(([id], i) =>
      post(`{"jsonrpc":"2.0","id":${id},"method":"resources/read","params":{"uri":"hang:${i}"}}`),
    );
    await waitFor(() => logged("resources/read") === pairs.length, 10_000, "every read at the server");
    for (const [, id] of pairs) {
      const cancel = await post(
        `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":${id}}}`,
      );
      expect(cancel.status).toBe(202);
    }
    // cancelled: no answer (docs/refusals.md), and the server was told
    expect((await Promise.all(reads)).map((r) => r.status)).toEqual(pairs.map(() => 204));
    await waitFor(
      () => logged("notifications/cancelled") === pairs.length,
      10_000,
      "every cancellation at the server",
    );
  });

  it("the audit names each call by the client's id as it wrote it, never the session's wire id", async () => {
    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    const { methodLog, l, post } = await lenientSession(stateDir);
    const call = (id: string, name: string, message: string) =>
      `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"${name}","arguments":{"message":"${message}"}}}`;
    expect((await post('{"jsonrpc":"2.0","id":"list-1","method":"tools/list"}')).status).toBe(200);
    for (const body of [
      call('"my-call-77"', "echo", "hi"),
      call("9007199254740993", "echo", "big"),
      call("1.0", "no_such_tool", "refused"),
      '{"jsonrpc":"2.0","id":2e1,"method":"resources/read","params":{"uri":"file:///x"}}',
    ])
      expect((await post(body)).status).toBe(200);
    // PHP's json_encode spelling of "a/b", cancelled by another spelling
    const hung = post(call('"a\\/b"', "echo", "hang"));
    const calls = () =>
      readJsonLines<{ method: string }>(methodLog).filter((r) => r.method === "tools/call").length;
    await waitFor(() => calls() === 3, 10_000, "the hanging call at the server");
    const cancel = await post(
      '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a/b"}}',
    );
    expect(cancel.status).toBe(202);
    expect((await hung).status).toBe(204);
    await l.close();

    expect(JSON.stringify(await auditEvents(stateDir))).not.toContain("portcullis-raw-id");
    const r = await runCli(["audit", "activity", "--json", "--state-dir", stateDir], {
      env: passphraseEnv(),
    });
    expect(r.code).toBe(0);
    const activity = JSON.parse(r.stdout) as { call: string; outcome: string }[];
    expect(activity.map((a) => [a.call, a.outcome]).sort()).toEqual(
      [
        ['"my-call-77"', "ok"],
        ["9007199254740993", "ok"],
        ["1.0", "refused"],
        ["2e1", "ok"],
        ['"a\\/b"', "interrupted"],
      ].sort(),
    );
  });

  it("in front of a server reached by URL (run --listen --url)", async () => {
    const server = await startFixture({}, null); // plain http on loopback
    cleanup.push(() => server.kill());
    const l = await startListener([], { args: ["--approval", "none", "--url", server.url] });
    cleanup.push(() => l.close());
    const session = await openSession(l);
    const h = l.headers({ "mcp-session-id": session });
    for (const id of IDS) {
      const ping = await raw(l, { headers: h, body: `{"jsonrpc":"2.0","id":${id},"method":"ping"}` });
      expect(idText(ping.body), ping.body).toBe(id);
      const call = await raw(l, {
        headers: h,
        body: `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}`,
      });
      expect(idText(call.body), call.body).toBe(id);
      expect(call.body).toContain("Echo: hi");
    }
  });

  it("the server's requests to the client, answered over HTTP, reach the server under its own id text", async () => {
    const dir = tempDir();
    cleanup.push(() => removeDir(dir));
    const rawLog = join(dir, "raw.log");
    const l = await startListener(fixtureCommand("rawlines"), {
      args: ["--approval", "none"],
      env: { FIXTURE_RAW_LOG: rawLog },
    });
    cleanup.push(() => l.close());
    const session = await openSession(l);
    const h = l.headers({ "mcp-session-id": session });
    // the server writes its requests while raw/send is open: they come on that exchange's stream
    const lines = SERVER_IDS.map((id, i) => serverRequestLine(id, i));
    const sent = await raw(l, {
      headers: h,
      body: JSON.stringify({ jsonrpc: "2.0", id: 7, method: "raw/send", params: { lines } }),
    });
    expect(sent.status).toBe(200);
    const asked = messagesOf(sent.body).filter((m) => m.method !== undefined);
    expect(asked).toHaveLength(SERVER_IDS.length);
    for (const m of asked) {
      const marker = (m as { params: { marker: string } }).params.marker;
      const answer = await raw(l, {
        headers: h,
        body: JSON.stringify({ jsonrpc: "2.0", id: m.id, result: { marker } }),
      });
      expect(answer.status).toBe(202);
    }
    const answers = () => {
      const out = new Map<string, string>();
      if (!existsSync(rawLog)) return out;
      for (const line of completeLines(readFileSync(rawLog, "utf8")).filter(Boolean)) {
        const text = JSON.parse(line) as string;
        const m = JSON.parse(text) as { method?: string; result?: { marker?: string } };
        if (m.method === undefined && m.result?.marker) out.set(m.result.marker, text);
      }
      return out;
    };
    await waitFor(() => answers().size === SERVER_IDS.length, 10_000, "every answer at the server");
    SERVER_IDS.forEach((id, i) => {
      expect(idTextOf(answers().get(`k${i}`)!), `answer k${i}`).toBe(id);
    });
  });
});

describe("ids JSON numbers cannot hold", () => {
  it("1e400 and -1e400 (Infinity once parsed) are refused as on stdio: 400, -32600, nothing forwarded, nothing run", async () => {
    const { methodLog, post } = await lenientSession();
    const calls = () =>
      readJsonLines<{ method: string; params: { arguments?: { message?: string } } | null }>(methodLog)
        .filter((r) => r.method === "tools/call")
        .map((r) => r.params?.arguments?.message);

    for (const id of ["1e400", "-1e400", "1e309", "-123e456"]) {
      const call = await post(
        `{"jsonrpc":"2.0","id":${id},"method":"tools/call","params":{"name":"echo","arguments":{"message":"ran ${id}"}}}`,
      );
      expect(call.status, `${id}: ${call.body}`).toBe(400);
      expect(JSON.parse(call.body), id).toMatchObject({
        jsonrpc: "2.0",
        id: null,
        error: { code: -32600, message: expect.stringContaining("request id must be a string or a number") },
      });
      const ping = await post(`{"jsonrpc":"2.0","id":${id},"method":"ping"}`);
      expect(ping.status, `${id}: ${ping.body}`).toBe(400);
      // as an answer to a server's request: no id names one, refused too
      const answer = await post(`{"jsonrpc":"2.0","id":${id},"result":{}}`);
      expect(answer.status, `${id}: ${answer.body}`).toBe(400);
      expect(JSON.parse(answer.body).error.code).toBe(-32600);
    }
    // The session still serves; the server saw only the call with a real id.
    const ok = await post(
      '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"message":"control"}}}',
    );
    expect(ok.status).toBe(200);
    expect(idText(ok.body)).toBe("7");
    await waitFor(() => calls().includes("control"), 10_000, "the control call at the server");
    expect(calls()).toEqual(["control"]);
    const pings = readJsonLines<{ method: string }>(methodLog).filter((r) => r.method === "ping");
    expect(pings).toEqual([]);
  });
});
