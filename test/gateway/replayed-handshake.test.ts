// When the server behind the gateway is replaced (a new execution epoch), the gateway replays the
// client's handshake to the new process (legacy: its initialize, then notifications/initialized).
// Nothing but that handshake reaches the new process until it is complete: not the gateway's own
// catalog fetch (which a client's tools/list, or a guarded read, used to start while the replayed
// initialize waited for its answer), not a relayed request (ping, resources/list, prompts/list),
// not a client notification. And the replayed initialize has a bound
// (PORTCULLIS_HANDSHAKE_TIMEOUT_MS, shortened here): a new process that never answers it is a
// server that cannot start, and the connection ends as when it refuses it, saying so, rather than
// held calls getting identity_pending at every hold timeout for ever.
// Real gateway, the lenient fixture (its initialize held while a file exists), raw client.
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { wholeLines } from "../helpers/completeLines.js";
import { readJsonLines, removeDir, waitFor } from "../helpers/files.js";
import type { WireMessage } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { type RawGateway, rawGateway } from "../helpers/raw.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

interface Logged {
  method: string;
  params: Record<string, unknown> | null;
  /** the process that received it (or logged the marker) */
  pid: number;
}

/**
 * A gateway in front of the lenient fixture, initialized and with its catalog served; `hold`
 * (absent at first) holds the initialize of every process started while it exists.
 */
async function lenientGateway(
  env: Record<string, string> = {},
  era: "legacy" | "modern" = "legacy",
): Promise<{
  gw: RawGateway;
  hold: string;
  logged: () => Logged[];
  serverPid: number;
}> {
  const dir = mkdtempSync(join(tmpdir(), "pc-replayed-handshake-"));
  const hold = join(dir, "hold");
  const methodLog = join(dir, "methods.jsonl");
  const gw = rawGateway({
    args: ["--label", "replayed", "--approval", "none", "--", ...fixtureCommand("lenient")],
    env: { FIXTURE_METHOD_LOG: methodLog, FIXTURE_INIT_HOLD: hold, ...env },
  });
  cleanup.push(
    () => gw.close(),
    () => removeDir(dir),
  );
  if (era === "legacy") await gw.initialize({}, 20_000);
  else expect((await gw.request("server/discover", { _meta: META }, 20_000)).result).toBeDefined();
  const listed = await gw.request("tools/list", era === "legacy" ? {} : { _meta: META }, 20_000);
  expect(listed.result, JSON.stringify(listed)).toBeDefined();
  // waited for in a line written whole: stderr is another pipe than the answers, read at its own pace,
  // and a chunk can end inside the pid
  const line = (
    await waitFor(() => /\[lenient\] pid=(\d+)/.exec(wholeLines(gw.stderr())), 20_000, "the server's pid")
  )[0];
  const serverPid = Number(/pid=(\d+)/.exec(line)?.[1]);
  expect(serverPid).toBeGreaterThan(0);
  return {
    gw,
    hold,
    logged: () => (existsSync(methodLog) ? readJsonLines<Logged>(methodLog) : []),
    serverPid,
  };
}

/** The modern era's envelope, on every request of a 2026-07-28 client. */
const META = {
  "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientCapabilities": {},
};

/** The server is killed with its next process's handshake held: resolves once it is held there. */
async function replaceWithHeldInitialize(
  gw: RawGateway,
  hold: string,
  logged: () => Logged[],
  serverPid: number,
  method = "initialize",
): Promise<void> {
  writeFileSync(hold, "");
  process.kill(serverPid, "SIGKILL");
  await waitFor(() => logged().some((l) => l.method === `held ${method}`), 20_000, `the replayed ${method}`);
  await waitFor(() => /new execution epoch/.test(gw.stderr()), 10_000, "the new epoch");
}

/**
 * Everything the new process received after the replayed initialize, in order (the fixture's
 * own markers left out).
 */
