// A server under node --watch whose worker keeps dying (node --watch then waits for a change, and
// the gateway restarts the server itself when nothing takes the worker's place). Those restarts
// were counted as restarts for a change seen as the server started, although no file changed:
// at the loop limit supervision paused saying the server's files kept changing as it started.
import { afterEach, expect, it } from "vitest";
import { waitFor } from "../helpers/files.js";
import { makeProject } from "../helpers/project.js";
import { nodeWatchGateway } from "../helpers/watchGateway.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

it.skipIf(process.platform !== "linux")(
  "node --watch: a worker lost again and again is a crash loop, not files that keep changing",
  async () => {
    const project = makeProject("B");
    cleanup.push(() => project.cleanup());
    // the gateway's restart comes after half the hold timeout; a quick stop of each restarted
    // server: five restarts well within the crash-loop window
    const gw = nodeWatchGateway(project, {
      holdTimeoutMs: 1000,
      env: { PORTCULLIS_SHUTDOWN_GRACE_MS: "200" },
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
    expect(gw.stderr()).toMatch(
      /the server keeps crashing \(lost its worker with nothing in its place 5 times/,
    );
    expect(gw.stderr()).not.toMatch(/files keep changing/);
  },
);
