// The answer to the client's handshake (initialize; 2026-07-28: server/discover) holding a number
// that re-serialising would change (an integer past 2^53 written exactly, one a double respells, a
// decimal of more digits than a double holds): it reaches the client as the server wrote it,
// spliced under the client's id as other answers are, with the gateway's own change to it
// (tools.listChanged advertised, tasks taken out) written into it and every other number as
// written. Before, the gateway, which rewrites handshake answers, replaced every such answer with
// response_invalid: a server whose serverInfo or experimental capability held such a number could
// not be used through it at all. What the gateway reads there (capabilities, protocolVersion) it
// reads as the client does: a new process's replayed handshake whose number differs only beyond a
// double's precision negotiates something else, and the connection ends, as for any other change.
// Real gateway, raw client, the rawlines fixture (FIXTURE_RAW_ANSWERS_FILE: its handshake answers,
// as written, read at each request so that the next process answers otherwise).
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { removeDir, tempDir, waitFor } from "../helpers/files.js";
import type { WireMessage } from "../helpers/gateway.js";
import { modernMeta } from "../helpers/modernMeta.js";
import { FIXTURES, NODE } from "../helpers/paths.js";
import { type RawGateway, rawGateway } from "../helpers/raw.js";
import { servingPid } from "../helpers/serving.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const INIT = {
  protocolVersion: "2025-11-25",
  capabilities: {},
  clientInfo: { name: "exact-handshake", version: "1" },
};
const META = modernMeta({}, { name: "exact-handshake", version: "1" });

function initAnswer(capabilities: string, build = "9007199254740993"): string {
  return `{"jsonrpc":"2.0","id":ID,"result":{"protocolVersion":"2025-11-25","capabilities":${capabilities},"serverInfo":{"name":"x","version":"1","build":${build}}}}`;
}

function discoverAnswer(capabilities: string): string {
  return `{"jsonrpc":"2.0","id":ID,"result":{"supportedVersions":["2026-07-28"],"capabilities":${capabilities},"serverInfo":{"name":"x","version":"1","build":12345678901234567891}}}`;
}

interface Started {
  gw: RawGateway;
  /** the handshake answers of the next processes (and this one, before its first): method → line */
  answer: (answers: Record<string, string>) => void;
}

function start(answers: Record<string, string>): Started {
  const dir = tempDir("portcullis-exact-handshake-");
  const file = join(dir, "answers.json");
  const answer = (a: Record<string, string>) => writeFileSync(file, JSON.stringify(a));
  answer(answers);
  const gw = rawGateway({
    args: ["--label", "exact", "--approval", "none", "--", NODE, FIXTURES.rawlines],
    env: {
      FIXTURE_RAW_ANSWERS_FILE: file,
      FIXTURE_RAW_LOG: join(dir, "raw.log"),
      PORTCULLIS_RESPAWN_BACKOFF_MS: "20",
    },
  });
  cleanup.push(
    () => gw.close(),
    () => removeDir(dir),
  );
  return { gw, answer };
}

/** The client's line answering its request `id`, as the gateway wrote it. */
async function answerLine(gw: RawGateway, id: number | string): Promise<{ msg: WireMessage; line: string }> {
  const msg = await gw.next((m) => m.id === id && m.method === undefined, 20_000);
  const line = gw.lines().find((l) => l.startsWith(`{"jsonrpc":"2.0","id":${JSON.stringify(id)},`)) ?? "";
  return { msg, line };
}

