// A server seen to execve() into other code (a replacement) whose new identity cannot be
// captured: its command is gone (a build caught half-written). A restart or respawn that cannot
// capture pauses supervision until the server's files change, in the edit-build loop; the
// replacement gave up instead, which ends the gateway, and left the replaced process running.
import { chmodSync, readFileSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { DigestCache } from "../../src/identity/cache.js";
import { type Generation, Supervisor } from "../../src/supervisor/supervisor.js";
import type { Logger } from "../../src/util/log.js";
import { removeDir, tempDir, waitFor } from "../helpers/files.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const quiet: Logger = {
  debug: () => {},
  info: () => {},
  status: () => {},
  warn: () => {},
  error: () => {},
} as unknown as Logger;

/** Process `pid` has exited (a zombie not yet reaped, or gone). */
function exited(pid: number): boolean {
  try {
    return /^\d+ \(.*\) [ZX]/.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return true;
  }
}

/** The server: reads one line, then execs into sleep (other code, same pid). */
function writeServer(file: string): void {
  writeFileSync(file, "#!/bin/sh\nread line\nexec sleep 1000\n");
  chmodSync(file, 0o755);
}

it.skipIf(process.platform !== "linux")(
  "a replacement whose identity cannot be captured pauses supervision as a restart's does, and the next change starts the server",
  async () => {
    const dir = tempDir("pc-replaced-uncapturable-");
    cleanup.push(() => removeDir(dir));
    const server = join(dir, "server");
    writeServer(server);
    const sup = new Supervisor({
      spec: {
        serverLabel: "uncapturable",
        command: "./server",
        args: [],
        cwd: dir,
        env: { PATH: process.env.PATH ?? "/usr/bin:/bin" },
        configDigest: "test",
      },
      cache: new DigestCache(null),
      log: quiet,
      shutdownGraceMs: 200,
      backoff: { initialMs: 10, maxMs: 10 },
      pollMs: 60_000,
      waitForChangeOnCrashLoop: true,
    });
    cleanup.push(() => sup.shutdown());
    const ups: Generation[] = [];
    const gaveUp: string[] = [];
    sup.on("up", (gen) => ups.push(gen));
    sup.on("gave-up", (why) => gaveUp.push(why));
    sup.on("down", (_gen, why) => {
      // the replacement's capture finds the command gone
      if (why === "replaced") unlinkSync(server);
    });
    const first = await sup.start();
    sup.settle(first);
    sup.send({ go: true });
    await waitFor(() => sup.checkReplacement(), 10_000, "the execve to be seen");
    await waitFor(() => sup.paused ?? gaveUp[0], 10_000, "supervision to pause or end");
    expect(gaveUp).toEqual([]);
    expect(sup.paused).toMatch(/^the server cannot be started/);
    // paused: no server runs, the replaced one included
    await waitFor(() => exited(first.child.pid!), 10_000, "the replaced server to be stopped");
    writeServer(server);
    const next = await waitFor(() => ups[1], 15_000, "the server started again at the change");
    expect(next.reason).toBe("restart");
    expect(sup.paused).toBeNull();
  },
);
