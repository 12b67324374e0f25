// What real clients and servers do that a relay must survive: a server flooding list_changed,
// messages of many megabytes both ways, a client that writes its requests and closes stdin, and
// ids that JSON.parse cannot hold. Real gateway, real fixture server (habits.mjs), raw client.
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { holderSocketPath } from "../../src/vault/holder.js";
import { auditEvents, decideByCli, nextStoredRequest } from "../helpers/approvals.js";
import { readJsonLines, waitFor } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { type RawPeer, rawGateway } from "../helpers/raw.js";
import { newStateDir } from "../helpers/state.js";
import { storeSecret, vaultedProject } from "../vault/helpers.js";

let peers: RawPeer[] = [];
afterEach(async () => {
  for (const p of peers) await p.close();
  peers = [];
});

/**
 * A gateway (label habits) on the habits fixture, under `--approval none` unless `approval` names
 * another policy (false: no flag, so calls wait for a human); `args` go before the `--`.
 */
function gateway(
  options: {
    args?: string[];
    env?: Record<string, string>;
    stateDir?: string;
    approval?: string | false;
  } = {},
) {
  const approval = options.approval ?? "none";
  const peer = rawGateway({
    args: [
      "--label",
      "habits",
      ...(approval === false ? [] : ["--approval", approval]),
      ...(options.args ?? []),
      "--",
      ...fixtureCommand("habits"),
    ],
    env: options.env,
    stateDir: options.stateDir,
  });
  peers.push(peer);
  return peer;
}

/** A tools/call of `name` under the client's own `id`, sent without waiting for its answer. */
function sendCall(gw: RawPeer, id: unknown, name: string, args: Record<string, unknown>): void {
  gw.send({ jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: args } });
}

/** The `error` name in a JSON-RPC error's data (message_too_large and the like). */
function errorName(m: { error?: { data?: unknown } }): string | undefined {
  return (m.error?.data as { error?: string } | undefined)?.error;
}

/** Resolves once the gateway has asked a human to approve the call of `tool`. */
function approvalAsked(gw: RawPeer, tool: string): Promise<unknown> {
  return waitFor(
    () => new RegExp(`approval needed for "${tool}"`).test(gw.stderr()) || undefined,
    10_000,
    "the approval request",
  );
}

/** Handshake, then the tool list: the guard refuses calls of a client that never listed tools. */
async function ready(gw: RawPeer): Promise<void> {
  await gw.initialize();
  await gw.request("tools/list");
}

/**
 * A gateway (label `label`) on the lenient fixture, which logs every message it gets to the
 * returned file (one JSON line each); `env` is the fixture's besides.
 */
function lenientGateway(label: string, env: Record<string, string> = {}): { gw: RawPeer; methodLog: string } {
  const methodLog = join(mkdtempSync(join(tmpdir(), "pc-habits-")), "methods.jsonl");
  const gw = rawGateway({
    args: ["--label", label, "--approval", "none", "--", ...fixtureCommand("lenient")],
    env: { FIXTURE_METHOD_LOG: methodLog, ...env },
  });
  peers.push(gw);
  return { gw, methodLog };
}

function listLog(): string {
  return join(mkdtempSync(join(tmpdir(), "pc-habits-")), "lists.log");
}

function listsReceived(file: string): number {
  try {
    return readFileSync(file, "utf8").split("\n").filter(Boolean).length;
  } catch {
    return 0;
  }
}

function textOf(m: { result?: { content?: { text?: string }[] } }): string {
  return m.result?.content?.[0]?.text ?? "";
}

const sha256 = (s: string) => createHash("sha256").update(s).digest("hex");

/** The habits fixture's blob text (see habits.mjs). */
function blobText(bytes: number): string {
  const unit = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_";
  return unit.repeat(Math.ceil(bytes / unit.length)).slice(0, bytes);
}

// One gateway (habits under --approval none, no other flag) for the three cases that only send
// their own requests to such a gateway and read the answers under their own ids: 12 MB both ways,
// a client's answer nested too deep, ids byte-exact. They started three identical gateways. Each
// sends under ids of its own (the raw peer's requests are "raw-N", which none of the ids of the
// byte-exact case is), reads only the answers to them and a stderr line none of the others
// causes, and each leaves the gateway serving (an answer under an id of its own comes back
// after what it checks), so no case's outcome depends on what another did to it.
let plain: RawPeer | undefined;
/** The shared plain gateway, handshaken and listed; started by the first case that runs. */
async function plainGateway(): Promise<RawPeer> {
  if (plain === undefined) {
    plain = rawGateway({
      args: ["--label", "habits", "--approval", "none", "--", ...fixtureCommand("habits")],
    });
    await ready(plain);
  }
  return plain;
}
afterAll(async () => {
  await plain?.close();
  plain = undefined;
});

