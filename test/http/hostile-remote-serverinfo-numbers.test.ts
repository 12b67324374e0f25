// A server reached by URL (`run --url`) is known by what it says of itself: its serverInfo and
// capabilities are in the epoch's record and its identity digest, shown by `status` and the
// approval review as "the server's own words" (docs/identity.md). A number there that JSON.parse
// reads as another (`"build": 9007199254740993`, read as …992) was recorded and shown as read: not
// what the server said (the client, which gets the initialize answer as written, read …993), and
// a server coming back as `…992` had the same identity digest, its serverInfo not named among the
// changes. Now such numbers are kept exactly beside the parsed record (`remote.writtenNumbers`),
// digested with it and shown as written. The server is real (node's HTTP server on loopback, in
// this process, writing its answers by hand); the gateway is a real process.
import type { IncomingMessage, ServerResponse } from "node:http";
import { afterEach, expect, it } from "vitest";
import { runCli } from "../helpers/gateway.js";
import { serveOnLoopback } from "../helpers/loopbackMcpServer.js";
import { type RawGateway, rawGateway } from "../helpers/raw.js";
import { gatewayRow } from "../helpers/status.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/**
 * A server whose initialize answer's serverInfo carries `build` and then `more` (JSON text),
 * written as given; restart() forgets its sessions.
 */
async function bigNumberServer(build: string, more = "") {
  let generation = 1;
  const { url } = await serveOnLoopback((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (b: Buffer) => chunks.push(b));
    req.on("end", () => {
      if (req.method !== "POST") return void res.writeHead(405).end();
      const msg = JSON.parse(Buffer.concat(chunks).toString("utf8")) as {
        id?: unknown;
        method?: string;
        params?: { protocolVersion?: string };
      };
      const mine = `s-${generation}`;
      if (msg.method !== "initialize" && req.headers["mcp-session-id"] !== mine)
        return void res.writeHead(404).end();
      if (msg.id === undefined) return void res.writeHead(202).end();
      const answer = (result: string) =>
        res
          .writeHead(200, { "content-type": "application/json", "mcp-session-id": mine })
          .end(`{"jsonrpc":"2.0","id":${JSON.stringify(msg.id)},"result":${result}}`);
      if (msg.method === "initialize")
        return answer(
          `{"protocolVersion":${JSON.stringify(msg.params?.protocolVersion ?? "2025-06-18")},"capabilities":{"tools":{},"experimental":{"x":{"limit":12345678901234567891}}},"serverInfo":{"name":"big","version":"1.0.0","build":${build}${more}}}`,
        );
      if (msg.method === "tools/list")
        return answer(JSON.stringify({ tools: [{ name: "echo", inputSchema: { type: "object" } }] }));
      answer("{}");
    });
  }, cleanup);
  return {
    url,
    restart(next: string) {
      generation++;
      build = next;
    },
  };
}

interface Row {
  epoch: string;
  record: {
    identityDigest: string;
    remote: { serverInfo: Record<string, unknown> | null; writtenNumbers?: string[] };
  };
}

it("a remote server's serverInfo and capabilities numbers beyond a double are recorded, digested and shown as written", async () => {
  const server = await bigNumberServer("9007199254740993");
  const peer: RawGateway = rawGateway({
    args: ["--label", "big", "--url", server.url, "--approval", "none"],
  });
  cleanup.push(() => peer.close());
  const status = async (...flags: string[]) =>
    (await runCli(["status", ...flags, "--state-dir", peer.stateDir])).stdout;
  // the row as `status --json` shows it, read in the test process (listGateways, as status reads
  // it) until it holds: the command was two processes of its own (about 0.2 s of CPU each) at
  // every look while the case waited; what status shows is still asked of the command below
  const row = async (until: (r: Row) => boolean, what: string) =>
    (await gatewayRow(peer.stateDir, (r) => until(r as unknown as Row), what, 20_000)) as unknown as Row;

  const init = await peer.initialize();
  // the client reads the answer as written
  expect(peer.lines().find((l) => l.includes('"serverInfo"'))).toContain('"build":9007199254740993}');
  expect(init.result).toBeDefined();
  expect((await peer.request("tools/list")).result).toBeDefined();
  const first = await row((r) => r.record?.remote.serverInfo != null, "serverInfo in the record");
  expect(first.record.remote.writtenNumbers).toEqual([
    '["capabilities","experimental","x","limit"]=12345678901234567891e0',
    '["serverInfo","build"]=9007199254740993e0',
  ]);
  // shown as the server wrote it
  expect(await status()).toContain('"build":9007199254740993}');

  // the server comes back saying …992, which JSON.parse reads as the same double
  server.restart("9007199254740992");
  const lost = await peer.request("ping");
  expect(lost.error?.data).toMatchObject({ error: "epoch_transition" });
  const second = await row(
    (r) => r.epoch !== first.epoch && r.record?.remote.serverInfo != null,
    "the new session's record",
  );
  expect(second.record.remote.writtenNumbers).toEqual([
    '["capabilities","experimental","x","limit"]=12345678901234567891e0',
  ]);
  // another server by its words: another identity
  expect(second.record.identityDigest).not.toBe(first.record.identityDigest);
  expect(await status()).toContain('"build":9007199254740992}');
}, 60_000);

it("a remote server's serverInfo text holding a lone surrogate is shown escaped, never as U+FFFD: two such names never show the same", async () => {
  // (JSON text: `\\udbff` reaches the server's answer as the six characters \udbff)
  const server = await bigNumberServer("1", ',"nick":"acme\\ud800","other":"acme\\udbff"');
  const peer: RawGateway = rawGateway({
    args: ["--label", "lone", "--url", server.url, "--approval", "none"],
  });
  cleanup.push(() => peer.close());
  const status = async (...flags: string[]) =>
    (await runCli(["status", ...flags, "--state-dir", peer.stateDir])).stdout;
  expect((await peer.initialize()).result).toBeDefined();
  expect((await peer.request("tools/list")).result).toBeDefined();
  // waited for in the test process (the command was asked at every look), then asked of the command
  await gatewayRow(
    peer.stateDir,
    (r) => r.record?.remote?.serverInfo != null,
    "serverInfo in the record",
    20_000,
  );
  const text = await status();
  expect(text).toContain('"nick":"acme\\ud800","other":"acme\\udbff"');
  expect(text).not.toContain("\ufffd");
  const json = await status("--json");
  expect(json).toContain('"nick": "acme\\ud800"');
  expect(json).toContain('"other": "acme\\udbff"');
  expect(json).not.toContain("\ufffd");
  // and read back, the two stay two strings, neither of them U+FFFD
  const info = (JSON.parse(json).gateways as Row[])[0]!.record.remote.serverInfo!;
  expect([info.nick, info.other]).toEqual(["acme\ud800", "acme\udbff"]);
}, 60_000);
