// A client's FIRST initialize lost to a rebuild, beyond the crash that first-initialize-lost.test.ts
// covers: the server's worker swapped under a watcher while that initialize waits for its answer.
// The supervisor looks at the process tree before the first answer too (Supervisor.checkEarly,
// ReplacementDetector.lookEarly): the worker that held the gateway's output pipe is gone and its
// watcher started the same command again, holding the pipe. Whether the gone worker had read the
// initialize, nothing under /proc says, so the gateway asks (Gateway.onSwappedBeforeAnswer): a ping
// of its own written behind the initialize, answered while the initialize is not, means it was
// lost. Then it takes the crash's path (answered epoch_transition saying to send initialize again,
// nothing replayed, the client's own next initialize the new worker's handshake, a new epoch). A
// worker killed before it read anything loses nothing: its successor answers the initialize, then
// the ping, and the epoch goes on (a rule that took every swap for a replacement failed that case:
// watcher-before-answer.test.ts under node --watch, a build broken at launch).
// The watcher passes its stdio to its worker (--inherit-stdio, as `node --watch` does): a watcher
// that pipes the worker through itself hides which process answers (docs/identity.md, "Replaced
// workers", what the look before the first answer cannot see). The worker is observed before the
// SIGHUP (the gateway's debug line naming it), never after a sleep: a swap between two looks
// before the first one saw the worker is not seen. Real gateway, real processes.
import { existsSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { auditEvents } from "../helpers/approvals.js";
import { loggedMethod, readJsonLines, removeDir, tempDir, waitFor } from "../helpers/files.js";
import { FIXTURES, NODE } from "../helpers/paths.js";
import { type RawGateway, rawGateway } from "../helpers/raw.js";
import { watcherPeer as watcherGateway } from "../helpers/watcherPeer.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const INIT = { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "raw", version: "1" } };

/** The watcher's gateway (test/helpers/watcherPeer.ts), the client's first initialize sent. */
function watcherPeer(label: string, env: Record<string, string>): RawGateway {
  const peer = watcherGateway(label, env);
  cleanup.push(() => peer.close());
  peer.send({ jsonrpc: "2.0", id: "init:1", method: "initialize", params: INIT });
  return peer;
}

describe("a client's first initialize lost to a rebuild", () => {
  it("the server's code is replaced (a watcher's new worker) while the client's first initialize waits for its answer: answered epoch_transition, and the client's next initialize is the new worker's handshake", async () => {
    const dir = tempDir("portcullis-first-init-replaced-");
    cleanup.push(() => removeDir(dir));
    const hold = join(dir, "hold");
    const methods = join(dir, "methods.jsonl");
    const starts = join(dir, "starts.jsonl");
    writeFileSync(hold, ""); // the first worker holds the client's initialize unanswered
    const peer = watcherPeer("first-init-replaced", {
      FIXTURE_INIT_HOLD: hold,
      FIXTURE_METHOD_LOG: methods,
      FIXTURE_STARTS: starts,
    });
    await loggedMethod(methods, "held initialize", "the first worker holding the initialize");
    // the watcher's line for it, waited for too: the watcher writes it as spawn() returns, in its
    // own process, with no order against what the worker logs
    const workers = () => readJsonLines<{ watcher: number; pid: number }>(starts);
    const { watcher: watcherPid, pid: workerPid } = await waitFor(
      () => workers()[0],
      20_000,
      "the watcher's line for the first worker",
    );
    // the gateway has seen the worker on its pipe (its idle poll, or the initialize's arrival)
    await waitFor(
      () => peer.stderr().includes(`before its first answer, process ${workerPid} `) || undefined,
      20_000,
      "the worker seen on the gateway's pipe before its first answer",
    );
    process.kill(watcherPid, "SIGHUP"); // the watcher replaces its worker: a rebuild
    const lost = await peer.next((m) => m.id === "init:1", 30_000);
    expect(lost.error, `${JSON.stringify(lost)}\n${peer.stderr()}`).toMatchObject({
      code: -32054,
      data: { error: "epoch_transition", retried: false },
    });
    expect((lost.error as { data: { retry: string } }).data.retry).toMatch(/send initialize again/);
    expect(peer.stderr()).toMatch(/running server replaced: /);
    rmSync(hold);

    // asked before it sends initialize again: told its initialize was lost, and what to do
    const early = await peer.request("tools/list", undefined, 20_000);
    expect(early.error, JSON.stringify(early)).toMatchObject({
      code: -32600,
      data: { error: "not_initialized" },
    });

    const init = await peer.initialize({}, 20_000);
    expect(init.result, `${JSON.stringify(init)}\n${peer.stderr()}`).toMatchObject({
      serverInfo: { name: "lenient-fixture" },
    });
    const list = await peer.request("tools/list", undefined, 20_000);
    expect(list.result, JSON.stringify(list)).toMatchObject({ tools: expect.any(Array) });
    const second = await waitFor(() => workers()[1]?.pid, 20_000, "the watcher's line for the second worker");
    expect(workers()).toHaveLength(2);
    // the new worker got no replayed handshake: the gateway's probe (the ping it wrote behind the
    // lost initialize, answered first), then the client's own initialize, then the rest
    const read = readJsonLines<{ pid: number; method: string }>(methods)
      .filter((m) => m.pid === second)
      .map((m) => m.method);
    expect(read).toEqual(["ping", "initialize", "notifications/initialized", "tools/list"]);
    const events = await auditEvents(peer.stateDir);
    expect(events.filter((e) => e.type === "server_replaced").length, JSON.stringify(events)).toBe(1);
  }, 90_000);
  it("a worker swapped before it read anything (the gateway saw it on its pipe): the next worker answers the initialize still in the pipe, and no epoch is lost for it", async () => {
    const dir = tempDir("portcullis-first-init-unread-");
    cleanup.push(() => removeDir(dir));
    const gate = join(dir, "gate");
    const methods = join(dir, "methods.jsonl");
    const starts = join(dir, "starts.jsonl");
    writeFileSync(gate, ""); // no worker reads its input while this exists
    const peer = watcherPeer("first-init-unread", {
      FIXTURE_READ_GATE: gate,
      FIXTURE_METHOD_LOG: methods,
      FIXTURE_STARTS: starts,
    });
    const workers = () => readJsonLines<{ watcher: number; pid: number }>(starts);
    // its line, not only the file: the file exists a moment before the line is written in it
    await waitFor(
      () => (existsSync(starts) && workers().length > 0) || undefined,
      20_000,
      "the first worker",
    );
    const { watcher: watcherPid, pid: first } = workers()[0]!;
    await waitFor(
      () => peer.stderr().includes(`before its first answer, process ${first} `) || undefined,
      20_000,
      "the first worker seen on the gateway's pipe before its first answer",
    );
    process.kill(watcherPid, "SIGHUP"); // killed before it read a byte; the next one reads nothing yet
    await waitFor(() => workers().length === 2 || undefined, 20_000, "the second worker");
    const second = workers()[1]!.pid;
    const readBy = (pid: number) =>
      readJsonLines<{ pid: number; method: string }>(methods)
        .filter((m) => m.pid === pid)
        .map((m) => m.method);
    // The watcher writes its line as spawn() returns, before the worker ran any of its own code (the
    // gateway sees the swap then too: the new process holds the pipe from its execve()). The gate
    // holds a worker only if the file is there when its code starts: removed before that, the worker
    // reads at once, and its log lacks the line that says it waited (a loaded machine's red).
    await waitFor(
      () => readBy(second).includes("read gate closed") || undefined,
      20_000,
      "the second worker waiting at the read gate",
    );
    // the swap seen (and the gateway's probe written behind the initialize) while nothing is read
    await waitFor(
      () =>
        peer
          .stderr()
          .includes(`process ${first} was replaced before the first answer by process ${second}`) ||
        undefined,
      20_000,
      "the swap seen before the first answer",
    );
    rmSync(gate);
    const init = await peer.next((m) => m.id === "init:1", 30_000);
    expect(init.result, `${JSON.stringify(init)}\n${peer.stderr()}`).toMatchObject({
      serverInfo: { name: "lenient-fixture" },
    });
    // the second worker read the initialize first, then the probe, and answered them in that order
    await waitFor(() => readBy(second).includes("ping") || undefined, 20_000, "the probe read");
    expect(readBy(second).slice(0, 3)).toEqual(["read gate closed", "initialize", "ping"]);
    peer.send({ jsonrpc: "2.0", method: "notifications/initialized" });
    const list = await peer.request("tools/list", undefined, 20_000);
    expect(list.result, JSON.stringify(list)).toMatchObject({ tools: expect.any(Array) });
    expect(peer.stderr()).not.toMatch(/running server replaced|initialize was lost/);
    const events = await auditEvents(peer.stateDir);
    expect(
      events.filter((e) => e.type === "server_replaced"),
      JSON.stringify(events),
    ).toEqual([]);
  }, 90_000);

  it.runIf(process.platform === "linux")(
    "a restart loop (sh: while :; do node server; done) whose worker dies holding the client's first initialize: the same command started again is a new epoch, the initialize answered epoch_transition",
    async () => {
      const dir = tempDir("portcullis-first-init-loop-");
      cleanup.push(() => removeDir(dir));
      const hold = join(dir, "hold");
      const methods = join(dir, "methods.jsonl");
      writeFileSync(hold, "");
      // The loop ends once the gateway that started it is gone ($PPID is read when sh starts): a
      // gateway killed before it could stop its server (the helper's SIGKILL after 3 s of a slow
      // shutdown) left `while :` restarting a server whose input is closed, at full CPU, for
      // the rest of the suite.
      const script = `while kill -0 $PPID 2>/dev/null; do "${NODE}" "${FIXTURES.lenient}"; done`;
      const peer = rawGateway({
        args: ["--label", "first-init-loop", "--approval", "none", "--", "/bin/sh", "-c", script],
        env: { FIXTURE_INIT_HOLD: hold, FIXTURE_METHOD_LOG: methods, PORTCULLIS_DEBUG: "1" },
      });
      cleanup.push(() => peer.close());
      peer.send({ jsonrpc: "2.0", id: "init:1", method: "initialize", params: INIT });
      const held = await loggedMethod(methods, "held initialize", "the first worker holding the initialize");
      await waitFor(
        () => peer.stderr().includes(`before its first answer, process ${held.pid} `) || undefined,
        20_000,
        "the worker seen on the gateway's pipe before its first answer",
      );
      process.kill(held.pid, "SIGKILL"); // the loop starts the same command again
      const lost = await peer.next((m) => m.id === "init:1", 30_000);
      expect(lost.error, `${JSON.stringify(lost)}\n${peer.stderr()}`).toMatchObject({
        code: -32054,
        data: { error: "epoch_transition", retried: false },
      });
      expect((lost.error as { data: { retry: string } }).data.retry).toMatch(/send initialize again/);
      expect(peer.stderr()).toMatch(
        /running server replaced: process \d+ was replaced before the first answer/,
      );
      rmSync(hold);
      const init = await peer.initialize({}, 20_000);
      expect(init.result, `${JSON.stringify(init)}\n${peer.stderr()}`).toMatchObject({
        serverInfo: { name: "lenient-fixture" },
      });
      const list = await peer.request("tools/list", undefined, 20_000);
      expect(list.result, JSON.stringify(list)).toMatchObject({ tools: expect.any(Array) });
      const events = await auditEvents(peer.stateDir);
      expect(events.filter((e) => e.type === "server_replaced").length, JSON.stringify(events)).toBe(1);
    },
    90_000,
  );
});