describe("a server flooding notifications/tools/list_changed", () => {
  it("keeps serving calls during a storm of list_changed", async () => {
    const gw = gateway({ args: ["--hold-timeout", "3000"] });
    await ready(gw);
    const on = await gw.request("tools/call", { name: "storm", arguments: { on: true } });
    expect(textOf(on)).toBe("storm on");
    const calls = Array.from({ length: 24 }, (_, i) =>
      gw.request("tools/call", { name: "digest", arguments: { data: `call ${i}` } }, 30_000),
    );
    const answers = await Promise.all(calls);
    await gw.request("tools/call", { name: "storm", arguments: { on: false } });
    const failed = answers.filter((a) => a.error || !/^\d+ [0-9a-f]{64}$/.test(textOf(a)));
    expect(failed).toEqual([]);
    expect(answers.map(textOf)).toEqual(
      answers.map((_, i) => `${`call ${i}`.length} ${sha256(`call ${i}`)}`),
    );
  });

  it("collapses a burst of thousands into a few re-lists (one in flight, one queued)", async () => {
    const log = listLog();
    const gw = gateway({ env: { FIXTURE_LIST_LOG: log } });
    await ready(gw);
    const before = listsReceived(log);
    await gw.request("tools/call", { name: "flood", arguments: { count: 5000 } });
    const answers = await Promise.all(
      Array.from({ length: 24 }, (_, i) =>
        gw.request("tools/call", { name: "slow", arguments: { ms: 1, tag: String(i) } }, 30_000),
      ),
    );
    expect(answers.map(textOf)).toEqual(answers.map((_, i) => `slow ${i}`));
    // a call after the burst is answered after the whole burst was read
    await gw.request("tools/call", { name: "slow", arguments: { ms: 1, tag: "after" } });
    const relists = listsReceived(log) - before;
    expect(relists).toBeGreaterThanOrEqual(1);
    expect(relists).toBeLessThanOrEqual(4);
  });
});

