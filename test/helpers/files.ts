// Small file and timing utilities shared by the helpers and the tests.
import { existsSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { completeJsonLines } from "./completeLines.js";
import { removeAtFileEnd } from "./fileDirs.js";

/**
 * A fresh directory under the OS temp dir (realpath'd names are not guaranteed: use as given),
 * removed when the current test file ends if the test did not remove it itself: a run of the
 * suite left about 1,400 of them behind (a passphrase file per CLI run, a state directory per
 * gateway).
 */
export function tempDir(prefix = "portcullis-test-"): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  removeAtFileEnd(dir);
  return dir;
}

/**
 * Removes `dir` and what it holds. Retried a few times: a process the test started may still write
 * a file into it as it ends (ENOTEMPTY, a loaded machine's CI run).
 */
export function removeDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 50 });
}

/**
 * Parse a JSON-lines file; a missing file is an empty list. Only lines a newline ended: the files
 * read are appended by processes still running (a fixture's record, one line a write), and a read
 * can come between a write's first bytes and its newline.
 */
export function readJsonLines<T = Record<string, unknown>>(path: string): T[] {
  if (!existsSync(path)) return [];
  return completeJsonLines<T>(readFileSync(path, "utf8"));
}

/** Write JSON through a temp file and a rename, so a polling reader never sees half a file. */
export function writeJsonAtomic(path: string, value: unknown): void {
  const tmp = `${path}.${process.pid}.${Date.now()}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(value, null, 2)}\n`);
  renameSync(tmp, path);
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Poll `check` until it returns a truthy value (which is returned), or throw after `ms`. */
export type Truthy<T> = Exclude<T, undefined | null | false | 0 | "">;

export async function waitFor<T>(
  check: () => T | Promise<T>,
  ms = 10_000,
  what = "condition",
): Promise<Truthy<T>> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value) return value as Truthy<T>;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(25);
  }
}

/** The pids of a process's children as Linux lists them, space-separated; "" when unreadable. */
export function childrenOf(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, "utf8").trim();
  } catch {
    return "";
  }
}

/**
 * Whether the process runs: a zombie is not running, also one left to an init that does not reap
 * (a container's), which `kill(pid, 0)` would still find.
 */
export function alive(pid: number): boolean {
  if (process.platform === "linux") {
    try {
      return !/^\S+ \(.*\) [ZX] /s.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
    } catch {
      return false;
    }
  }
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * The first line of a fixture's method log (FIXTURE_METHOD_LOG: one JSON line per method it
 * received, with its pid) naming `method`, once there is one.
 */
export function loggedMethod(
  file: string,
  method: string,
  what: string,
  ms = 20_000,
): Promise<{ method: string; pid: number }> {
  return waitFor(
    () =>
      (existsSync(file) &&
        readJsonLines<{ method: string; pid: number }>(file).find((m) => m.method === method)) ||
      undefined,
    ms,
    what,
  );
}
