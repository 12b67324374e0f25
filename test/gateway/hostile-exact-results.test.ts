// An integer the server writes must reach the client as that integer, or not at all (and never
// another number in its place). The gateway reads every server message with JSON.parse (doubles),
// and a message it sends on re-serialised has its long integers changed: `9007199254740993` goes
// out as `9007199254740992`, `12345678901234567891` as `12345678901234567000`. A guarded call's
// result (whose outcome the gateway records), an error, and every notification were always sent
// re-serialised. Now such a message goes on as the server wrote it when nothing the gateway reads
// in it could be read otherwise by the client (no member written twice in any object of it), and
// is otherwise replaced by an error (a response) or dropped with a log line (a notification).
// A client's progress token that would reach the server as another number is refused.
// Real gateway, the rawlines fixture server, which answers a call with the line it is given.

import { afterEach, describe, expect, it } from "vitest";
import { auditEvents } from "../helpers/approvals.js";
import { waitFor } from "../helpers/files.js";
import type { WireMessage } from "../helpers/gateway.js";
import { ECHO_RAW_TOOLS, type RawGateway, rawlinesGateway } from "../helpers/raw.js";

const peers: RawGateway[] = [];
afterEach(async () => {
  for (const p of peers.splice(0)) await p.close();
});

async function start(): Promise<{ gw: RawGateway; received: () => string[] }> {
  const { peer: gw, received } = await rawlinesGateway([], { label: "exact", tools: ECHO_RAW_TOOLS });
  peers.push(gw);
  return { gw, received };
}

/** A call of echo_raw under `id`, answered by the server with `line` (its `ID` the server's id); its answer's line. */
async function callAnswered(
  gw: RawGateway,
  id: number,
  line: string,
): Promise<{ msg: WireMessage; line: string }> {
  gw.send({
    jsonrpc: "2.0",
    id,
    method: "tools/call",
    params: { name: "echo_raw", arguments: { line } },
  });
  const msg = await gw.next((m) => m.id === id && (m.result !== undefined || m.error !== undefined), 20_000);
  const text = gw.lines().find((l) => {
    try {
      return (JSON.parse(l) as WireMessage).id === id;
    } catch {
      return false;
    }
  });
  return { msg, line: text ?? "" };
}

/** The call's tool_result outcome as the audit recorded it. */
async function outcomeOf(gw: RawGateway, id: number): Promise<unknown> {
  const ended = await waitFor(
    async () =>
      (await auditEvents(gw.stateDir)).find(
        (e) => (e.type === "tool_result" || e.type === "call_interrupted") && e.requestId === id,
      ) ?? null,
    10_000,
    "the call's end in the audit",
  );
  return ended.outcome;
}

describe("a call's result holding an integer re-serialising would change", () => {
  it.each([
    ["beyond 2^53", "9007199254740993"],
    ["a double exactly, respelled by its shortest digits", "12345678901234567891"],
    ["negative, in exponent form once respelled", "-123456789012345678901234"],
  ])("%s: reaches the client as the server wrote it", async (_what, n) => {
    const { gw } = await start();
    const answer = `{"jsonrpc":"2.0","id":ID,"result":{"content":[{"type":"text","text":"ok"}],"structuredContent":{"id":${n},"list":[1,${n}]}}}`;
    const { msg, line } = await callAnswered(gw, 5, answer);
    expect(msg.error).toBeUndefined();
    expect(line).toContain(`"structuredContent":{"id":${n},"list":[1,${n}]}`);
    expect(await outcomeOf(gw, 5)).toBe("ok");
  });

  it("an isError result: relayed as written, and recorded as the tool error it is", async () => {
    const { gw } = await start();
    const answer = `{"jsonrpc":"2.0","id":ID,"result":{"isError":true,"content":[{"type":"text","text":"no"}],"structuredContent":{"n":9007199254740993}}}`;
    const { msg, line } = await callAnswered(gw, 6, answer);
    expect(msg.result?.isError).toBe(true);
    expect(line).toContain('"structuredContent":{"n":9007199254740993}');
    expect(await outcomeOf(gw, 6)).toBe("tool-error");
  });

  it("a member written twice beside it (the client might read isError otherwise): an error, never the altered number", async () => {
    const { gw } = await start();
    const answer = `{"jsonrpc":"2.0","id":ID,"result":{"isError":false,"content":[],"structuredContent":{"id":12345678901234567891},"isError":true}}`;
    const { msg } = await callAnswered(gw, 7, answer);
    expect(msg.result).toBeUndefined();
    expect((msg.error?.data as { error?: string } | undefined)?.error).toBe("response_invalid");
    expect(gw.lines().some((l) => l.includes("12345678901234567000"))).toBe(false);
    expect(await outcomeOf(gw, 7)).toBe("error");
  });

  it("a server's error response with such an integer in its data: relayed as written", async () => {
    const { gw } = await start();
    const answer = `{"jsonrpc":"2.0","id":ID,"error":{"code":-32000,"message":"nope","data":{"row":9007199254740993}}}`;
    const { msg, line } = await callAnswered(gw, 8, answer);
    expect(msg.error?.code).toBe(-32000);
    expect(line).toContain('"data":{"row":9007199254740993}');
  });

  it("long digits in strings, and integers that go out as written, still take the usual path", async () => {
    const { gw } = await start();
    const answer = `{"jsonrpc":"2.0","id":ID,"result":{"content":[{"type":"text","text":"12345678901234567891"}],"structuredContent":{"n":9007199254740992,"m":1234567890123456}}}`;
    const { msg } = await callAnswered(gw, 9, answer);
    expect(msg.result?.structuredContent).toEqual({ n: 9007199254740992, m: 1234567890123456 });
  });
});