describe("big messages", () => {
  it("passes a 12 MB result and a 6 MB request intact under the default limit", async () => {
    const gw = await plainGateway();
    const size = 12 * 1000 * 1000;
    const blob = await gw.request("tools/call", { name: "blob", arguments: { bytes: size } }, 60_000);
    const text = textOf(blob);
    expect(text.length).toBe(size);
    expect(sha256(text)).toBe(sha256(blobText(size)));

    // the blob text reversed (another text than the result's), made as the reversed unit repeated:
    // 6 MB splits into whole units, and reversing it through an array of 6 million one-character
    // strings cost the test process a second of CPU
    const data = [...blobText(64)]
      .reverse()
      .join("")
      .repeat((6 * 1000 * 1000) / 64);
    const digest = await gw.request("tools/call", { name: "digest", arguments: { data } }, 60_000);
    expect(textOf(digest)).toBe(`${data.length} ${sha256(data)}`);
  });

  // The three over-limit cases look at one gateway under --max-message-bytes 65536, started once
  // instead of three times: each sends under ids of its own and reads only the answers to them
  // and the stderr written since it began, and each refusal leaves the gateway serving (what the
  // first case checks last), so no case's outcome depends on what another did to it.
  describe("under --max-message-bytes 65536 (one gateway for the three cases)", () => {
    let limited: RawPeer | undefined;
    /** The shared gateway, handshaken and listed; started by the first case that runs. */
    async function limitedGateway(): Promise<RawPeer> {
      if (limited === undefined) {
        limited = rawGateway({
          args: [
            "--label",
            "habits",
            "--approval",
            "none",
            "--max-message-bytes",
            "65536",
            "--",
            ...fixtureCommand("habits"),
          ],
        });
        await ready(limited);
      }
      return limited;
    }
    afterAll(async () => {
      await limited?.close();
      limited = undefined;
    });

    it("answers an over-limit request with an error carrying its own id, wherever the id is", async () => {
      const gw = await limitedGateway();
      const pad = "x".repeat(100_000);
      sendCall(gw, "big-first", "digest", { data: pad });
      const first = await gw.next((m) => m.id === "big-first");
      expect(first.error?.code).toBe(-32600);
      expect(first.error?.message).toMatch(/65536|size limit/);
      expect(errorName(first)).toBe("message_too_large");
      // the request's size as it came, in bytes (the line without its newline)
      const sent = JSON.stringify({
        jsonrpc: "2.0",
        id: "big-first",
        method: "tools/call",
        params: { name: "digest", arguments: { data: pad } },
      });
      expect(first.error?.data).toMatchObject({ bytes: Buffer.byteLength(sent) });
      // the SDKs put the id last, after params; and a number above 2^53 comes back as written
      gw.send(
        `{"method":"tools/call","params":{"name":"digest","arguments":{"id":1,"data":"${pad}"}},"jsonrpc":"2.0","id":9007199254740993}\n`,
      );
      await gw.next((m) => m.error !== undefined && typeof m.id === "number" && m.id >= 2 ** 53);
      expect(gw.lines().some((l) => /"id":9007199254740993[,}]/.test(l))).toBe(true);
      // still serving
      const ok = await gw.request("tools/call", { name: "digest", arguments: { data: "ok" } });
      expect(textOf(ok)).toBe(`2 ${sha256("ok")}`);
    });

    it("turns an over-limit response into an error to the client with the request's id", async () => {
      const gw = await limitedGateway();
      const from = gw.stderr().length;
      sendCall(gw, 77, "blob", { bytes: 200_000 });
      const answer = await gw.next((m) => m.id === 77);
      expect(answer.result).toBeUndefined();
      expect(errorName(answer)).toBe("message_too_large");
      // the response's size, over the 64 KiB limit by the blob it carried
      const bytes = (answer.error?.data as { bytes: number } | undefined)?.bytes ?? 0;
      expect(bytes).toBeGreaterThan(200_000);
      expect(answer.error?.message).toContain(`${bytes} bytes`);
      expect(gw.stderr().slice(from)).toMatch(/over the size limit/);
      const ok = await gw.request("tools/call", { name: "blob", arguments: { bytes: 10 } });
      expect(textOf(ok)).toBe(blobText(10));
    });

    it("answers the server too: its over-limit request, and a client's over-limit answer to it", async () => {
      const gw = await limitedGateway();
      // the server's roots/list request is over the limit: the server gets an error with its id
      const shout = await gw.request("tools/call", { name: "ask", arguments: { pad: 100_000 } });
      expect(textOf(shout)).toBe("error -32600 message_too_large");
      // the client's answer to a small roots/list is over the limit: the server gets an error
      sendCall(gw, "asks", "ask", { pad: 0 });
      const roots = await gw.next((m) => m.method === "roots/list");
      gw.send({
        jsonrpc: "2.0",
        id: roots.id,
        result: { roots: [{ uri: `file:///${"r".repeat(100_000)}` }] },
      });
      const asked = await gw.next((m) => m.id === "asks");
      expect(textOf(asked)).toBe("error -32603 message_too_large");
    });
  });

  it("answers the server with message_too_deep when the client's answer to its request nests deeper than 512 levels", async () => {
    const gw = await plainGateway();
    sendCall(gw, "asks-deep", "ask", { pad: 0 });
    const roots = await gw.next((m) => m.method === "roots/list");
    const depth = 50_000;
    gw.send(
      `{"jsonrpc":"2.0","id":${JSON.stringify(roots.id)},"result":{"roots":${"[".repeat(depth)}${"]".repeat(depth)}}}\n`,
    );
    const asked = await gw.next((m) => m.id === "asks-deep");
    expect(textOf(asked)).toBe("error -32603 message_too_deep");
    // the line comes on stderr, what was awaited on another pipe (or the store, or the exit): read in either order
    await waitFor(
      () => /from the client nested deeper than 512 levels/.test(gw.stderr()),
      20_000,
      "the gateway's line on the deep answer",
    );
    expect(gw.stderr()).toMatch(/from the client nested deeper than 512 levels/);
    // still serving
    const ok = await gw.request("tools/call", { name: "digest", arguments: { data: "ok" } });
    expect(textOf(ok)).toBe(`2 ${sha256("ok")}`);
  });

  it("takes maxMessageBytes from portcullis.json, and refuses a bad one naming the file and key", async () => {
    const dir = mkdtempSync(join(tmpdir(), "pc-habits-cfg-"));
    const [command, ...args] = fixtureCommand("habits");
    const write = (maxMessageBytes: unknown) =>
      writeFileSync(
        join(dir, "portcullis.json"),
        JSON.stringify({ servers: { habits: { command, args, maxMessageBytes } } }),
      );
    write("64MB");
    const bad = await runCli(["run", "habits"], { cwd: dir, stateDir: newStateDir() });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain(join(dir, "portcullis.json"));
    expect(bad.stderr).toContain("maxMessageBytes");

    write(65536);
    const peer = rawGateway({ args: ["--approval", "none", "habits"], cwd: dir });
    peers.push(peer);
    await ready(peer);
    sendCall(peer, "cfg", "blob", { bytes: 100_000 });
    const answer = await peer.next((m) => m.id === "cfg");
    expect(errorName(answer)).toBe("message_too_large");
  });

  it("refuses a --max-message-bytes that is not a size, naming the flag", async () => {
    const gw = gateway({ args: ["--max-message-bytes", "12k"] });
    const exit = await gw.exited;
    expect(exit.code).toBe(2);
    expect(gw.stderr()).toMatch(/--max-message-bytes/);
  });
});

