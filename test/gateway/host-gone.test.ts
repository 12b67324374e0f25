// The agent host dies (killed, crashed, its terminal closed): every end of the gateway's stdio
// pipes closes at once. The gateway must still end its server's processes, also a server that
// outlives its stdin (here `node --watch`, whose watcher keeps running after the worker exits),
// even though writing a log line to the closed stderr fails.
import { spawn } from "node:child_process";
import { afterEach, describe, expect, it } from "vitest";
import { processStartTime } from "../../src/identity/proc.js";
import { removeDir, tempDir, waitFor } from "../helpers/files.js";
import { hostEnv, runCli } from "../helpers/gateway.js";
import { CLI, FIXTURES, NODE } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";

let cleanup: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanup.reverse()) c();
  cleanup = [];
});

describe("the agent host goes away", () => {
  it("its pipes close at once: the gateway ends a node --watch server, and exits", async () => {
    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    const gw = spawn(
      NODE,
      [
        CLI,
        "run",
        "--state-dir",
        stateDir,
        "--label",
        "w",
        "--approval",
        "none",
        "--",
        NODE,
        "--watch",
        FIXTURES.echo,
      ],
      { stdio: ["pipe", "pipe", "pipe"], env: hostEnv() },
    );
    const exited = new Promise<number | null>((r) => gw.once("exit", (code) => r(code)));
    cleanup.push(() => {
      if (gw.exitCode === null) gw.kill("SIGKILL");
    });
    let out = "";
    gw.stdout.on("data", (d) => {
      out += d;
    });
    gw.stdin.write(
      `${JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: {
          protocolVersion: "2025-06-18",
          capabilities: {},
          clientInfo: { name: "host", version: "1" },
        },
      })}\n`,
    );
    await waitFor(() => out.includes('"id":1'), 20_000, "the initialize answer");
    const status = JSON.parse((await runCli(["status", "--json", "--state-dir", stateDir])).stdout);
    const watcher = status.gateways[0].record.processId as number;
    expect(processStartTime(watcher)).not.toBeNull();
    const started = processStartTime(watcher);
    cleanup.push(() => {
      if (processStartTime(watcher) === started) process.kill(watcher, "SIGKILL");
    });

    // The host dies: every end of the three pipes closes.
    gw.stdin.destroy();
    gw.stdout.destroy();
    gw.stderr.destroy();
    await exited;
    await waitFor(() => processStartTime(watcher) !== started, 10_000, "the node --watch server to be ended");
  });
  it("its input closes while the server is still being started: exit 0, not a launch error", async () => {
    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    // a cold digest cache: the start digests the whole dependency tree, long after the host left
    const cache = tempDir("portcullis-cold-cache-");
    cleanup.push(() => removeDir(cache));
    const r = await runCli(["run", "--label", "gone", "--", NODE, FIXTURES.echo], {
      stateDir,
      env: { PORTCULLIS_CACHE_DIR: cache },
      input: "",
    });
    expect(r.stderr).not.toMatch(/shutting down|could not|error/i);
    expect(r.code).toBe(0);
  });
});