describe("a server's notification holding an integer re-serialising would change", () => {
  it("notifications/message and resources/updated reach the client as written", async () => {
    const { gw } = await start();
    const lines = [
      '{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":{"n":9007199254740993}}}',
      '{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"file:///a","_meta":{"v":12345678901234567891}}}',
    ];
    const r = await gw.request("raw/send", { lines });
    expect(r.error).toBeUndefined();
    await gw.next((m) => m.method === "notifications/resources/updated");
    expect(gw.lines()).toContain(lines[0]);
    expect(gw.lines()).toContain(lines[1]);
  });

  it("one with a member written twice: dropped with a log line, never passed on altered", async () => {
    const { gw } = await start();
    const lines = [
      '{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","level":"error","data":{"n":9007199254740993}}}',
      '{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"after"}}',
    ];
    await gw.request("raw/send", { lines });
    await gw.next(
      (m) => m.method === "notifications/message" && (m.params as { data?: unknown }).data === "after",
    );
    expect(gw.lines().some((l) => l.includes("9007199254740992") || l.includes("9007199254740993"))).toBe(
      false,
    );
    await waitFor(
      () => /dropped the server's "?notifications\/message/.test(gw.stderr()) || null,
      10_000,
      "the log line",
    );
  });

  it("a progress notification under a token the client wrote as a long integer keeps the token", async () => {
    const { gw } = await start();
    // raw/send is relayed as written: the server got the token as the client wrote it
    gw.send(
      `{"jsonrpc":"2.0","id":"p1","method":"raw/send","params":{"_meta":{"progressToken":9007199254740993},"lines":["{\\"jsonrpc\\":\\"2.0\\",\\"method\\":\\"notifications/progress\\",\\"params\\":{\\"progressToken\\":9007199254740993,\\"progress\\":1}}"]}}\n`,
    );
    await gw.next((m) => m.id === "p1");
    expect(gw.lines()).toContain(
      '{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":9007199254740993,"progress":1}}',
    );
  });
});

describe("a client's progress token that would reach the server as another number", () => {
  it("a guarded call with _meta.progressToken 9007199254740993: refused as invalid params, never forwarded", async () => {
    const { gw, received } = await start();
    gw.send(
      '{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"echo_raw","arguments":{},"_meta":{"progressToken":9007199254740993}}}\n',
    );
    const r = await gw.next((m) => m.id === 11);
    await gw.request("ping");
    expect(r.error?.code).toBe(-32602);
    expect(r.error?.message).toContain("progressToken");
    expect(received().filter((l) => l.includes('"method":"tools/call"'))).toEqual([]);
  });

  it("a string token, and an integer token that goes out as written, are forwarded", async () => {
    const { gw, received } = await start();
    gw.send(
      '{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"echo_raw","arguments":{},"_meta":{"progressToken":9007199254740992}}}\n',
    );
    const r = await gw.next((m) => m.id === 12);
    expect(r.error).toBeUndefined();
    expect(received().some((l) => l.includes('"progressToken":9007199254740992'))).toBe(true);
  });
});