describe("a client that writes its requests and closes stdin", () => {
  it("gets every answer on stdout before the gateway exits", async () => {
    const gw = gateway();
    const n = 6;
    const init = {
      jsonrpc: "2.0",
      id: "init",
      method: "initialize",
      params: {
        protocolVersion: "2025-11-25",
        capabilities: {},
        clientInfo: { name: "script", version: "1" },
      },
    };
    let text = `${JSON.stringify(init)}\n${JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" })}\n`;
    text += `${JSON.stringify({ jsonrpc: "2.0", id: "list", method: "tools/list" })}\n`;
    for (let i = 0; i < n; i++) {
      text += `${JSON.stringify({ jsonrpc: "2.0", id: i, method: "tools/call", params: { name: "slow", arguments: { ms: 300, tag: String(i) } } })}\n`;
    }
    gw.send(text);
    gw.closeStdin();
    await gw.exited;
    const answers = gw.messages().filter((m) => typeof m.id === "number");
    expect(answers.map((m) => [m.id, textOf(m)]).sort()).toEqual(
      Array.from({ length: n }, (_, i) => [i, `slow ${i}`]),
    );
    expect(gw.stderr()).not.toMatch(/unknown id/);
  });
});

describe("a client that asks for tools before initialize", () => {
  it("is told at once to initialize first, and is served once it has", async () => {
    // a hold timeout far past next()'s wait: a request held until it runs out fails the test
    const gw = gateway({ args: ["--hold-timeout", "120000"] });
    gw.send({ jsonrpc: "2.0", id: "ping", method: "ping" });
    gw.send({ jsonrpc: "2.0", id: "list", method: "tools/list" });
    sendCall(gw, "call", "digest", { data: "x" });
    gw.send({ jsonrpc: "2.0", id: "read", method: "resources/read", params: { uri: "file:///x" } });
    for (const [id, method] of [
      ["list", "tools/list"],
      ["call", "tools/call"],
      ["read", "resources/read"],
    ]) {
      const refused = await gw.next((m) => m.id === id);
      expect(refused.error).toMatchObject({
        code: -32600,
        data: { error: "not_initialized", reason: "no initialize from this client yet" },
      });
      expect(refused.error!.message).toBe(
        `The client must send initialize (and notifications/initialized) before ${method}; this request was not handled.`,
      );
      expect((refused.error!.data as Record<string, unknown>).retry).toMatch(/^send initialize/);
    }
    // a ping is what MCP lets a client send first: it still reaches the server (which has none)
    expect((await gw.next((m) => m.id === "ping")).error).toMatchObject({ code: -32601 });
    await ready(gw);
    const call = await gw.request("tools/call", { name: "digest", arguments: { data: "x" } });
    expect(textOf(call)).toMatch(/^1 /);
    // nothing was decided for the early requests: the audit holds the one call made after initialize
    const called = (await auditEvents(gw.stateDir)).filter((e) => e.type === "tool_called");
    expect(called.map((e) => e.tool)).toEqual(["digest"]);
  });
});

describe("a tools/list held while the server's identity is pending", () => {
  it("cancelled by the client: never answered, and its id free at once", async () => {
    // the server's tools/list answer comes late: the client's list is held until it does
    const { gw, methodLog } = lenientGateway("lenient", { FIXTURE_LIST_DELAY_MS: "3000" });
    await gw.initialize();
    const logged = () => readJsonLines<{ method: string }>(methodLog).map((r) => r.method);
    gw.send({ jsonrpc: "2.0", id: 5, method: "tools/list" });
    gw.send({
      jsonrpc: "2.0",
      method: "notifications/cancelled",
      params: { requestId: 5, reason: "gave up" },
    });
    // the same id again at once: a ping, relayed to the server and answered by it
    gw.send({ jsonrpc: "2.0", id: 5, method: "ping" });
    const ping = await gw.next((m) => m.id === 5);
    expect(ping.error, JSON.stringify(ping)).toBeUndefined();
    expect(ping.result).toEqual({});
    // (the premise: the list was still held, the server had not answered its own yet)
    expect(logged()).not.toContain("answered tools/list");
    // once the catalog is verified the held lists are answered: the cancelled one is not among them
    await waitFor(() => logged().includes("answered tools/list"), 10_000, "the server's tools/list answer");
    const list = await gw.request("tools/list");
    expect(list.result).toBeDefined();
    expect(gw.messages().filter((m) => m.id === 5)).toEqual([ping]);
  });
});

