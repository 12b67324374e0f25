// A server reached by `run --url` that sends without end (notifications on a call's stream, as
// fast as the connection takes them) to a client that reads slower: what waits for the client is
// bounded, and the server is made to wait instead (its writes stop being taken), not the
// gateway's memory grown until it aborts. Nothing is lost: once the client reads again, every
// notification arrives, in order, then the call's answer. Real gateway, real hostile fixture;
// the client is a plain pipe this test stops and starts reading.
import { spawn } from "node:child_process";
import { afterEach, describe, expect, it } from "vitest";
import { removeDir, tempDir, waitFor } from "../helpers/files.js";
import { floodProgress, readFlood, serverHeld } from "../helpers/flood.js";
import { assertBuilt, hostEnv } from "../helpers/gateway.js";
import { CLI, NODE } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";
import { HOSTILE, startFixture } from "./upstreamFixture.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const MIB = 1024 * 1024;

describe("a remote server that streams faster than the client reads", () => {
  it("is made to wait once a few MiB wait for the client; nothing is lost once the client reads again", async () => {
    const dir = tempDir("pc-flood-");
    const progress = `${dir}/flood.json`;
    const server = await startFixture({ FIXTURE_FLOOD_LOG: progress }, null, 0, HOSTILE);
    cleanup.push(() => server.kill());
    assertBuilt();
    const stateDir = newStateDir();
    const gw = spawn(NODE, [CLI, "run", "--state-dir", stateDir, "--url", server.url, "--approval", "none"], {
      env: hostEnv(),
      stdio: ["pipe", "pipe", "pipe"],
    });
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
    const seen = readFlood(gw.stdout);
    const send = (m: object) => gw.stdin.write(`${JSON.stringify(m)}\n`);
    const answer = (id: string) => waitFor(() => seen.answers.get(id), 60_000, `the answer to ${id}`);

    send({
      jsonrpc: "2.0",
      id: "init",
      method: "initialize",
      params: {
        protocolVersion: "2025-06-18",
        capabilities: {},
        clientInfo: { name: "flood", version: "1" },
      },
    });
    await answer("init");
    send({ jsonrpc: "2.0", method: "notifications/initialized" });
    send({ jsonrpc: "2.0", id: "list", method: "tools/list" });
    expect((await answer("list")).result).toBeDefined();

    // the client stops reading, then asks for 40 MiB of notifications of 16 KiB each: far past what
    // waits for it before the server is made to wait (4 MiB on the gateway's stdout, plus the pipes'
    // and the socket's buffers: held at 7.8-9.9 MiB written, measured), so "held short of half"
    // still tells a bounded gateway from one that takes everything (it was 64 MiB, each MiB parsed
    // by the gateway and by this test)
    gw.stdout.pause();
    const bytes = 40 * MIB;
    send({
      jsonrpc: "2.0",
      id: "flood",
      method: "tools/call",
      params: { name: "bad", arguments: { mode: "flood", bytes, size: 16 * 1024 } },
    });
    const written = floodProgress(progress);
    // the server's writes stop being taken: its progress stays put for a second, well short of
    // the end (before, the gateway took all of it into its memory, and more for as long as the
    // server sent)
    const stalled = await serverHeld(written);
    expect(stalled.done).toBe(false);
    expect(stalled.written).toBeLessThan(bytes / 2);

    // the client reads again: every notification, in order, then the call's answer
    gw.stdout.resume();
    const flooded = await answer("flood");
    const count = seen.seqs.length;
    expect(flooded.result?.content?.[0]?.text).toBe(`flooded ${count}`);
    expect(count).toBeGreaterThan(bytes / (17 * 1024));
    expect(seen.seqs.every((s, i) => s === i)).toBe(true);
    expect(written()?.done).toBe(true);
    // and the gateway serves on, under the same session
    send({
      jsonrpc: "2.0",
      id: "after",
      method: "tools/call",
      params: { name: "bad", arguments: { mode: "fine" } },
    });
    expect((await answer("after")).result?.content?.[0]?.text).toBe("ok fine");
    expect(stderr).not.toMatch(/remote session ended|TypeError|Unhandled|heap out of memory/);
  }, 120_000);
});
