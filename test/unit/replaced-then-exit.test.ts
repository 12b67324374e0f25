// A server seen to execve() into other code (a replacement: a new epoch under the same pid) that
// exits while the replacement's identity is still being captured. Its exit came while the
// supervisor was between epochs, and was dropped: no respawn, no crash counted, and the gateway
// held every later call for a server that was gone for good.
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect, it } from "vitest";
import { POOL_MIN_FILES } from "../../src/identity/hash.js";
import { alive, removeDir, tempDir, waitFor } from "../helpers/files.js";
import { deferredCleanup, supervisorIn } from "../helpers/supervisor.js";

const defer = deferredCleanup();

it.skipIf(process.platform !== "linux")(
  "a replaced server that exits while the replacement is captured is respawned",
  async () => {
    const dir = tempDir("pc-replaced-exit-");
    defer(() => removeDir(dir));
    writeFileSync(join(dir, "server.sh"), "read line\nexec sleep 1000\n");
    mkdirSync(join(dir, "data"));
    writeFileSync(join(dir, "data", "0.txt"), "0\n");
    const { sup, ups } = supervisorIn(dir, {
      serverLabel: "replaced",
      command: "sh",
      args: ["server.sh"],
      include: ["data/**"],
    });
    defer(() => sup.shutdown());
    sup.on("down", (gen, why) => {
      if (why !== "replaced") return;
      // The replaced process exits as its new identity is captured: its exit is reaped during
      // the capture (files the capture has to hash afresh, enough for its worker pool, keep it
      // waiting on the pool's threads while the exit is reaped).
      process.kill(gen.child.pid!, "SIGKILL");
      const until = Date.now() + 5_000;
      while (alive(gen.child.pid!) && Date.now() < until) execFileSync("sleep", ["0.01"]);
      for (let i = 1; i <= POOL_MIN_FILES; i++) writeFileSync(join(dir, "data", `${i}.txt`), `${i}\n`);
    });
    const first = await sup.start();
    sup.settle(first);
    sup.send({ go: true }); // sh reads its line, then execs into sleep: other code, same pid
    await waitFor(() => sup.checkReplacement(), 10_000, "the execve to be seen");
    // the server is gone: it is started again, a new process
    const respawned = await waitFor(
      () => ups.find((g) => g.reason === "respawn"),
      10_000,
      "the server to be respawned",
    );
    expect(respawned.child.pid).not.toBe(first.child.pid);
    expect(sup.current?.alive).toBe(true);
  },
);