describe("a call being decided, cancelled by the client", () => {
  it("while it waits for a human: its id is free at once, for a request in the same write", async () => {
    // no --approval none: the call waits for an approval nobody gives
    const gw = gateway({ approval: false });
    await ready(gw);
    sendCall(gw, 7, "slow", { ms: 1 });
    await approvalAsked(gw, "slow");
    gw.send(
      `${JSON.stringify({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: 7 } })}\n${JSON.stringify({ jsonrpc: "2.0", id: 7, method: "ping" })}\n`,
    );
    // relayed to the server, which answers it (habits has no ping): not refused as "already in use"
    const ping = await gw.next((m) => m.id === 7);
    expect(ping.error, JSON.stringify(ping)).toEqual({ code: -32601, message: "Method not found" });
    await gw.request("ping");
    expect(gw.messages().filter((m) => m.id === 7)).toEqual([ping]);
  });

  it("while its intent is written: the same id's next call, in the same write, runs with its own record", async () => {
    const stateDir = newStateDir();
    const gw = gateway({ stateDir });
    await ready(gw);
    const call = (tag: string) =>
      JSON.stringify({
        jsonrpc: "2.0",
        id: 8,
        method: "tools/call",
        params: { name: "slow", arguments: { ms: 1, tag } },
      });
    const cancel = JSON.stringify({
      jsonrpc: "2.0",
      method: "notifications/cancelled",
      params: { requestId: 8 },
    });
    gw.send(`${call("first")}\n${cancel}\n${call("second")}\n`);
    const answer = await gw.next((m) => m.id === 8);
    expect(answer.error, JSON.stringify(answer)).toBeUndefined();
    expect(textOf(answer)).toBe("slow second");
    await gw.request("ping");
    expect(gw.messages().filter((m) => m.id === 8)).toEqual([answer]);
    await gw.close();
    // the cancelled call's intent, written as it was cancelled, is closed as never sent
    const events = await auditEvents(stateDir);
    expect(events.filter((e) => e.type === "tool_called" && e.requestId === 8)).toHaveLength(2);
    expect(
      events
        .filter((e) => (e.type === "tool_result" || e.type === "call_interrupted") && e.requestId === 8)
        .map((e) => [e.type, e.outcome]),
    ).toEqual([
      ["call_interrupted", "not_forwarded"],
      ["tool_result", "ok"],
    ]);
  });
});

describe("a client that closes stdin while a call waits for a human", () => {
  it("gets an answer for it within the bounded wait, then the gateway exits", async () => {
    // no --approval none: the call waits for an approval nobody gives
    const gw = gateway({ approval: false, args: ["--hold-timeout", "1000"] });
    await ready(gw);
    sendCall(gw, "waits", "slow", { ms: 1 });
    await approvalAsked(gw, "slow");
    gw.closeStdin();
    await gw.exited;
    const answer = gw.messages().find((m) => m.id === "waits" && m.method === undefined);
    expect(answer?.error).toBeDefined();
    expect(answer?.result).toBeUndefined();
  });
});

