// One place decides what a malformed JSON-RPC message is (`classify`, src/relay/jsonrpc.ts): the
// same malformed message gets the same error code and words from the gateway whether the client
// wrote it as a stdio line or POSTed it to `run --listen` (there with the HTTP status of a refused
// body, 400, and id null). Before, the HTTP body check had rules of its own: a request that also
// carried a result or an error passed it (stdio refuses it: which of the two it is, is anyone's
// guess), params given by position were refused there as malformed while stdio reads them as
// JSON-RPC allows and the guard refuses them (-32602) where MCP needs an object.
import { afterEach, expect, it } from "vitest";
import { fixtureCommand } from "../helpers/paths.js";
import { rawGateway } from "../helpers/raw.js";
import { startListener } from "./listen.js";
import { messagesOf, openSession, raw } from "./raw.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/** Malformed messages: each is refused by the transport, before anything reads it further. */
const MALFORMED = [
  '{"jsonrpc":"2.0","id":101,"method":"ping","result":{}}',
  '{"jsonrpc":"2.0","id":102,"method":"tools/list","error":{"code":1,"message":"x"}}',
  '{"jsonrpc":"2.0","method":"notifications/initialized","result":{}}',
  '{"id":103,"method":"ping"}',
  '{"jsonrpc":"2.0","id":104,"method":"ping","params":5}',
  '{"jsonrpc":"2.0","id":null,"method":"ping"}',
  '{"jsonrpc":"2.0","id":105,"result":{},"error":{"code":1,"message":"m"}}',
  '{"jsonrpc":"2.0","id":106,"error":{"code":"x"}}',
  '{"jsonrpc":"2.0","id":107}',
  "5",
];

/** Well-formed JSON-RPC that MCP refuses: params by position, answered by the gateway's guard. */
const BY_POSITION = '{"jsonrpc":"2.0","id":108,"method":"resources/read","params":["secret://x"]}';

type Err = { code: number; message: string };

it("the same malformed message gets the same error over stdio and over HTTP", async () => {
  const command = fixtureCommand("echo");
  const gw = rawGateway({ args: ["--label", "echo", "--approval", "none", "--", ...command] });
  cleanup.push(() => gw.close());
  expect((await gw.initialize()).result, gw.stderr()).toBeDefined();
  const overStdio: Err[] = [];
  for (const line of [...MALFORMED, BY_POSITION]) {
    gw.send(`${line}\n`);
    const answer = await gw.next((m) => m.error !== undefined, 20_000);
    overStdio.push(answer.error as Err);
  }

  const l = await startListener(command, { args: ["--approval", "none"] });
  cleanup.push(() => l.close());
  const session = await openSession(l);
  const headers = l.headers({ "mcp-session-id": session });
  const overHttp: Err[] = [];
  for (const body of MALFORMED) {
    const r = await raw(l, { headers, body });
    expect(r.status, body).toBe(400);
    const parsed = JSON.parse(r.body) as { id: unknown; error: Err };
    expect(parsed.id, body).toBeNull();
    overHttp.push(parsed.error);
  }
  const byPosition = await raw(l, { headers, body: BY_POSITION });
  expect(byPosition.status, byPosition.body).toBe(200);
  overHttp.push(messagesOf(byPosition.body)[0]!.error as Err);

  const pairs = [...MALFORMED, BY_POSITION].map((m, i) => ({
    message: m,
    stdio: { code: overStdio[i]!.code, message: overStdio[i]!.message },
    http: { code: overHttp[i]!.code, message: overHttp[i]!.message },
  }));
  for (const p of pairs) expect(p.http, p.message).toEqual(p.stdio);
  // each malformed one is -32600, the one by position the guard's -32602
  expect(pairs.map((p) => p.stdio.code)).toEqual([...MALFORMED.map(() => -32600), -32602]);
});

it("a batch is refused in both, worded for each transport", async () => {
  const command = fixtureCommand("echo");
  const gw = rawGateway({ args: ["--label", "echo", "--approval", "none", "--", ...command] });
  cleanup.push(() => gw.close());
  expect((await gw.initialize()).result, gw.stderr()).toBeDefined();
  gw.send('[{"jsonrpc":"2.0","id":1,"method":"ping"}]\n');
  const stdio = (await gw.next((m) => m.error !== undefined, 20_000)).error as Err;
  const l = await startListener(command, { args: ["--approval", "none"] });
  cleanup.push(() => l.close());
  const r = await raw(l, { body: '[{"jsonrpc":"2.0","id":1,"method":"ping"}]' });
  expect(r.status).toBe(400);
  const http = (JSON.parse(r.body) as { error: Err }).error;
  expect(http.code).toBe(stdio.code);
  expect(stdio.message).toBe(
    "Invalid JSON-RPC message: portcullis does not accept JSON-RPC batches (arrays); send one message per line.",
  );
  expect(http.message).toBe(
    "Invalid JSON-RPC message: portcullis does not accept JSON-RPC batches (arrays); send one message per POST.",
  );
});
