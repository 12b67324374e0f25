// `approvals --watch` over a store it could open only to read from the start (here a read-only
// file): its connection can never write, so what a dead gateway left pending was never closed for
// as long as the watch ran, whatever happened to the file (the retry of a held lock or a full
// disk, test/store/hostile-disk-full-watch.test.ts, is of a connection that can write). What must
// hold: the watch says once what it cannot do and why (the store's sentence, the request not
// closed, that it tries again, the fix); while the file stays read-only nothing is closed and the
// line is not said again; once the file is writable the watch closes the request by itself, says
// so on stderr and in its list. A gateway SIGKILLed with a request pending, the watch run as a
// user whom file modes bind (test/helpers/otherUser.ts): real processes throughout.
import { type ChildProcess, spawn } from "node:child_process";
import { chmodSync } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { abandonedRequest } from "../helpers/abandonedRequest.js";
import { sleep, waitFor } from "../helpers/files.js";
import { hostEnv, runCli } from "../helpers/gateway.js";
import { unprivilegedUser } from "../helpers/otherUser.js";
import { CLI, NODE } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

const READ_ONLY = "cannot be written (the file, or its directory, is read-only)";

it("--watch over a store read-only from the start: says once what it cannot close and why; the file writable again, the request is closed and the watch says so", async (ctx) => {
  const stateDir = newStateDir();
  const request = await abandonedRequest(stateDir, cleanup);
  const user = unprivilegedUser([stateDir]);
  if (!user) return ctx.skip("no user whom file modes bind can run the built CLI here");
  const db = join(stateDir, "portcullis.db");
  chmodSync(db, 0o444);
  cleanup.push(() => chmodSync(db, 0o600));

  const child: ChildProcess = spawn(NODE, [CLI, "approvals", "--watch", "--json", "--state-dir", stateDir], {
    env: hostEnv({ HOME: stateDir }),
    stdio: ["ignore", "pipe", "pipe"],
    ...user.spawn,
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
  await waitFor(() => err.includes(READ_ONLY), 20_000, "the read-only line");
  expect(err.startsWith(`portcullis approvals: the store ${db} ${READ_ONLY}.`)).toBe(true);
  expect(err).toContain(`the store ${db} ${READ_ONLY}. Read as it is, without writing;`);
  expect(err).toContain(`was not closed: ${request};`);
  expect(err).toContain(
    "this watch closes none while its store cannot be written, and tries again every 5 s: it closes them once the store can be written, and says so",
  );
  expect(err).toContain(
    `To fix it: make it and its directory writable by their owner (chmod u+w ${db} ${stateDir};`,
  );
  // past a retry (every 5 s) with the file still read-only: nothing closed, the line said once
  await sleep(6000);
  expect(err.split(READ_ONLY)).toHaveLength(2);
  expect(lines().filter((l) => l.change === "closed")).toEqual([]);

  // the file writable again (nothing written to the store: nothing in it changes to wake the watch)
  chmodSync(db, 0o644);
  const closed = await waitFor(
    () => lines().find((l) => l.change === "closed"),
    20_000,
    "the closed line once the file can be written",
  );
  expect(closed).toMatchObject({ change: "closed", request, state: "expired" });
  await waitFor(() => err.includes("could be written again"), 20_000, "the closed-after-all line");
  expect(err).toContain(
    `portcullis approvals: the store could be written again: closed 1 abandoned approval request: ${request}\n`,
  );
  expect(err.split(READ_ONLY)).toHaveLength(2);
  expect(err).not.toContain("could not close abandoned approval requests");

  child.kill("SIGINT");
  expect(await exited).toBe(0);
  // the closing was written whole: the audit chain verifies
  const verify = await runCli(["audit", "verify"], { stateDir });
  expect(verify.code, verify.stderr).toBe(0);
});
