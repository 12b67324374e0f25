// A launched server that writes faster than the client reads (notifications as fast as its stdout
// takes them, to a client that stopped reading): what waits for the client is bounded, and the
// server is made to wait instead (the gateway stops reading its stdout), not the gateway's memory
// grown without end. Nothing is lost: once the client reads again, every notification arrives, in
// order, then the call's answer. Real gateway, real fixture (habits.mjs `pour`); the client is a
// plain pipe this test stops and starts reading.
import { spawn } from "node:child_process";
import { afterEach, describe, expect, it } from "vitest";
import { removeDir, tempDir, waitFor } from "../helpers/files.js";
import { floodProgress, readFlood, serverHeld } from "../helpers/flood.js";
import { assertBuilt, hostEnv } from "../helpers/gateway.js";
import { CLI, FIXTURES, NODE } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const MIB = 1024 * 1024;

describe("a launched server that writes faster than the client reads", () => {
  it("is made to wait once a few MiB wait for the client; nothing is lost once the client reads again", async () => {
    assertBuilt();
    const dir = tempDir("pc-pour-");
    const progress = `${dir}/pour.json`;
    const stateDir = newStateDir();
    const gw = spawn(
      NODE,
      [
        CLI,
        "run",
        "--state-dir",
        stateDir,
        "--label",
        "pour",
        "--approval",
        "none",
        "--",
        NODE,
        FIXTURES.habits,
      ],
      { env: { ...hostEnv(), FIXTURE_POUR_LOG: progress }, stdio: ["pipe", "pipe", "pipe"] },
    );
    const exited = new Promise<void>((resolve) => gw.once("exit", () => resolve()));
    cleanup.push(
      async () => {
        if (gw.exitCode === null && gw.signalCode === null) gw.kill("SIGKILL");
        await exited;
      },
      () => removeDir(stateDir),
      () => removeDir(dir),
    );
    let stderr = "";
    gw.stderr.on("data", (b: Buffer) => {
      stderr += b.toString();
    });
    const { seqs, answers } = readFlood(gw.stdout);
    const send = (m: object) => gw.stdin.write(`${JSON.stringify(m)}\n`);
    const answer = (id: string) => waitFor(() => answers.get(id), 60_000, `the answer to ${id}`);

    send({
      jsonrpc: "2.0",
      id: "init",
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "pour", version: "1" } },
    });
    await answer("init");
    send({ jsonrpc: "2.0", method: "notifications/initialized" });
    send({ jsonrpc: "2.0", id: "list", method: "tools/list" });
    expect((await answer("list")).result).toBeDefined();

    // the client stops reading, then asks for 64 MiB of notifications of 16 KiB each
    gw.stdout.pause();
    const bytes = 64 * MIB;
    send({
      jsonrpc: "2.0",
      id: "pour",
      method: "tools/call",
      params: { name: "pour", arguments: { bytes, size: 16 * 1024 } },
    });
    // the server's writes stop being taken: its progress stays put for a second, well short of
    // the end (before, the gateway read all 64 MiB into its memory, and more for as long as the
    // server wrote)
    const stalled = await serverHeld(floodProgress(progress));
    expect(stalled.done).toBe(false);
    expect(stalled.written).toBeLessThan(bytes / 2);

    // the client reads again: every notification, in order, then the call's answer
    gw.stdout.resume();
    const poured = await answer("pour");
    const count = seqs.length;
    expect(poured.result?.content?.[0]?.text).toBe(`poured ${count}`);
    expect(count).toBeGreaterThan(bytes / (17 * 1024));
    expect(seqs.every((s, i) => s === i)).toBe(true);
    // and the gateway serves on, under the same epoch
    send({
      jsonrpc: "2.0",
      id: "after",
      method: "tools/call",
      params: { name: "slow", arguments: { ms: 1, tag: "after" } },
    });
    expect((await answer("after")).result?.content?.[0]?.text).toBe("slow after");
    expect(stderr).not.toMatch(/new execution epoch|TypeError|Unhandled|heap out of memory/);
  }, 120_000);
});