describe("ids the client chose", () => {
  it("come back byte-exact: beyond 2^53, large negative, fractional, 1.0, escaped strings", async () => {
    const gw = await plainGateway();
    const tokens = [
      "9007199254740993",
      "-9007199254740995",
      "12345678901234567890123",
      "1.5",
      "1.0",
      "2e3",
      '"plain"',
      '"\\u0041-escaped"',
    ];
    for (const token of tokens) {
      // one answered by the gateway itself, one by the server
      gw.send(`{"jsonrpc":"2.0","id":${token},"method":"tools/list"}\n`);
      gw.send(
        `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"digest","arguments":{"data":"a"}},"id":${token}}\n`,
      );
    }
    const marker = await gw.request("tools/call", { name: "slow", arguments: { ms: 1, tag: "end" } });
    expect(textOf(marker)).toBe("slow end");
    for (const token of tokens) {
      const echoed = gw.lines().filter((l) => l.includes(`"id":${token},`) || l.includes(`"id":${token}}`));
      expect(echoed.length, `answers carrying id ${token}`).toBe(2);
    }
    // 9007199254740993 and …992 are two requests, not one
    gw.send('{"jsonrpc":"2.0","id":9007199254740992,"method":"tools/list"}\n');
    await gw.request("tools/list");
    expect(gw.lines().filter((l) => l.includes('"id":9007199254740992,'))).toHaveLength(1);
  });

  it("a cancellation reaches its request however either spells the id (escapes, 1.0 for 1)", async () => {
    const { gw, methodLog } = lenientGateway("habits");
    await ready(gw);
    // [the id as the request writes it, as its cancellation does]: one id each (JSON's equality)
    const pairs = [
      ['"a\\/b"', '"a/b"'], // PHP's json_encode escapes "/"
      ['"c\\/d"', '"c\\/d"'],
      ['"\\u00e9t\\u00e9"', '"\u00e9t\u00e9"'], // Python's ensure_ascii
      ['"caf\\u00e9"', '"caf\\u00E9"'],
      ["1.0", "1"],
      ["2e1", "20"],
      ["9007199254740993", "9.007199254740993e15"],
    ];
    const logged = (method: string) =>
      readJsonLines<{ method: string; params: { requestId?: unknown } }>(methodLog).filter(
        (r) => r.method === method,
      );
    for (const [i, [id]] of pairs.entries())
      gw.send(`{"jsonrpc":"2.0","id":${id},"method":"resources/read","params":{"uri":"hang:${i}"}}\n`);
    await waitFor(() => logged("resources/read").length === pairs.length, 10_000, "every read at the server");
    // names no open request (…992 is another id than …993): never goes on
    gw.send('{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9007199254740992}}\n');
    for (const [, id] of pairs)
      gw.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":${id}}}\n`);
    await waitFor(
      () => logged("notifications/cancelled").length >= pairs.length,
      10_000,
      "every cancellation at the server",
    );
    await gw.request("ping"); // anything forwarded after the cancellations is in the log by now
    const cancelled = logged("notifications/cancelled").map((r) => r.params.requestId);
    // each read cancelled once, under its own wire id, and nothing else
    expect(cancelled).toHaveLength(pairs.length);
    expect(new Set(cancelled).size).toBe(pairs.length);
  });

  it("an id in flight is in use however it is spelled: 1.0 and 1 are one id, as a cancellation reads them", async () => {
    const { gw, methodLog } = lenientGateway("habits");
    await ready(gw);
    const reads = () =>
      readJsonLines<{ method: string; params: { uri?: string } }>(methodLog)
        .filter((r) => r.method === "resources/read")
        .map((r) => r.params.uri);
    const read = (id: string, uri: string) =>
      gw.send(`{"jsonrpc":"2.0","id":${id},"method":"resources/read","params":{"uri":"${uri}"}}\n`);
    const refusal = async (id: string) => {
      const m = await gw.next((m) => m.id === Number(id) && m.error !== undefined);
      // the id comes back as the client wrote it
      expect(gw.lines()).toContainEqual(
        expect.stringMatching(new RegExp(`^\\{"jsonrpc":"2\\.0","id":${id.replace(".", "\\.")},"error"`)),
      );
      return m;
    };
    // a stand-in (1.0) open: the plain 1 is the same id
    read("1.0", "hang:a");
    await waitFor(() => reads().includes("hang:a"), 10_000, "the first read at the server");
    read("1", "hang:b");
    // and a plain 2 open: 2.0 is the same id
    read("2", "hang:c");
    await waitFor(() => reads().includes("hang:c"), 10_000, "the third read at the server");
    read("2.0", "hang:d");
    for (const id of ["1", "2.0"]) {
      const refused = await refusal(id);
      expect(refused.error).toMatchObject({ code: -32600 });
      // named as the client wrote it, never by the gateway's stand-in
      expect(refused.error!.message).toBe(
        `Invalid request: id ${id} is already in use by a request in flight; send it with a new id.`,
      );
    }
    // each open read is cancelled by either spelling of its id (the refused ones took nothing over)
    gw.send('{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}\n');
    gw.send('{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2.0}}\n');
    await gw.request("ping"); // anything forwarded before it is in the log by now
    expect(reads()).toEqual(["hang:a", "hang:c"]);
    const cancelled = readJsonLines<{ method: string }>(methodLog).filter(
      (r) => r.method === "notifications/cancelled",
    );
    expect(cancelled).toHaveLength(2);
    expect(gw.stderr()).not.toMatch(/portcullis-raw-id/);
  });

  it("a guarded request under an id still in flight is refused, never forwarded: each intent keeps its own end", async () => {
    const stateDir = newStateDir();
    const gw = gateway({ stateDir });
    await ready(gw);
    const call = (id: unknown, tag: string, ms: number) => sendCall(gw, id, "slow", { ms, tag });
    call(5, "first", 1500);
    call(5, "second", 1);
    gw.send({ jsonrpc: "2.0", id: 5, method: "resources/read", params: { uri: "file:///x" } });
    call("5", "a string id is another id", 1);
    const refused = await gw.next((m) => m.id === 5 && m.error !== undefined);
    expect(refused.error).toMatchObject({ code: -32600 });
    expect(String((refused.error as { message: string }).message)).toContain("already in use");
    expect(textOf(await gw.next((m) => m.id === "5"))).toBe("slow a string id is another id");
    expect(textOf(await gw.next((m) => m.id === 5 && m.result !== undefined, 10_000))).toBe("slow first");
    // Free again once answered.
    call(5, "again", 1);
    expect(textOf(await gw.next((m) => m.id === 5 && m.result !== undefined))).toBe("slow again");
    expect(
      gw.stderr().match(/refused (tools\/call|resources\/read) 5: that id is already in use/g),
    ).toHaveLength(2);
    await gw.close();
    // In the chain: an intent and an end for each call forwarded, none for the refused ones.
    const events = await auditEvents(stateDir);
    const of = (type: string, id: unknown) =>
      events.filter((e) => e.type === type && JSON.stringify(e.requestId) === JSON.stringify(id)).length;
    expect([of("tool_called", 5), of("tool_result", 5)]).toEqual([2, 2]);
    expect([of("tool_called", "5"), of("tool_result", "5")]).toEqual([1, 1]);
    expect(events.filter((e) => e.type === "request_forwarded")).toEqual([]);
  });

  it("any request under the id of a call in flight is refused: a relayed ping cannot free the call's id", async () => {
    const stateDir = newStateDir();
    const gw = gateway({ stateDir });
    await ready(gw);
    const call = (tag: string, ms: number) => sendCall(gw, 7, "slow", { ms, tag });
    call("first", 1500);
    // relayed as written were it free; its answer would have freed id 7 while the call still runs
    gw.send({ jsonrpc: "2.0", id: 7, method: "ping" });
    const ping = await gw.next((m) => m.id === 7);
    expect(ping.error).toMatchObject({ code: -32600 });
    expect(String((ping.error as { message: string }).message)).toContain("already in use");
    call("second", 1);
    expect((await gw.next((m) => m.id === 7)).error).toMatchObject({ code: -32600 });
    expect(textOf(await gw.next((m) => m.id === 7, 10_000))).toBe("slow first");
    // free again once answered, for a relayed request too (this server answers ping -32601)
    gw.send({ jsonrpc: "2.0", id: 7, method: "ping" });
    expect((await gw.next((m) => m.id === 7)).error).toMatchObject({ code: -32601 });
    expect(gw.messages().filter((m) => m.id === 7)).toHaveLength(4);
    // the line comes on stderr, what was awaited on another pipe (or the store, or the exit): read in either order
    await waitFor(
      () => /refused ping 7: that id is already in use/.test(gw.stderr()),
      20_000,
      "the gateway's line on the refused ping",
    );
    expect(gw.stderr()).toMatch(/refused ping 7: that id is already in use/);
    await gw.close();
    // one intent, one end: the call's own
    const events = await auditEvents(stateDir);
    const of7 = (type: string) => events.filter((e) => e.type === type && e.requestId === 7);
    expect(of7("tool_called")).toHaveLength(1);
    expect(of7("tool_result")).toEqual([expect.objectContaining({ tool: "slow", outcome: "ok" })]);
    expect(of7("call_interrupted")).toEqual([]);
  });
});

