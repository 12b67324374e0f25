// `approvals --watch --json` over a store it cannot write (a read-only file, a full disk, a write
// lock another process holds) holding one request a dead gateway left pending
// (abandonedRequest.ts): what the watch must do whatever the cause (test/store/read-only-watch,
// test/store/hostile-disk-full-watch, test/cli/approvals-watch-close-locked).
// It lists the request as pending and says once, on stderr, what it could not close; while the
// store stays unwritable nothing is closed and the line is not said again; once it can be
// written the watch closes the request by itself, says so in its list and on stderr, ends 0 on
// SIGINT, and the closing was written whole (the audit chain verifies).
import { type ChildProcess, type SpawnOptions, spawn } from "node:child_process";
import { expect } from "vitest";
import { completeJsonLines } from "./completeLines.js";
import { exitWithOutput } from "./exitWithOutput.js";
import { sleep, waitFor } from "./files.js";
import { hostEnv, runCli } from "./gateway.js";
import { CLI, NODE } from "./paths.js";

/** The line a sweep says when closing failed for another cause than a refused write (a held lock). */
export const COULD_NOT_CLOSE = "could not close abandoned approval requests";

type Cleanup = (() => Promise<void> | void)[];

interface WatchLine {
  change: string;
  request: unknown;
  state?: string;
}

export interface StoreWatch {
  stateDir: string;
  child: ChildProcess;
  err(): string;
  lines(): WatchLine[];
  /** its exit code, once its pipes were read to their end too (the exit can come before) */
  exited: Promise<number | null>;
}

/** The watch started on `stateDir` (its env added to the host's; `as`: spawn options, another user's). */
export function watchStore(
  stateDir: string,
  cleanup: Cleanup,
  o: { env?: Record<string, string>; as?: Pick<SpawnOptions, "uid" | "gid"> } = {},
): StoreWatch {
  const child: ChildProcess = spawn(NODE, [CLI, "approvals", "--watch", "--json", "--state-dir", stateDir], {
    env: hostEnv(o.env),
    stdio: ["ignore", "pipe", "pipe"],
    ...o.as,
  });
  let out = "";
  let err = "";
  // decoded as streams: a chunk can end inside a character of several bytes
  child.stdout!.setEncoding("utf8").on("data", (c: string) => {
    out += c;
  });
  child.stderr!.setEncoding("utf8").on("data", (c: string) => {
    err += c;
  });
  // its exit code once its stdout and stderr were read to their end: err() is read right after
  const exited = exitWithOutput(child).then(({ code }) => code);
  cleanup.push(() => {
    if (child.exitCode === null) child.kill("SIGKILL");
  });
  // only lines written whole: a chunk can end inside one, even right after a nested `}`
  const lines = () => completeJsonLines<WatchLine>(out);
  return { stateDir, child, err: () => err, lines, exited };
}

/** Waits for `request` listed as pending and for the line that says `cannot`, which names it not closed. */
export async function listedButNotClosed(w: StoreWatch, request: string, cannot: string): Promise<void> {
  const pending = await waitFor(
    () => w.lines().find((l) => l.change === "pending"),
    20_000,
    "the pending line",
  );
  expect((pending.request as { request: string }).request).toBe(request);
  await waitFor(() => w.err().includes(cannot), 20_000, `the line that says "${cannot}"`);
  expect(w.err()).toContain(`was not closed: ${request};`);
}

/** After `ms` more (retries of the watch) with the store still unwritable: nothing closed, the line said once. */
export async function stillSaidOnce(w: StoreWatch, cannot: string, ms: number): Promise<void> {
  await sleep(ms);
  expect(w.err().split(cannot)).toHaveLength(2);
  expect(w.lines().filter((l) => l.change === "closed")).toEqual([]);
}

/**
 * Call once the store can be written again (nothing written to it: nothing in it changes to wake
 * the watch): the request closed in the list and on stderr, the line not said again; then the
 * watch is ended (SIGINT, exit 0) and the audit chain verified.
 */
export async function closedOnceWritable(w: StoreWatch, request: string, cannot: string): Promise<void> {
  const closed = await waitFor(
    () => w.lines().find((l) => l.change === "closed"),
    20_000,
    "the closed line once the store can be written",
  );
  expect(closed).toMatchObject({ change: "closed", request, state: "expired" });
  await waitFor(() => w.err().includes("could be written again"), 20_000, "the closed-after-all line");
  expect(w.err()).toContain(
    `portcullis approvals: the store could be written again: closed 1 abandoned approval request: ${request}\n`,
  );
  expect(w.err().split(cannot)).toHaveLength(2);
  // nor any other not-closed line beside the one that names the cause (for a held lock, the
  // store's general line is that one)
  if (!cannot.includes(COULD_NOT_CLOSE)) expect(w.err()).not.toContain(COULD_NOT_CLOSE);

  w.child.kill("SIGINT");
  expect(await w.exited).toBe(0);
  // the closing was written whole: the audit chain verifies
  const verify = await runCli(["audit", "verify"], { stateDir: w.stateDir });
  expect(verify.code, verify.stderr).toBe(0);
}
