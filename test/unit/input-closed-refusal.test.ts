// A request the gateway cannot write to a server process that runs on with its stdin closed is
// refused saying so, and saying what follows: the process is stopped as after a crash, and that
// crash starts the server again, or, at the crash-loop limit, pauses supervision until the
// server's files change (or ends it). The refusal said "starts the server again" at the limit too,
// where nothing would. Real processes under a real Supervisor (test/helpers/supervisor.ts): a
// server that crashes at its first start and closes its stdin at its second; what the supervisor
// says at the moment its write to that stdin fails is what the gateway's refusal is built from
// (src/gateway/inFlight.ts).
import { chmodSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { refuse } from "../../src/guard/refusals.js";
import type { AfterCrash } from "../../src/supervisor/crashLoop.js";
import type { SupervisorOptions } from "../../src/supervisor/supervisor.js";
import { removeDir, tempDir, waitFor } from "../helpers/files.js";
import { deferredCleanup, supervisorIn } from "../helpers/supervisor.js";

const defer = deferredCleanup();

/** What the supervisor says of its server's closed input, at the moment a write to it fails. */
async function inputClosedOfServer(options: Partial<SupervisorOptions>): Promise<AfterCrash | null> {
  const dir = tempDir("pc-input-closed-");
  defer(() => removeDir(dir));
  // what the server writes goes elsewhere than its own directory, which is watched
  const marks = tempDir("pc-input-closed-marks-");
  defer(() => removeDir(marks));
  const closedBy = join(marks, "closed");
  const server = join(dir, "server");
  // each process closes its stdin, says so by its pid (kept by exec), and runs on
  writeFileSync(server, `#!/bin/sh\nexec 0<&-\necho $$ >> ${closedBy}\nexec sleep 1000\n`);
  chmodSync(server, 0o755);
  const { sup } = supervisorIn(dir, { serverLabel: "input-closed", command: "./server", args: [] }, options);
  defer(() => sup.shutdown());
  await sup.start();
  // the current process, once it has closed its input (a restart at start may come first)
  const current = await waitFor(
    () => {
      const gen = sup.current;
      const closed = existsSync(closedBy) ? readFileSync(closedBy, "utf8").split("\n") : [];
      return gen?.alive && closed.includes(String(gen.child.pid)) ? gen : undefined;
    },
    15_000,
    "a running server process with its stdin closed",
  );
  const said = new Promise<AfterCrash | null>((resolve) =>
    current.child.stdin.once("close", () => resolve(sup.inputClosed)),
  );
  // written into a pipe nobody reads: EPIPE, and the stdin is closed on this side too
  sup.send({ jsonrpc: "2.0", id: 1, method: "ping" });
  const closed = await said;
  expect(current.alive).toBe(true); // still running: the refusal is this one, not "not running"
  return closed;
}

describe("a request refused because the server's stdin is closed", () => {
  it("below the crash-loop limit: the server is started again, as the refusal says", async () => {
    const next = await inputClosedOfServer({ crashLoop: { max: 5, windowMs: 600_000 } });
    expect(next).toEqual({ does: "respawn" });
    expect(refuse.serverInputClosed(next!).message).toBe(
      "The server process is running, but its input pipe is closed, so this request could not be sent to it; portcullis stops that process and starts the server again, as after a crash.",
    );
  });

  it("at the limit, under a watcher: supervision pauses until the files change, and the refusal says so", async () => {
    // a limit of one: this stop is the one that reaches it
    const next = await inputClosedOfServer({
      crashLoop: { max: 1, windowMs: 600_000 },
      waitForChangeOnCrashLoop: true,
    });
    expect(next).toEqual({ does: "pause", crashes: 0, windowSeconds: 600 });
    const e = refuse.serverInputClosed(next!);
    expect(e.message).toBe(
      "The server process is running, but its input pipe is closed, so this request could not be sent to it; portcullis stops that process, as after a crash, and since that makes 1 stop within 600 s, the crash-loop limit, it does not start the server again until its files change.",
    );
    expect(e.data).toMatchObject({
      error: "server_unavailable",
      reason:
        "the server process's stdin is closed while the process still runs; stopping it makes 1 stop within 600 s, the crash-loop limit: supervision pauses until the server's files change",
      retry: expect.stringMatching(/starts it again at the next change of its files/),
    });
  });

  it("at the limit, with no waiting for a change: supervision ends, and the refusal says so", async () => {
    const next = await inputClosedOfServer({ crashLoop: { max: 1, windowMs: 600_000 } });
    expect(next).toEqual({ does: "end", crashes: 0, windowSeconds: 600 });
    const e = refuse.serverInputClosed(next!);
    expect(e.message).toMatch(
      /since that makes 1 stop within 600 s, the crash-loop limit, supervision ends and this gateway with it: nothing starts the server again\.$/,
    );
    expect(e.data).toMatchObject({ retry: expect.stringMatching(/restart the MCP client$/) });
  });
});
