// Numbers too large for a double: `1e400` (or `-1.8e308`, `2E+999`) is valid JSON text, JSON.parse
// reads it as ±Infinity, and JSON.stringify writes that as `null`. A server's result, error,
// notification or request holding one went to the client re-serialised, so the client read `null`
// where the server wrote a number (a balance of 1e400 became no balance). The respelled-number
// look skipped such tokens (it looked for runs of 16 digits and for tiny exponents only). Now they
// follow the same rule as `9007199254740993` and `1e-400`: the message goes on as the server wrote
// it, and a client's progress token that would reach the server as `null` is refused naming it.
// Real gateway, the rawlines fixture (it logs the lines it gets, answers with the line it is given).

import { afterEach, expect, it } from "vitest";
import { waitFor } from "../helpers/files.js";
import { ECHO_RAW_TOOLS, type RawGateway, rawlinesGateway } from "../helpers/raw.js";

const peers: RawGateway[] = [];
afterEach(async () => {
  for (const p of peers.splice(0)) await p.close();
});

async function start(): Promise<{ gw: RawGateway; received: () => string[] }> {
  const { peer: gw, received } = await rawlinesGateway([], { label: "overflow", tools: ECHO_RAW_TOOLS });
  peers.push(gw);
  return { gw, received };
}

/** The line the client got for `id` once the server answered echo_raw with `answer`. */
async function answerLine(gw: RawGateway, id: number, answer: string): Promise<string> {
  gw.send({
    jsonrpc: "2.0",
    id,
    method: "tools/call",
    params: { name: "echo_raw", arguments: { line: answer } },
  });
  await gw.next((m) => m.id === id && (m.result !== undefined || m.error !== undefined), 20_000);
  return gw.lines().find((l) => l.startsWith(`{"jsonrpc":"2.0","id":${id},`)) ?? "";
}

it("a server's result and error holding a number beyond the double range reach the client as written, never null", async () => {
  const { gw } = await start();
  const result = await answerLine(
    gw,
    7,
    '{"jsonrpc":"2.0","id":ID,"result":{"content":[{"type":"text","text":"ok"}],"structuredContent":{"balance":1e400,"debt":-1.8e308,"cap":2E+999}}}',
  );
  expect(result).toContain('"structuredContent":{"balance":1e400,"debt":-1.8e308,"cap":2E+999}');
  expect(result).not.toContain("null");
  const error = await answerLine(
    gw,
    8,
    '{"jsonrpc":"2.0","id":ID,"error":{"code":-32000,"message":"over","data":{"limit":1e400}}}',
  );
  expect(error).toContain('"data":{"limit":1e400}');
  // a number a double holds, written with a three-digit exponent, goes as before
  const finite = await answerLine(
    gw,
    9,
    '{"jsonrpc":"2.0","id":ID,"result":{"content":[],"structuredContent":{"big":1e300}}}',
  );
  expect(JSON.parse(finite).result.structuredContent).toEqual({ big: 1e300 });
});

it("a server's notification and request holding one reach the client as written", async () => {
  const { gw } = await start();
  const note =
    '{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":{"n":1e400}}}';
  const ask =
    '{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{"messages":[],"maxTokens":1e400}}';
  expect((await gw.request("raw/send", { lines: [note, ask] })).error).toBeUndefined();
  await gw.next((m) => m.method === "notifications/message");
  const asked = await gw.next((m) => m.method === "sampling/createMessage");
  expect(gw.lines()).toContain(note);
  const line = gw.lines().find((l) => l.includes('"method":"sampling/createMessage"')) ?? "";
  expect(line).toContain('"maxTokens":1e400');
  expect(line).not.toContain("null");
  // under the gateway's own id, which the client's answer comes back by
  expect(asked.id).not.toBe("s1");
});

it("a client's progress token beyond the double range is refused naming it, never sent to the server as null", async () => {
  const { gw, received } = await start();
  gw.send(
    '{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"echo_raw","arguments":{"line":"{\\"jsonrpc\\":\\"2.0\\",\\"id\\":ID,\\"result\\":{\\"content\\":[]}}"},"_meta":{"progressToken":1e400}}}\n',
  );
  const r = await gw.next((m) => m.id === 5, 20_000);
  await gw.request("ping");
  expect(r.error?.code, JSON.stringify(r)).toBe(-32602);
  expect(r.error?.message).toContain("params._meta.progressToken 1e400");
  await waitFor(
    () => received().some((l) => l.includes('"method":"ping"')) || null,
    10_000,
    "the ping at the server",
  );
  expect(received().filter((l) => l.includes('"method":"tools/call"'))).toEqual([]);
});