describe("a request the client cancelled once it reached the server", () => {
  /** A call of `blob` under `id` that answers after `ms`, once it is at the server (its progress came back). */
  async function atServer(gw: RawPeer, id: number, ms: number): Promise<void> {
    const progressToken = `p${id}`;
    gw.send({
      jsonrpc: "2.0",
      id,
      method: "tools/call",
      params: { name: "blob", arguments: { bytes: 8, ms }, _meta: { progressToken } },
    });
    await gw.next((m) => m.method === "notifications/progress" && m.params?.progressToken === progressToken);
  }

  const cancel = (gw: RawPeer, requestId: number) =>
    gw.send({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId, reason: "gave up" } });

  it("gets no answer: its id is free again at once, and the server's late answer is dropped", async () => {
    const stateDir = newStateDir();
    const gw = gateway({ stateDir });
    await ready(gw);
    await atServer(gw, 5, 1500);
    cancel(gw, 5);
    // the same id again, while the server still works on the cancelled call
    sendCall(gw, 5, "slow", { ms: 1, tag: "second" });
    expect(textOf(await gw.next((m) => m.id === 5))).toBe("slow second");
    // started after the cancelled call, so answered after it: its late answer has come by then
    const after = await gw.request("tools/call", { name: "slow", arguments: { ms: 1500, tag: "after" } });
    expect(textOf(after)).toBe("slow after");
    expect(gw.messages().filter((m) => m.id === 5)).toHaveLength(1);
    expect(gw.stderr()).not.toMatch(/unknown id/);
    await gw.close();
    // each call under id 5 has its one end: the cancelled one's written when it was cancelled
    const events = await auditEvents(stateDir);
    const ends = events.filter(
      (e) => (e.type === "tool_result" || e.type === "call_interrupted") && e.requestId === 5,
    );
    expect(events.filter((e) => e.type === "tool_called" && e.requestId === 5)).toHaveLength(2);
    expect(ends).toEqual([
      expect.objectContaining({
        type: "call_interrupted",
        tool: "blob",
        reason: "cancelled",
        outcome: "unknown",
      }),
      expect.objectContaining({ type: "tool_result", tool: "slow", outcome: "ok" }),
    ]);
  });

  it("does not hold the shutdown when the client closes stdin, and is not answered then", async () => {
    const stateDir = newStateDir();
    const gw = gateway({ args: ["--hold-timeout", "2000"], stateDir });
    await ready(gw);
    // a server that obeys the cancellation never answers; this one would only long after the hold
    await atServer(gw, 5, 120_000);
    cancel(gw, 5);
    gw.closeStdin();
    await gw.exited;
    expect(gw.messages().filter((m) => m.id === 5)).toEqual([]);
    expect(gw.stderr()).not.toMatch(/shutting_down|unknown id/);
    const events = await auditEvents(stateDir);
    expect(events.filter((e) => e.requestId === 5).map((e) => [e.type, e.reason])).toEqual([
      ["tool_called", undefined],
      ["call_interrupted", "cancelled"],
    ]);
  });

  it("its late answer, dropped unread (over the size limit), leaves alone the progress of a newer call under its id", async () => {
    const stateDir = newStateDir();
    const gw = gateway({ approval: "per-call", args: ["--max-message-bytes", "65536"], stateDir });
    await ready(gw);
    const seen = new Set<string>();
    const blob = (progressToken: string, bytes: number, ms: number) =>
      gw.send({
        jsonrpc: "2.0",
        id: 5,
        method: "tools/call",
        params: { name: "blob", arguments: { bytes, ms }, _meta: { progressToken } },
      });
    const progressOf = (token: string) =>
      gw
        .messages()
        .filter((m) => m.method === "notifications/progress" && m.params?.progressToken === token)
        .map((m) => m.params?.progress as number);
    // A: approved, at the server (its progress came back), then cancelled; its answer, over the
    // size limit, comes later and is dropped unread
    blob("pA", 200_000, 2500);
    await decideByCli(stateDir, "approve", (await nextStoredRequest(stateDir, seen)).request);
    await waitFor(() => progressOf("pA").length === 2, 10_000, "A's progress from the server");
    cancel(gw, 5);
    // B, under the same id (free again at once), waits for a human: the gateway speaks under pB
    blob("pB", 8, 0);
    const bRequest = await nextStoredRequest(stateDir, seen);
    await waitFor(() => progressOf("pB").length === 1, 10_000, "the gateway's progress for B");
    // (the premise: A's answer came after B's progress began)
    expect(gw.stderr()).not.toMatch(/dropped a \d+-byte message from the server/);
    await waitFor(
      () => /dropped a \d+-byte message from the server/.test(gw.stderr()),
      10_000,
      "A's late answer, dropped",
    );
    await decideByCli(stateDir, "approve", bRequest.request);
    const answer = await gw.next((m) => m.id === 5, 10_000);
    expect(answer.result).toBeDefined();
    // B's progress goes on increasing: the server's 0 comes after the gateway's 1, moved past it
    const values = progressOf("pB");
    expect(values.length).toBeGreaterThanOrEqual(2);
    for (let i = 1; i < values.length; i++)
      expect(values[i]!, `pB ${values}`).toBeGreaterThan(values[i - 1]!);
    expect(gw.messages().filter((m) => m.id === 5)).toHaveLength(1);
  });
});

