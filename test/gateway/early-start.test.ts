// `portcullis run` spawns a local server before it loads the gateway's modules (src/cli/run.ts),
// so the server boots meanwhile. A server spawned that early must never outlive a gateway that
// could not start, nor one ended by a signal before its own handlers exist, and a gateway that
// will refuse to start (no keyring) must not run the server at all.
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { DigestCache } from "../../src/identity/cache.js";
import { EarlyStart } from "../../src/supervisor/spawn.js";
import { Supervisor } from "../../src/supervisor/supervisor.js";
import { removeDir, sleep, tempDir, waitFor } from "../helpers/files.js";
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

/** `portcullis run` in front of that server, to its end (it never gets a client message). */
function runStubborn(stateDir: string, script: string) {
  const args = ["run", "--state-dir", stateDir, "--label", "stubborn", "--approval", "none"];
  return runCli([...args, "--", NODE, script], { timeoutMs: 30_000 });
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
    const r = await runStubborn(stateDir, server.script);
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
    const r = await runStubborn(stateDir, server.script);
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

  it("is used by the first launch only when spawned from exactly its launch spec; otherwise it is killed unused and the server started as the spec says", async () => {
    const server = stubbornServer();
    const spec = {
      serverLabel: "stubborn",
      command: NODE,
      args: [server.script],
      cwd: tempDir("portcullis-early-cwd-"),
      env: { PATH: process.env.PATH ?? "", EARLY_MARK: "as-configured" },
      configDigest: "sha256:0",
    };
    cleanup.push(() => removeDir(spec.cwd));
    const warnings: string[] = [];
    const log = { info: () => {}, warn: (m: string) => warnings.push(m), status: () => {}, debug: () => {} };
    const launch = async (early: EarlyStart) => {
      const sup = new Supervisor({ spec, cache: new DigestCache(null), log, early, shutdownGraceMs: 200 });
      cleanup.push(() => sup.shutdown());
      return (await sup.start()).child.pid!;
    };

    // files written less than 50 ms before a spawn count as changed after it: let the script age
    await sleep(200);
    // the same spec: that very process is the first generation
    const same = EarlyStart.spawn(spec);
    expect(await launch(same)).toBe(same.started.child.pid);

    // one environment variable differs (as credentials or a proxy would add): not that process
    const other = EarlyStart.spawn({ ...spec, env: { ...spec.env, EARLY_MARK: "something-else" } });
    const otherPid = other.started.child.pid!;
    const pid = await launch(other);
    expect(pid).not.toBe(otherPid);
    expect(warnings.join("\n")).toMatch(/spawned ahead of the gateway differs from its launch spec/);
    await waitFor(() => !alive(otherPid), 5_000, `the unused process ${otherPid} to be gone`);
    expect(alive(pid)).toBe(true);
  });
});
