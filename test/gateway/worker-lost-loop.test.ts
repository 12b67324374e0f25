// A server under node --watch whose worker keeps dying (node --watch then waits for a change, and
// the gateway restarts the server itself when nothing takes the worker's place). Those restarts
// were counted as restarts for a change seen as the server started, although no file changed:
// at the loop limit supervision paused saying the server's files kept changing as it started.
// And a restart's stop gives up waiting after its grace: on a loaded machine the exit of the
// watcher it killed was read later, while the restart's launch was under way, and taken for a
// crash of the server: counted toward the loop ("killed by SIGKILL 5 times", a CI run's failure
// with the 200 ms grace) and respawned beside the launch, leaving a second server running.
import { readdirSync, readlinkSync } from "node:fs";
import { afterEach, expect, it } from "vitest";
import { waitFor } from "../helpers/files.js";
import { makeProject } from "../helpers/project.js";
import { nodeWatchGateway } from "../helpers/watchGateway.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/** The processes whose working directory is `dir` but `except` (the project's servers: watchers and workers). */
function processesIn(dir: string, except: number): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (Number(entry) !== except && readlinkSync(`/proc/${entry}/cwd`) === dir) pids.push(Number(entry));
    } catch {
      /* gone, or not ours to read */
    }
  }
  return pids;
}

async function workerLostUntilPaused(graceMs: string): Promise<string> {
  const project = makeProject("B");
  cleanup.push(() => project.cleanup());
  // the gateway's restart comes after half the hold timeout; a quick stop of each restarted
  // server: five restarts well within the crash-loop window
  const gw = nodeWatchGateway(project, {
    holdTimeoutMs: 1000,
    env: { PORTCULLIS_SHUTDOWN_GRACE_MS: graceMs },
  });
  cleanup.push(() => gw.close());
  await gw.initialize(undefined, 30_000);
  const paused = () => /supervision paused/.test(gw.stderr());
  for (let i = 0; i < 20 && !paused(); i++) {
    const served = await waitFor(
      async () => {
        if (paused()) return "paused";
        const r = await gw.request("tools/call", { name: "read_status", arguments: {} }, 30_000);
        return r.result ? (JSON.parse(r.result.content[0].text) as { pid: number }) : null;
      },
      30_000,
      "a call served",
    );
    if (served === "paused") break;
    const restarts = (gw.stderr().match(/nothing took the place of the server's worker/g) ?? []).length;
    process.kill(served.pid, "SIGKILL"); // the worker; node --watch waits for a change
    await waitFor(
      () =>
        paused() ||
        (gw.stderr().match(/nothing took the place of the server's worker/g) ?? []).length > restarts,
      30_000,
      "the gateway to restart the server",
    );
  }
  // paused: every server the gateway started is stopped, none respawned beside a restart
  await waitFor(() => processesIn(project.dir, gw.pid).length === 0, 15_000, "no server left running");
  return gw.stderr();
}

it.skipIf(process.platform !== "linux")(
  "node --watch: a worker lost again and again is a crash loop, not files that keep changing",
  async () => {
    const log = await workerLostUntilPaused("200");
    expect(log).toMatch(/the server keeps crashing \(lost its worker with nothing in its place 5 times/);
    expect(log).not.toMatch(/files keep changing/);
  },
);

it.skipIf(process.platform !== "linux")(
  "a restart's stop that gives up before the stopped server's exit is read: that exit is no crash, and nothing respawns beside the restart",
  async () => {
    // a 1 ms grace: stopChild returns before the watcher it killed is reaped, almost every time
    const log = await workerLostUntilPaused("1");
    expect(log).toMatch(/the server keeps crashing \(lost its worker with nothing in its place 5 times/);
    expect(log).not.toMatch(/respawning|killed by SIG/);
    expect(log.match(/supervision paused/g)).toHaveLength(1);
    expect(log.match(/new execution epoch/g)).toHaveLength(4);
  },
);