describe("PORTCULLIS_DEBUG=1", () => {
  it("traces every client line, an initialize that came before the first epoch was up included", async () => {
    // The first launch asks the vault holder for an env-delivered credential before it spawns;
    // a holder socket that never answers keeps the first epoch from coming up (for the ask's
    // 2 s), so the initialize written meanwhile is certainly kept for it and replayed.
    const stateDir = newStateDir();
    await storeSecret(stateDir, "api-token", "habits-debug-value-1", "--deliver", "env");
    const project = vaultedProject({
      credentials: { API_TOKEN: "api-token" },
      approval: { default: "none" },
    });
    const held: Socket[] = [];
    const holder = createServer((s) => held.push(s));
    await new Promise<void>((r) => holder.listen(holderSocketPath(stateDir), r));
    try {
      const gw = rawGateway({
        args: ["vaulted"],
        cwd: project.dir,
        stateDir,
        env: { PORTCULLIS_DEBUG: "1" },
      });
      peers.push(gw);
      await waitFor(() => held.length > 0, 15_000, "the launch to ask the holder");
      gw.send({
        jsonrpc: "2.0",
        id: "first",
        method: "initialize",
        params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } },
      });
      await gw.next((m) => m.id === "first", 15_000);
      const traced = gw
        .stderr()
        .split("\n")
        .filter((l) => l.includes("debug: ← client"));
      expect(traced[0], gw.stderr()).toMatch(/\\"method\\":\\"initialize\\"/);
    } finally {
      for (const s of held) s.destroy();
      holder.close();
      project.cleanup();
    }
  });
});
