// A server seen to execve() into other code (a replacement) whose new identity cannot be
// captured: its command is gone (a build caught half-written). A restart or respawn that cannot
// capture pauses supervision until the server's files change, in the edit-build loop; the
// replacement gave up instead, which ends the gateway, and left the replaced process running.
import { chmodSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect, it } from "vitest";
import { alive, removeDir, tempDir, waitFor } from "../helpers/files.js";
import { deferredCleanup, supervisorIn } from "../helpers/supervisor.js";

const defer = deferredCleanup();

/** The server: reads one line, then execs into sleep (other code, same pid). */
function writeServer(file: string): void {
  writeFileSync(file, "#!/bin/sh\nread line\nexec sleep 1000\n");
  chmodSync(file, 0o755);
}

it.skipIf(process.platform !== "linux")(
  "a replacement whose identity cannot be captured pauses supervision as a restart's does, and the next change starts the server",
  async () => {
    const dir = tempDir("pc-replaced-uncapturable-");
    defer(() => removeDir(dir));
    const server = join(dir, "server");
    writeServer(server);
    const { sup, ups } = supervisorIn(
      dir,
      { serverLabel: "uncapturable", command: "./server", args: [] },
      { waitForChangeOnCrashLoop: true },
    );
    defer(() => sup.shutdown());
    const gaveUp: string[] = [];
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
    await waitFor(() => !alive(first.child.pid!), 10_000, "the replaced server to be stopped");
    writeServer(server);
    const next = await waitFor(() => ups[1], 15_000, "the server started again at the change");
    expect(next.reason).toBe("restart");
    expect(sup.paused).toBeNull();
  },
);