function afterReplay(logged: Logged[], method = "initialize"): string[] {
  const at = logged.findIndex((l) => l.method === `held ${method}`);
  return logged
    .slice(at + 1)
    .map((l) => l.method)
    .filter((m) => m !== `answered ${method}`);
}

/** What the new process received while its replayed handshake waited for its answer. */
function whileHeld(logged: Logged[], method: string): string[] {
  const at = logged.findIndex((l) => l.method === `held ${method}`);
  const end = logged.findIndex((l) => l.method === `answered ${method}`);
  return logged.slice(at + 1, end < 0 ? undefined : end).map((l) => l.method);
}

/** The fixture's own markers in its method log, not messages it received. */
const MARKER = /^(held|answered) |^stdin ended$/;

/** The params of a request of the client in `era`: the modern one carries its envelope in each. */
function paramsIn(era: "legacy" | "modern", p: Record<string, unknown> = {}): Record<string, unknown> {
  return era === "modern" ? { ...p, _meta: META } : p;
}

describe("a replayed handshake", () => {
  it("nothing but the handshake reaches the new process until its initialize is answered: lists, relayed requests, guarded reads and notifications wait, then are answered", async () => {
    const { gw, hold, logged, serverPid } = await lenientGateway();
    await replaceWithHeldInitialize(gw, hold, logged, serverPid);

    // while the new process's initialize waits for its answer, the client asks of it
    const ids = ["list", "ping", "resources", "prompts", "read", "call"] as const;
    gw.send({ jsonrpc: "2.0", id: "list", method: "tools/list", params: {} });
    gw.send({ jsonrpc: "2.0", id: "ping", method: "ping" });
    gw.send({ jsonrpc: "2.0", id: "resources", method: "resources/list", params: {} });
    gw.send({ jsonrpc: "2.0", id: "prompts", method: "prompts/list", params: {} });
    gw.send({ jsonrpc: "2.0", id: "read", method: "resources/read", params: { uri: "file:///r" } });
    gw.send({ jsonrpc: "2.0", method: "notifications/roots/list_changed" });
    gw.send({ jsonrpc: "2.0", id: "call", method: "tools/call", params: { name: "echo", arguments: {} } });
    // one the client gives up on meanwhile is never sent, nor answered
    gw.send({ jsonrpc: "2.0", id: "gone", method: "completion/complete_not", params: {} });
    gw.send({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: "gone" } });
    // answered by the gateway itself: every line before it was read
    const refused = await gw.request("tasks/list", {}, 10_000);
    expect(refused.error).toBeDefined();

    rmSync(hold);
    const answers = new Map<string, WireMessage>();
    for (const id of ids) answers.set(id, await gw.next((m) => m.id === id, 20_000));

    // the handshake came first, whole: initialized right after the initialize's answer
    expect(whileHeld(logged(), "initialize")).toEqual([]);
    const received = afterReplay(logged());
    expect(received[0], JSON.stringify(received)).toBe("notifications/initialized");
    for (const method of ["tools/list", "ping", "resources/list", "prompts/list", "resources/read"])
      expect(received).toContain(method);
    expect(received).toContain("notifications/roots/list_changed");
    expect(received).not.toContain("completion/complete_not");
    expect(received).not.toContain("notifications/cancelled");
    expect(gw.messages().filter((m) => m.id === "gone")).toEqual([]);

    // and everything asked meanwhile was answered, none refused
    for (const id of ids)
      expect(answers.get(id)?.error, `${id}: ${JSON.stringify(answers.get(id))}`).toBeUndefined();
    expect(answers.get("list")?.result).toMatchObject({ tools: [{ name: "echo" }] });
    expect(answers.get("call")?.result).toMatchObject({ content: [{ type: "text" }] });
    expect(gw.stderr()).not.toMatch(/unhandled|TypeError|at .*\.js:\d+/i);
  }, 90_000);

  it("modern era: nothing reaches the new process before its replayed server/discover is answered, then everything asked meanwhile is answered", async () => {
    const { gw, hold, logged, serverPid } = await lenientGateway({}, "modern");
    await replaceWithHeldInitialize(gw, hold, logged, serverPid, "server/discover");

    const ids = ["list", "ping", "resources", "read", "call"] as const;
    const params = (p: Record<string, unknown> = {}) => ({ ...p, _meta: META });
    gw.send({ jsonrpc: "2.0", id: "list", method: "tools/list", params: params() });
    gw.send({ jsonrpc: "2.0", id: "ping", method: "ping", params: params() });
    gw.send({ jsonrpc: "2.0", id: "resources", method: "resources/list", params: params() });
    gw.send({ jsonrpc: "2.0", id: "read", method: "resources/read", params: params({ uri: "file:///r" }) });
    gw.send({
      jsonrpc: "2.0",
      id: "call",
      method: "tools/call",
      params: params({ name: "echo", arguments: {} }),
    });
    const refused = await gw.request("tasks/list", params(), 10_000);
    expect(refused.error).toBeDefined();

    rmSync(hold);
    const answers = new Map<string, WireMessage>();
    for (const id of ids) answers.set(id, await gw.next((m) => m.id === id, 20_000));

    expect(whileHeld(logged(), "server/discover")).toEqual([]);
    const received = afterReplay(logged(), "server/discover");
    for (const method of ["tools/list", "ping", "resources/list", "resources/read", "tools/call"])
      expect(received, JSON.stringify(received)).toContain(method);
    for (const id of ids)
      expect(answers.get(id)?.error, `${id}: ${JSON.stringify(answers.get(id))}`).toBeUndefined();
    expect(answers.get("list")?.result).toMatchObject({ tools: [{ name: "echo" }] });
    expect(gw.stderr()).not.toMatch(/unhandled|TypeError|at .*\.js:\d+/i);
  }, 90_000);

  it("a new process that never answers the replayed initialize: the connection ends after the timeout, saying so, and what waited is answered", async () => {
    const { gw, hold, logged, serverPid } = await lenientGateway({ PORTCULLIS_HANDSHAKE_TIMEOUT_MS: "1000" });
    await replaceWithHeldInitialize(gw, hold, logged, serverPid);

    gw.send({ jsonrpc: "2.0", id: "call", method: "tools/call", params: { name: "echo", arguments: {} } });
    gw.send({ jsonrpc: "2.0", id: "ping", method: "ping" });
    const call = await gw.next((m) => m.id === "call", 30_000);
    const ping = await gw.next((m) => m.id === "ping", 30_000);
    const exit = await gw.exited;

    const said = /the new server process did not answer initialize within 1 s/;
    expect(exit.code).toBe(1);
    expect(gw.stderr()).toMatch(said);
    // the held call is told why the connection ends, not only "identity pending, retry"
    expect(call.error, JSON.stringify(call)).toBeDefined();
    expect(JSON.stringify(call.error)).toMatch(said);
    expect(ping.error, JSON.stringify(ping)).toBeDefined();
    // nothing but the initialize reached the new process (MCP: initialize is never cancelled)
    expect(afterReplay(logged())).toEqual([]);
    expect(gw.stderr()).not.toMatch(/unhandled|TypeError|at .*\.js:\d+/i);
  }, 90_000);

  for (const era of ["legacy", "modern"] as const) {
    const method = era === "legacy" ? "initialize" : "server/discover";
    it(`${era} era: the client closes its input while the replayed ${method} waits; its late answer sends the new process nothing more, and what waited is answered at once`, async () => {
      // the server winds down slowly: it answers what it holds after its stdin closed, and is
      // given 5 s for that, so the late answer reaches a gateway that is shutting down
      const { gw, hold, logged, serverPid } = await lenientGateway(
        { FIXTURE_LINGER: "1", PORTCULLIS_SHUTDOWN_GRACE_MS: "5000" },
        era,
      );
      await replaceWithHeldInitialize(gw, hold, logged, serverPid, method);
      const newPid = logged().find((l) => l.method === `held ${method}`)!.pid;

      // a script asks, and hangs up while the new process's handshake is under way
      gw.send({ jsonrpc: "2.0", id: "ping", method: "ping", params: paramsIn(era) });
      gw.send({ jsonrpc: "2.0", id: "list", method: "tools/list", params: paramsIn(era) });
      gw.closeStdin();
      // the connection is over: what waited for the handshake can never be sent, and is answered
      // (waited for here only for so long: the handshake is then let through, so that a gateway
      // that still waits for it shows what it sends)
      const early = await gw.next((m) => m.id === "ping", 10_000).catch(() => undefined);
      rmSync(hold);
      await waitFor(() => logged().some((l) => l.method === `answered ${method}`), 20_000, "the late answer");
      const ping = early ?? (await gw.next((m) => m.id === "ping", 20_000));
      const list = await gw.next((m) => m.id === "list", 20_000);
      const exit = await gw.exited;

      // nothing reached the new process after its handshake request: no notifications/initialized,
      // no catalog fetch, no subscription, not what the client had asked
      const received = logged().filter((l) => l.pid === newPid && !MARKER.test(l.method));
      expect(received.map((l) => l.method)).toEqual([method]);
      for (const answer of [ping, list]) {
        expect(answer.error, JSON.stringify(answer)).toMatchObject({
          data: { error: "identity_pending", reason: expect.stringMatching(/client closed its input/) },
        });
        expect(answer.error?.message).toMatch(/client closed its input .*nothing was sent to the server/);
      }
      expect(exit).toEqual({ code: 0, signal: null });
      expect(gw.stderr()).not.toMatch(/unhandled|TypeError|at .*\.js:\d+/i);
    }, 90_000);
  }

  for (const era of ["legacy", "modern"] as const) {
    const method = era === "legacy" ? "initialize" : "server/discover";
    const subscribe =
      era === "legacy"
        ? { method: "resources/subscribe", params: { uri: "file:///watched" } }
        : {
            method: "subscriptions/listen",
            params: { notifications: { promptsListChanged: true }, _meta: META },
          };
    it(`${era} era: a ${subscribe.method} sent while the replayed ${method} waits outlives that process dying before its handshake: the next process gets it once its own handshake is complete`, async () => {
      const { gw, hold, logged, serverPid } = await lenientGateway({}, era);
      await replaceWithHeldInitialize(gw, hold, logged, serverPid, method);
      const held = () => logged().filter((l) => l.method === `held ${method}`);
      const dying = held()[0]!.pid;

      gw.send({ jsonrpc: "2.0", id: "sub", ...subscribe });
      // it waits (for the handshake, or for the epoch's catalog): the process dies meanwhile, and
      // the supervisor brings up the next one, whose handshake is held too
      // (answered by the gateway itself: the line before it was read)
      expect((await gw.request("tasks/list", paramsIn(era), 10_000)).error).toBeDefined();
      process.kill(dying, "SIGKILL");
      await waitFor(() => held().some((l) => l.pid !== dying), 20_000, "the next process's handshake");
      const next = held().find((l) => l.pid !== dying)!.pid;
      expect(gw.messages().filter((m) => m.id === "sub")).toEqual([]);
      rmSync(hold);

      const answer = await gw.next((m) => m.id === "sub", 20_000);
      expect(answer.error, JSON.stringify(answer)).toBeUndefined();
      // the dying process never got it; the next one did, after its handshake was answered
      expect(logged().filter((l) => l.pid === dying && l.method === subscribe.method)).toEqual([]);
      const atNext = logged().filter((l) => l.pid === next);
      const answered = atNext.findIndex((l) => l.method === `answered ${method}`);
      const got = atNext.findIndex(
        (l) =>
          l.method === subscribe.method &&
          JSON.stringify(l.params).includes(era === "legacy" ? "watched" : "prompts"),
      );
      expect(answered, JSON.stringify(atNext)).toBeGreaterThanOrEqual(0);
      expect(got, JSON.stringify(atNext)).toBeGreaterThan(answered);
      expect(gw.stderr()).not.toMatch(/unhandled|TypeError|at .*\.js:\d+/i);
    }, 90_000);
  }

  it("reads that change nothing (ping, resources/list, resources/templates/list, prompts/list) sent while the replayed initialize waits outlive that process dying before its handshake: the next process answers them; any other relayed request is answered server_unavailable", async () => {
    const { gw, hold, logged, serverPid } = await lenientGateway();
    await replaceWithHeldInitialize(gw, hold, logged, serverPid);
    const held = () => logged().filter((l) => l.method === "held initialize");
    const dying = held()[0]!.pid;

    const reads = ["ping", "resources/list", "resources/templates/list", "prompts/list"];
    for (const m of reads) gw.send({ jsonrpc: "2.0", id: m, method: m, params: {} });
    gw.send({ jsonrpc: "2.0", id: "level", method: "logging/setLevel", params: { level: "debug" } });
    // (answered by the gateway itself: the lines before it were read)
    expect((await gw.request("tasks/list", {}, 10_000)).error).toBeDefined();
    process.kill(dying, "SIGKILL");
    // the one that may change something is answered at once: nothing of it was sent
    const level = await gw.next((m) => m.id === "level", 20_000);
    expect(level.error?.data, JSON.stringify(level)).toMatchObject({ error: "server_unavailable" });
    await waitFor(() => held().some((l) => l.pid !== dying), 20_000, "the next process's handshake");
    const next = held().find((l) => l.pid !== dying)!.pid;
    expect(gw.messages().filter((m) => reads.includes(String(m.id)))).toEqual([]);
    rmSync(hold);

    for (const m of reads) {
      const answer = await gw.next((x) => x.id === m, 20_000);
      expect(answer.error, JSON.stringify(answer)).toBeUndefined();
    }
    // the dying process never got them; the next one did, after its handshake, in order
    expect(logged().filter((l) => l.pid === dying && reads.includes(l.method))).toEqual([]);
    const atNext = afterReplay(logged().filter((l) => l.pid === next));
    expect(atNext[0]).toBe("notifications/initialized");
    expect(atNext.filter((m) => reads.includes(m))).toEqual(reads);
    expect(atNext).not.toContain("logging/setLevel");
    expect(gw.stderr()).not.toMatch(/unhandled|TypeError|at .*\.js:\d+/i);
  }, 90_000);

  for (const era of ["legacy", "modern"] as const) {
    const method = era === "legacy" ? "initialize" : "server/discover";
    it(`${era} era: the client's ${method} that its process died holding is not replayed to the next one; the client's own next ${method} goes there`, async () => {
      const dir = mkdtempSync(join(tmpdir(), "pc-replayed-handshake-"));
      const hold = join(dir, "hold");
      const methodLog = join(dir, "methods.jsonl");
      writeFileSync(hold, ""); // the first process holds the client's own handshake
      const gw = rawGateway({
        args: ["--label", "replayed", "--approval", "none", "--", ...fixtureCommand("lenient")],
        env: { FIXTURE_METHOD_LOG: methodLog, FIXTURE_INIT_HOLD: hold, PORTCULLIS_RESPAWN_BACKOFF_MS: "20" },
      });
      cleanup.push(
        () => gw.close(),
        () => removeDir(dir),
      );
      const logged = () => (existsSync(methodLog) ? readJsonLines<Logged>(methodLog) : []);
      const handshake =
        era === "legacy"
          ? {
              protocolVersion: "2025-11-25",
              capabilities: {},
              clientInfo: { name: "portcullis-raw-peer", version: "1.0.0" },
            }
          : { _meta: META };
      gw.send({ jsonrpc: "2.0", id: "first", method, params: handshake });
      await waitFor(() => logged().find((l) => l.method === `held ${method}`), 20_000, "the held handshake");
      const dying = logged().find((l) => l.method === `held ${method}`)!.pid;
      process.kill(dying, "SIGKILL");
      // the client is told its handshake's process went away
      const first = await gw.next((m) => m.id === "first", 20_000);
      expect(first.error, JSON.stringify(first)).toBeDefined();
      await waitFor(() => /new execution epoch/.test(gw.stderr()), 20_000, "the next epoch");
      rmSync(hold);

      // the client starts over; the next process is served, nothing ended the connection
      const again = await gw.request(method, handshake, 20_000);
      expect(again.result, JSON.stringify(again)).toBeDefined();
      if (era === "legacy") gw.send({ jsonrpc: "2.0", method: "notifications/initialized" });
      const list = await gw.request("tools/list", paramsIn(era), 20_000);
      expect(list.result, JSON.stringify(list)).toMatchObject({ tools: [{ name: "echo" }] });
      const next = logged().filter((l) => l.pid !== dying && l.method === method);
      expect(next, JSON.stringify(logged())).toHaveLength(1);
      expect(gw.stderr()).not.toMatch(/negotiated a different|advertises different|unhandled|TypeError/i);
    }, 90_000);
  }

  for (const era of ["legacy", "modern"] as const) {
    const method = era === "legacy" ? "initialize" : "server/discover";
    it(`${era} era: a new process that answers the replayed ${method} with an error ends the connection saying it refused it (exit 1)`, async () => {
      const dir = mkdtempSync(join(tmpdir(), "pc-replayed-handshake-"));
      const refuse = join(dir, "refuse");
      cleanup.push(() => removeDir(dir));
      const { gw, logged, serverPid } = await lenientGateway({ FIXTURE_INIT_REFUSE: refuse }, era);
      writeFileSync(refuse, "");
      process.kill(serverPid, "SIGKILL");
      const exit = await gw.exited;
      expect(exit.code, gw.stderr()).toBe(1);
      expect(gw.stderr()).toMatch(new RegExp(`the new server process refused ${method}: not today`));
      expect(gw.stderr()).not.toMatch(/advertises different capabilities|unhandled|TypeError/i);
      // nothing but the handshake reached the process that refused it
      const refusing = logged()
        .filter((l) => l.pid !== serverPid)
        .map((l) => l.method);
      expect(refusing).toEqual([method]);
    }, 90_000);
  }

  it("a new process that refuses the replayed initialize at length: its words are cut short where the gateway repeats them", async () => {
    const dir = mkdtempSync(join(tmpdir(), "pc-replayed-handshake-"));
    const refuse = join(dir, "refuse");
    cleanup.push(() => removeDir(dir));
    const { gw, hold, logged, serverPid } = await lenientGateway({ FIXTURE_INIT_REFUSE: refuse });
    // a call waits for the next epoch, and is told why the connection ends
    await replaceWithHeldInitialize(gw, hold, logged, serverPid);
    gw.send({ jsonrpc: "2.0", id: "call", method: "tools/call", params: { name: "echo", arguments: {} } });
    expect((await gw.request("tasks/list", {}, 10_000)).error).toBeDefined();
    writeFileSync(refuse, `${"no ".repeat(100_000)}end`);
    rmSync(hold);
    const call = await gw.next((m) => m.id === "call", 20_000);
    expect((await gw.exited).code).toBe(1);
    const reason = (call.error?.data as { reason?: string } | undefined)?.reason ?? "";
    expect(reason).toMatch(/^the new server process refused initialize: no no /);
    expect(reason.length).toBeLessThan(1000);
    expect(reason).not.toMatch(/end$/);
    const line =
      gw
        .stderr()
        .split("\n")
        .find((l) => l.includes("refused initialize")) ?? "";
    expect(line.length).toBeLessThan(1000);
  }, 90_000);
});
