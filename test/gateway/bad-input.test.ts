// Bad input from either side gets a clear JSON-RPC error or a logged drop — never a crash —
// and a gateway that cannot start says so in one sentence with exit code 2.
import { chmodSync, mkdtempSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { auditEvents } from "../helpers/approvals.js";
import { waitFor } from "../helpers/files.js";
import { runCli, startGateway } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { type RawGateway, type RawPeer, rawGateway, rawlinesGateway } from "../helpers/raw.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";
import { gatewayRow } from "../helpers/status.js";

let peers: RawPeer[] = [];
afterEach(async () => {
  for (const p of peers) await p.close();
  peers = [];
});

function gateway(env: Record<string, string> = {}, own = true) {
  const peer = rawGateway({
    // 1 MiB: the fixture's 6 MiB line and the client's 5 MB one are over it (the default is 64 MiB)
    args: [
      "--label",
      "bad",
      "--approval",
      "none",
      "--max-message-bytes",
      "1048576",
      "--",
      ...fixtureCommand("badpeer"),
    ],
    env,
  });
  if (own) peers.push(peer);
  return peer;
}

/**
 * One gateway, initialized, for the cases that send it bad input and see it serve on (the client's
 * malformed and too deep messages, the server's invalid answers): started by the first case that
 * asks, ended after the file. A gateway of their own each cost a gateway's and a server's start
 * (about 0.7 s of CPU) and proved nothing more: each case reads only what came after its start
 * (the stderr from its offset, the audit's rows after the ones before it).
 */
let shared: Promise<RawGateway> | null = null;
function sharedGateway(): Promise<RawGateway> {
  shared ??= (async () => {
    const gw = gateway({}, false);
    await gw.initialize();
    return gw;
  })();
  return shared;
}
afterAll(async () => {
  await (await shared)?.close();
});

/** The rows of `answer-badly` calls in the shared gateway's audit that a case before has read. */
let answerBadlyRead = 0;

describe("bad input from the client", () => {
  it("answers each malformed message with a clear JSON-RPC error and keeps serving", async () => {
    const gw = await sharedGateway();
    gw.send("{this is not json\n");
    expect((await gw.next((m) => m.error?.code === -32700)).id).toBeNull();
    gw.send({ hello: 1 });
    expect((await gw.next((m) => m.error?.code === -32600)).error!.message).toMatch(/jsonrpc/);
    gw.send([{ jsonrpc: "2.0", id: 5, method: "ping" }]);
    expect(
      (await gw.next((m) => m.error?.code === -32600 && /batch/.test(m.error.message))).error,
    ).toBeDefined();
    gw.send({ jsonrpc: "2.0", id: 7, method: "tools/call", params: { arguments: {} } });
    expect((await gw.next((m) => m.id === 7)).error!.code).toBe(-32602);
    gw.send(`{"jsonrpc":"2.0","method":"x","params":{"pad":"${"a".repeat(5 * 1024 * 1024)}"}}\n`);
    expect(
      (await gw.next((m) => m.error?.code === -32600 && /size limit/.test(m.error.message))).error,
    ).toBeDefined();
    gw.send({ jsonrpc: "2.0", id: 424242, result: {} }); // a response nobody asked for
    const tools = await gw.request("tools/list");
    expect(tools.result.tools.map((t: { name: string }) => t.name)).toContain("echo");
    const echo = await gw.request("tools/call", { name: "echo", arguments: { text: "still here" } });
    expect(JSON.stringify(echo.result)).toContain("still here");
    // the line comes on stderr, what was awaited on another pipe (or the store, or the exit): read in either order
    await waitFor(
      () => /unknown id 424242/.test(gw.stderr()),
      20_000,
      "the gateway's line on the unasked answer",
    );
    expect(gw.stderr()).toMatch(/unknown id 424242/);
  });

  it("refuses a batch with words that hold in every era, 2025-03-26 (which had batches) included", async () => {
    const gw = gateway();
    const init = await gw.initialize({ protocolVersion: "2025-03-26" });
    expect(init.result.protocolVersion).toBe("2025-03-26");
    gw.send([
      { jsonrpc: "2.0", id: 5, method: "ping" },
      { jsonrpc: "2.0", id: 6, method: "tools/list" },
    ]);
    // each request refused under its own id (test/gateway/spec-batch.test.ts)
    for (const id of [5, 6]) {
      const refused = await gw.next((m) => m.error?.code === -32600 && m.id === id);
      // not "batches are not part of MCP": the revision this client negotiated had them
      expect(refused.error!.message).toBe(
        "Invalid JSON-RPC message: portcullis does not accept JSON-RPC batches (arrays); send one message per line.",
      );
    }
    // one message per line is served
    const tools = await gw.request("tools/list");
    expect(tools.result.tools.map((t: { name: string }) => t.name)).toContain("echo");
  });
});

describe("a guarded call whose _meta the protocol does not allow", () => {
  it("is refused (-32602) before anything is recorded, instead of reaching a server that drops it unanswered", async () => {
    const stateDir = newStateDir();
    const gw = rawGateway({
      args: ["--label", "bad", "--approval", "none", "--", ...fixtureCommand("badpeer")],
      stateDir,
    });
    peers.push(gw);
    await gw.initialize();
    await gw.request("tools/list");
    const bad: [number, unknown][] = [
      [21, { progressToken: { a: 1 } }],
      [22, { progressToken: null }],
      [23, "not an object"],
    ];
    for (const [id, meta] of bad)
      gw.send({
        jsonrpc: "2.0",
        id,
        method: "tools/call",
        params: { name: "echo", arguments: { text: "x" }, _meta: meta },
      });
    for (const [id] of bad) {
      const answer = await gw.next((m) => m.id === id);
      expect(answer.error?.code, JSON.stringify(answer)).toBe(-32602);
      expect(answer.error?.message).toMatch(/^tools\/call: params\._meta/);
    }
    // a token the protocol allows is served as before
    const ok = await gw.request("tools/call", {
      name: "echo",
      arguments: { text: "x" },
      _meta: { progressToken: "t1" },
    });
    expect(ok.error, JSON.stringify(ok)).toBeUndefined();
    await gw.close();
    const called = (await auditEvents(stateDir)).filter((e) => e.type === "tool_called");
    expect(called.map((e) => e.requestId)).not.toContain(21);
    expect(called).toHaveLength(1);
  });
});

/** `depth` levels of arrays, as text (JSON.stringify cannot write a value 100,000 deep). */
const nestedText = (depth: number) => `${"[".repeat(depth)}${"]".repeat(depth)}`;
const nestedValue = (depth: number): unknown => JSON.parse(nestedText(depth));

describe("messages nested deeper than the gateway reads (512 levels)", () => {
  it("from the client: a request is refused with message_too_deep under its id, the rest dropped; one within the limit is served", async () => {
    const gw = await sharedGateway();
    const from = gw.stderr().length;
    gw.send(
      `{"jsonrpc":"2.0","id":"too-deep","method":"tools/call","params":{"name":"echo","arguments":{"text":"x","extra":${nestedText(100_000)}}}}\n`,
    );
    const refused = await gw.next((m) => m.id === "too-deep");
    expect(refused.error).toMatchObject({ code: -32600, data: { error: "message_too_deep", limit: 512 } });
    gw.send(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"x":${nestedText(100_000)}}}\n`);
    gw.send(`{"jsonrpc":"2.0","id":424243,"result":${nestedText(100_000)}}\n`);
    // 3 levels of envelope, params and arguments, then 500 of arrays: validated, digested, recorded
    // and forwarded like any call
    const within = await gw.request("tools/call", {
      name: "echo",
      arguments: { text: "within the limit", extra: nestedValue(500) },
    });
    expect(JSON.stringify(within.result)).toContain("within the limit");
    expect(
      gw
        .stderr()
        .slice(from)
        .match(/from the client nested deeper than 512 levels/g),
    ).toHaveLength(3);
    const echo = await gw.request("tools/call", { name: "echo", arguments: { text: "still here" } });
    expect(JSON.stringify(echo.result)).toContain("still here");
  });

  it("from the server: its caller gets message_too_deep, its own request an error back, its notification is dropped", async () => {
    const gw = gateway({ FIXTURE_BAD: "deep" });
    await gw.initialize();
    const res = await gw.request("tools/call", { name: "deep", arguments: {} });
    expect(res.error).toMatchObject({ code: -32603, data: { error: "message_too_deep", limit: 512 } });
    const within = await gw.request("tools/call", { name: "deep", arguments: { depth: 400 } });
    expect(JSON.stringify(within.result)).toContain("deep");
    const echo = await gw.request("tools/call", { name: "echo", arguments: { text: "still serving" } });
    expect(JSON.stringify(echo.result)).toContain("still serving");
    await waitForText(gw, /answer to deep-request: "message_too_deep"/);
    // three dropped, said once: a server's dropped messages are thinned by kind (serverMessages.ts)
    expect(gw.stderr().match(/from the server nested deeper than 512 levels/g)).toHaveLength(1);
    // nothing of the deep lines reached the client
    expect(gw.lines().every((l) => l.length < 10_000)).toBe(true);
  });
});

async function waitForText(gw: RawPeer, re: RegExp, ms = 10_000): Promise<void> {
  const until = Date.now() + ms;
  while (!re.test(gw.stderr())) {
    if (Date.now() > until) throw new Error(`not in the gateway's stderr: ${re}\n${gw.stderr()}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe("bad input from the server", () => {
  it("drops malformed, oversized, non-JSON-RPC, unknown-id and batch lines with a log line, and keeps serving", async () => {
    const gw = gateway({ FIXTURE_BAD: "all" });
    await gw.initialize();
    const tools = await gw.request("tools/list");
    expect(tools.result.tools.length).toBeGreaterThan(0);
    const res = await gw.request("tools/call", { name: "misbehave", arguments: {} });
    expect(res.result).toBeDefined();
    const echo = await gw.request("tools/call", { name: "echo", arguments: { text: "ok" } });
    expect(JSON.stringify(echo.result)).toContain("ok");
    // the lines come on stderr, what was awaited on another pipe: read in either order
    await waitFor(
      () =>
        [/not valid JSON/, /over the size limit/, /unknown id/, /batches/].every((re) =>
          re.test(gw.stderr()),
        ),
      20_000,
      "the gateway's lines on the dropped messages",
    );
    const err = gw.stderr();
    expect(err).toMatch(/invalid message from the server: not valid JSON/);
    expect(err).toMatch(/over the size limit/);
    expect(err).toMatch(/unknown id/);
    expect(err).toMatch(/batches/);
    // nothing of the garbage reached the client
    expect(gw.messages().some((m) => (m as unknown as { hello?: number }).hello === 1)).toBe(false);
    expect(gw.lines().every((l) => l.length < 1024 * 1024)).toBe(true);
  });
});

describe("a tool whose schema holds a number JSON allows and a double cannot (1e400)", () => {
  it("is dropped from the catalog as not fingerprintable, and the rest of the catalog is served", async () => {
    const gw = rawGateway({
      args: ["--label", "bignum", "--approval", "none", "--", ...fixtureCommand("rawlines")],
      env: {
        FIXTURE_RAW_TOOLS:
          '[{"name":"big","inputSchema":{"type":"object","properties":{"n":{"type":"number","maximum":1e400}}}},{"name":"ok","inputSchema":{"type":"object"}}]',
      },
    });
    peers.push(gw);
    await gw.initialize();
    const tools = await gw.request("tools/list");
    expect(tools.result.tools.map((t: { name: string }) => t.name)).toEqual(["ok"]);
    const shown = await runCli(["catalog", "show", "bignum", "--json", "--state-dir", gw.stateDir]);
    expect(shown.code).toBe(0);
    expect(JSON.parse(shown.stdout).coverage).toMatchObject({
      tools: 2,
      invalid: [{ index: 0, reason: "cannot be fingerprinted (canonical JSON: non-finite number)" }],
    });
    const call = await gw.request("tools/call", { name: "ok", arguments: {} });
    expect(call.error).toBeUndefined();
  });
});

describe("a server response that is not valid JSON-RPC", () => {
  it("its caller gets response_invalid at once, the call's end is recorded as an error, and serving goes on", async () => {
    const gw = await sharedGateway();
    await gw.request("tools/list");
    for (const how of ["error-code", "no-jsonrpc", "result-and-error", "no-member"]) {
      const res = await gw.request("tools/call", { name: "answer-badly", arguments: { how } });
      expect(res.error, how).toMatchObject({ code: -32603, data: { error: "response_invalid" } });
      expect(res.result, how).toBeUndefined();
    }
    // an object with the call's id that claims to be nothing is dropped; the real answer passes
    const stray = await gw.request("tools/call", {
      name: "answer-badly",
      arguments: { how: "stray-then-answer" },
    });
    expect(JSON.stringify(stray.result)).toContain("the real answer");
    // the server's own request without "jsonrpc" gets the standard error back, under its id
    await gw.request("tools/call", { name: "answer-badly", arguments: { how: "invalid-request" } });
    await waitForText(gw, /answer to invalid-request: -32600/);
    const echo = await gw.request("tools/call", { name: "echo", arguments: { text: "still serving" } });
    expect(JSON.stringify(echo.result)).toContain("still serving");
    const r = await runCli(["audit", "activity", "--json", "--state-dir", gw.stateDir], {
      env: passphraseEnv(),
    });
    expect(r.code).toBe(0);
    const outcomes = (JSON.parse(r.stdout) as { tool: string; outcome: string }[])
      .filter((a) => a.tool === "answer-badly")
      .map((a) => a.outcome);
    expect(outcomes.slice(answerBadlyRead)).toEqual(["error", "error", "error", "error", "ok", "ok"]);
    answerBadlyRead = outcomes.length;
  });
});

describe("a server response that is not even JSON but names the call's id", () => {
  it("its caller gets response_invalid (NaN, -Infinity, a raw control character), recorded as an error; a request gets -32700 back", async () => {
    const gw = await sharedGateway();
    await gw.request("tools/list");
    for (const how of ["nan", "infinity", "control-char"]) {
      const res = await gw.request("tools/call", { name: "answer-badly", arguments: { how } });
      expect(res.error, how).toMatchObject({
        code: -32603,
        data: { error: "response_invalid", reason: "not valid JSON" },
      });
      expect(res.result, how).toBeUndefined();
    }
    // the server's own request that is not JSON gets the parse error back, under its id
    await gw.request("tools/call", { name: "answer-badly", arguments: { how: "unparsed-request" } });
    await waitForText(gw, /answer to unparsed-request: -32700/);
    const echo = await gw.request("tools/call", { name: "echo", arguments: { text: "still serving" } });
    expect(JSON.stringify(echo.result)).toContain("still serving");
    const r = await runCli(["audit", "activity", "--json", "--state-dir", gw.stateDir], {
      env: passphraseEnv(),
    });
    expect(r.code).toBe(0);
    const outcomes = (JSON.parse(r.stdout) as { tool: string; outcome: string }[])
      .filter((a) => a.tool === "answer-badly")
      .map((a) => a.outcome);
    expect(outcomes.slice(answerBadlyRead)).toEqual(["error", "error", "error", "ok"]);
    answerBadlyRead = outcomes.length;
  });
});

describe("a client answer that is not valid JSON-RPC", () => {
  it("the server's request gets response_invalid under its own id instead of waiting forever", async () => {
    const { peer, received } = await rawlinesGateway();
    peers.push(peer);
    const line = '{"jsonrpc":"2.0","id":"ask-1","method":"roots/list","params":{}}';
    peer.send({ jsonrpc: "2.0", id: "send", method: "raw/send", params: { lines: [line] } });
    const req = await peer.next((m) => m.method === "roots/list");
    peer.send({ jsonrpc: "2.0", id: req.id, result: { roots: [] }, error: { code: 1, message: "both" } });
    const answer = await waitFor(
      () => received().find((l) => l.includes('"ask-1"') && !l.includes('"method"')),
      10_000,
      "the server's request answered",
    );
    expect(JSON.parse(answer)).toMatchObject({
      id: "ask-1",
      error: { code: -32603, data: { error: "response_invalid" } },
    });
  });
});

describe("a client answer that is not even JSON but names the server's request", () => {
  it("the server's request gets response_invalid under its own id (NaN, -Infinity, a raw control character); the client gets -32700", async () => {
    const { peer, received } = await rawlinesGateway();
    peers.push(peer);
    // what a client's own serializer may write: NaN or Infinity in a result, a raw control character
    const answers: [string, string, (id: unknown) => string][] = [
      [
        "sampling/createMessage",
        "ask-nan",
        (id) =>
          `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"role":"assistant","content":{"type":"text","text":"t"},"model":"m","score":NaN}}\n`,
      ],
      [
        "roots/list",
        "ask-infinity",
        (id) => `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"roots":[],"weight":-Infinity}}\n`,
      ],
      [
        "elicitation/create",
        "ask-control",
        (id) =>
          `{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"action":"accept","content":{"note":"a${String.fromCharCode(0)}b"}}}\n`,
      ],
    ];
    for (const [method, serverId, answer] of answers) {
      const line = JSON.stringify({ jsonrpc: "2.0", id: serverId, method, params: {} });
      peer.send({ jsonrpc: "2.0", id: `send-${serverId}`, method: "raw/send", params: { lines: [line] } });
      const req = await peer.next((m) => m.method === method);
      peer.send(answer(req.id));
      // the client's bad line: the parse error, under id null as JSON-RPC says
      const parseError = await peer.next((m) => (m.error as { code?: number } | undefined)?.code === -32700);
      expect(parseError.id, method).toBeNull();
      const answered = await waitFor(
        () => received().find((l) => l.includes(`"${serverId}"`) && !l.includes('"method"')),
        10_000,
        `the server's ${method} answered`,
      );
      expect(JSON.parse(answered), method).toMatchObject({
        id: serverId,
        error: { code: -32603, data: { error: "response_invalid", reason: "not valid JSON" } },
      });
    }
    // a request of the client's that is not JSON is still only a parse error, and serving goes on
    peer.send('{"jsonrpc":"2.0","id":"c1","method":"ping","params":{"n":NaN}}\n');
    expect(
      (await peer.next((m) => (m.error as { code?: number } | undefined)?.code === -32700)).id,
    ).toBeNull();
    expect((await peer.request("ping")).result).toEqual({});
  });
});

describe("a gateway that cannot start", () => {
  it("a command that does not exist: one sentence, exit 2", async () => {
    const r = await runCli(["run", "--", "definitely-not-a-command-xyz", "serve"], {
      stateDir: newStateDir(),
    });
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
    expect(r.stderr).toMatch(/definitely-not-a-command-xyz/);
  });

  it("a config error names the file and the key: exit 2", async () => {
    const dir = mkdtempSync(join(tmpdir(), "pc-cfg-"));
    writeFileSync(
      join(dir, "portcullis.json"),
      JSON.stringify({ servers: { inv: { command: "node", onChange: "sometimes" } } }),
    );
    const r = await runCli(["run", "inv"], { cwd: dir, stateDir: newStateDir() });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(join(dir, "portcullis.json"));
    expect(r.stderr).toContain("servers.inv.onChange");
  });

  it("an unreadable entry file: one sentence naming it, exit 2", async () => {
    const dir = mkdtempSync(join(tmpdir(), "pc-entry-"));
    const entry = join(dir, "server.js");
    writeFileSync(entry, "console.log('x')");
    chmodSync(entry, 0o000);
    const stateDir = newStateDir();
    const r = await runCli(["run", "--", process.execPath, entry], { stateDir });
    if (process.getuid?.() === 0) {
      // root reads anything: use a missing entry instead
      const missing = await runCli(["run", "--", process.execPath, join(dir, "missing.js")], { stateDir });
      expect(missing.code).toBe(2);
      expect(missing.stderr).toContain("missing.js");
      return;
    }
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("server.js");
  });

  it("no keyring: one sentence that says to run portcullis init, exit 2, and no store left behind", async () => {
    const stateDir = mkdtempSync(join(tmpdir(), "pc-nokey-"));
    const r = await runCli(["run", "--", process.execPath, "-e", "1"], { stateDir });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/portcullis init/);
    expect(r.stderr.trim().split("\n")).toHaveLength(1);
    // a store left there would make the directory read as set up to every other command
    expect(readdirSync(stateDir)).toEqual([]);
    const status = await runCli(["status"], { stateDir });
    expect(status.code).toBe(2);
    expect(status.stderr).toMatch(/portcullis init/);
  });

  it("unknown flags and a missing command are usage errors", async () => {
    const a = await runCli(["run", "--frobnicate", "--", "node"]);
    expect(a.code).toBe(2);
    expect(a.stderr).toMatch(/frobnicate/);
    const b = await runCli(["run", "--"]);
    expect(b.code).toBe(2);
    const c = await runCli(["no-such-command"]);
    expect(c.code).toBe(2);
  });
});

describe("the client goes away", () => {
  it("shuts the server's whole process group down", async () => {
    const gw = await startGateway({
      args: ["--label", "bye", "--approval", "none", "--", ...fixtureCommand("badpeer")],
    });
    await gw.client.listTools();
    // its row as `status --json` shows it, read in the test process (test/helpers/status.ts)
    const serverPid = (await gatewayRow(gw.stateDir!, (row) => row.record !== null)).record!.processId;
    await gw.close();
    const alive = () => {
      try {
        process.kill(serverPid, 0);
        return true;
      } catch {
        return false;
      }
    };
    const deadline = Date.now() + 8000;
    while (alive() && Date.now() < deadline) await new Promise((res) => setTimeout(res, 50));
    expect(alive()).toBe(false);
  });
});