describe("initialize's answer holding a number re-serialising would change", () => {
  it("reaches the client as written, byte for byte under its own id, when the gateway changes nothing in it", async () => {
    const caps = '{"tools":{"listChanged":true},"experimental":{"quota":{"limit":12345678901234567891}}}';
    const { gw } = start({ initialize: initAnswer(caps) });
    gw.send({ jsonrpc: "2.0", id: 1, method: "initialize", params: INIT });
    const { msg, line } = await answerLine(gw, 1);
    expect(msg.error, line).toBeUndefined();
    expect(line).toBe(initAnswer(caps).replace("ID", "1"));
  });

  it("with the gateway's change written in (listChanged advertised, tasks taken out), and every number as written", async () => {
    const caps =
      '{"tools":{},"tasks":{"list":{}},"experimental":{"quota":{"limit":12345678901234567891,"ratio":0.12345678901234567891}}}';
    const { gw } = start({ initialize: initAnswer(caps) });
    gw.send({ jsonrpc: "2.0", id: "init", method: "initialize", params: INIT });
    const { msg, line } = await answerLine(gw, "init");
    expect(msg.error, line).toBeUndefined();
    const result = msg.result as { capabilities: Record<string, unknown> };
    expect(result.capabilities.tools).toEqual({ listChanged: true });
    expect(result.capabilities.tasks).toBeUndefined();
    expect(line).toContain('"build":9007199254740993');
    expect(line).toContain('"limit":12345678901234567891');
    expect(line).toContain('"ratio":0.12345678901234567891');
    expect(line).not.toContain("12345678901234567000");
    expect(line).not.toContain("9007199254740992");
    // the session is negotiated: the gateway lists the server's tools for the client
    gw.send({ jsonrpc: "2.0", method: "notifications/initialized" });
    expect((await gw.request("tools/list", {}, 20_000)).error).toBeUndefined();
  });

  it("a member written twice beside it (a peer may read another value than the gateway): still an error, never another number", async () => {
    const answer =
      '{"jsonrpc":"2.0","id":ID,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"capabilities":{"tools":{},"experimental":{"n":9007199254740993}},"serverInfo":{"name":"x","version":"1"}}}';
    const { gw } = start({ initialize: answer });
    gw.send({ jsonrpc: "2.0", id: 2, method: "initialize", params: INIT });
    const { msg, line } = await answerLine(gw, 2);
    expect((msg.error?.data as { error?: string } | undefined)?.error, line).toBe("response_invalid");
    expect(gw.lines().some((l) => l.includes("9007199254740992"))).toBe(false);
  });

  it("a new process is held to the number as the client read it: the same number keeps the session, one differing beyond a double's precision ends it", async () => {
    const caps = (n: string) => `{"tools":{"listChanged":true},"experimental":{"quota":{"limit":${n}}}}`;
    const { gw, answer } = start({ initialize: initAnswer(caps("9007199254740993")) });
    expect((await gw.initialize(INIT, 20_000)).error).toBeUndefined();
    expect((await gw.request("tools/list", {}, 20_000)).error).toBeUndefined();

    // the same number, written otherwise (a serverInfo the gateway does not compare differs too): same negotiation
    answer({ initialize: initAnswer(caps("9007199254740993.0"), "12345678901234567891") });
    const first = servingPid(gw);
    process.kill(first, "SIGKILL");
    await waitFor(() => (servingPid(gw) !== first ? true : undefined), 20_000, "the second process");
    expect((await gw.request("tools/list", {}, 20_000)).error).toBeUndefined();

    // a number the gateway would read as the same double, but the client as another: ends the connection
    answer({ initialize: initAnswer(caps("9007199254740992")) });
    const second = servingPid(gw);
    process.kill(second, "SIGKILL");
    await waitFor(
      () => /negotiated a different protocol version or capabilities/.test(gw.stderr()) || undefined,
      20_000,
      "the connection ended",
    );
    expect((await gw.exited).code, gw.stderr()).toBe(0);
  });
});

describe("server/discover's answer holding such a number", () => {
  it("reaches the client as written, with tasks taken out; a new process differing in it beyond a double's precision ends the connection", async () => {
    const caps = (n: string) =>
      `{"tools":{"listChanged":true},"extensions":{"io.modelcontextprotocol/tasks":{}},"experimental":{"seq":${n}}}`;
    const { gw, answer } = start({ "server/discover": discoverAnswer(caps("-123456789012345678901234")) });
    gw.send({ jsonrpc: "2.0", id: 3, method: "server/discover", params: { _meta: META } });
    const { msg, line } = await answerLine(gw, 3);
    expect(msg.error, line).toBeUndefined();
    expect(line).toContain('"build":12345678901234567891');
    expect(line).toContain('"seq":-123456789012345678901234');
    expect((msg.result as { capabilities: { extensions?: object } }).capabilities.extensions).toEqual({});
    expect((await gw.request("tools/list", { _meta: META }, 20_000)).error).toBeUndefined();

    answer({ "server/discover": discoverAnswer(caps("-123456789012345678901235")) });
    process.kill(servingPid(gw), "SIGKILL");
    await waitFor(
      () => /advertises different capabilities/.test(gw.stderr()) || undefined,
      20_000,
      "the connection ended",
    );
    expect((await gw.exited).code, gw.stderr()).toBe(0);
  });
});
