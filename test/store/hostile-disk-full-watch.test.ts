// `approvals --watch` while the store's disk is full: it closes what a dead gateway left pending
// before each read, best effort, and the file system refuses that write. It lists the request as
// pending and says so in one line (the store's sentence, the request not closed, the fix:
// test/store/hostile-disk-full-lists.test.ts). Freeing space writes nothing to the store, so
// nothing woke the watch: the close was tried again only once the store changed, and the request
// stayed listed as pending meanwhile. What must hold: the line is said once while the disk stays
// full; once space is back the watch closes the request by itself at a tick, says so on stderr
// and in its list (`{"change":"closed","state":"expired"}`), as it does once a held lock is let go
// (test/cli/approvals-watch-close-locked.test.ts). A 4 MiB tmpfs mounted for the test (root only:
// where mount is refused, the test skips and says why), a gateway SIGKILLed with a request pending
// (its -shm left, so the store opens to write and the closing's write is what the disk refuses),
// the watch: real processes throughout.
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { abandonedRequest } from "../helpers/abandonedRequest.js";
import { sleep, waitFor } from "../helpers/files.js";
import { hostEnv, runCli } from "../helpers/gateway.js";
import { CLI, NODE } from "../helpers/paths.js";
import { smallDisk } from "../helpers/smallDisk.js";

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

const FULL = "cannot be written: the disk is full";

it("--watch on a full disk: the not-closed line said once while it is full; space back, the request is closed at a tick and the watch says so", async (ctx) => {
  const disk = smallDisk(cleanup);
  if (typeof disk === "string") return ctx.skip(disk);
  const { stateDir } = disk;
  const request = await abandonedRequest(stateDir, cleanup);
  expect(existsSync(join(stateDir, "portcullis.db-shm"))).toBe(true);
  disk.fill();

  const child: ChildProcess = spawn(NODE, [CLI, "approvals", "--watch", "--json", "--state-dir", stateDir], {
    env: hostEnv(),
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  let err = "";
  child.stdout!.on("data", (c: Buffer) => {
    out += c.toString();
  });
  child.stderr!.on("data", (c: Buffer) => {
    err += c.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  cleanup.push(() => {
    if (child.exitCode === null) child.kill("SIGKILL");
  });
  const lines = () =>
    out
      .split("\n")
      .filter((l) => l.trim() !== "")
      .map((l) => JSON.parse(l) as { change: string; request: unknown; state?: string });

  const pending = await waitFor(
    () => lines().find((l) => l.change === "pending"),
    20_000,
    "the pending line",
  );
  expect((pending.request as { request: string }).request).toBe(request);
  await waitFor(() => err.includes(FULL), 20_000, "the disk-full line");
  expect(err).toMatch(
    new RegExp(`^portcullis approvals: the store ${join(stateDir, "portcullis.db")} ${FULL}\\. `),
  );
  expect(err).toContain(`was not closed: ${request};`);
  // several ticks of the watch (one every 500 ms, each trying the close again) with the disk still
  // full and nothing else changing: the line is not said again, and nothing is closed
  await sleep(2500);
  expect(err.split(FULL)).toHaveLength(2);
  expect(lines().filter((l) => l.change === "closed")).toEqual([]);

  // space back (nothing written to the store: nothing in it changes to wake the watch)
  disk.free();
  const closed = await waitFor(
    () => lines().find((l) => l.change === "closed"),
    20_000,
    "the closed line once there is room",
  );
  expect(closed).toMatchObject({ change: "closed", request, state: "expired" });
  await waitFor(() => err.includes("could be written again"), 20_000, "the closed-after-all line");
  expect(err).toContain(
    `portcullis approvals: the store could be written again: closed 1 abandoned approval request: ${request}\n`,
  );
  expect(err.split(FULL)).toHaveLength(2);
  expect(err).not.toContain("could not close abandoned approval requests");

  child.kill("SIGINT");
  expect(await exited).toBe(0);
  // the closing was written whole: the audit chain verifies
  const verify = await runCli(["audit", "verify"], { stateDir });
  expect(verify.code, verify.stderr).toBe(0);
});
