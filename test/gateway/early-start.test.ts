// `portcullis run` spawns a local server before it loads the gateway's modules (src/cli/run.ts),
// so the server boots meanwhile. A server spawned that early must never outlive a gateway that
// could not start, nor one ended by a signal before its own handlers exist, and a gateway that
// will refuse to start (no keyring) must not run the server at all.
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { removeDir, tempDir, waitFor } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { NODE } from "../helpers/paths.js";
import { rawGateway } from "../helpers/raw.js";
import { newStateDir } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/** A server that writes its pid when it boots, then ignores SIGTERM and the end of its input. */
function stubbornServer(): { script: string; pids: () => number[] } {
  const dir = tempDir("portcullis-early-");
  cleanup.push(() => removeDir(dir));
  const pidFile = join(dir, "pids");
  const script = join(dir, "stubborn.mjs");
  writeFileSync(
    script,
    `import { appendFileSync } from "node:fs";
appendFileSync(${JSON.stringify(pidFile)}, process.pid + "\\n");
process.on("SIGTERM", () => {});
setInterval(() => {}, 1000);
`,
  );
  const pids = () =>
    existsSync(pidFile) ? readFileSync(pidFile, "utf8").trim().split("\n").filter(Boolean).map(Number) : [];
  return { script, pids };
}

/** Running (a zombie waiting for a reaper counts as gone). */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false;
  }
}

describe.runIf(process.platform === "linux")("a server spawned before the gateway is ready", () => {
  it("is killed when the gateway cannot start (its store cannot be opened)", async () => {
    const server = stubbornServer();
    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    mkdirSync(join(stateDir, "portcullis.db")); // a directory where the store should be
    const r = await runCli(
      [
        "run",
        "--state-dir",
        stateDir,
        "--label",
        "stubborn",
        "--approval",
        "none",
        "--",
        NODE,
        server.script,
      ],
      { timeoutMs: 30_000 },
    );
    expect(r.code).not.toBe(0);
    // it was spawned ahead of the store, and it is gone with the gateway
    const [pid] = await waitFor(() => server.pids().length > 0 && server.pids(), 5_000, "the server's pid");
    await waitFor(() => !alive(pid!), 5_000, `server ${pid} to be gone`);
    expect(server.pids()).toHaveLength(1);
  });

  it("is never spawned when the gateway will refuse to start for want of a keyring", async () => {
    const server = stubbornServer();
    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    rmSync(join(stateDir, "keyring.json"));
    const r = await runCli(
      [
        "run",
        "--state-dir",
        stateDir,
        "--label",
        "stubborn",
        "--approval",
        "none",
        "--",
        NODE,
        server.script,
      ],
      { timeoutMs: 30_000 },
    );
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/no keyring in .*portcullis init/);
    expect(server.pids()).toEqual([]);
  });

  it("is killed with a gateway ended by SIGTERM as soon as the server has booted, whatever the gateway was doing", async () => {
    for (let round = 0; round < 3; round++) {
      const server = stubbornServer();
      const gw = rawGateway({
        args: ["--label", "stubborn", "--approval", "none", "--", NODE, server.script],
      });
      cleanup.push(() => gw.close());
      const [pid] = await waitFor(
        () => server.pids().length > 0 && server.pids(),
        10_000,
        "the server's pid",
      );
      gw.kill("SIGTERM");
      await gw.exited;
      await waitFor(() => !alive(pid!), 10_000, `server ${pid} to be gone`);
    }
  });
});
