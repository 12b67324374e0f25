import { type ChildProcess, spawn } from "node:child_process";
import { completeJsonLines } from "./completeLines.js";
import { capture } from "./exitWithOutput.js";
import { hostEnv } from "./gateway.js";
import { CLI, NODE } from "./paths.js";

/**
 * `portcullis approvals --watch --json` on `stateDir` as a long-running process: its stdout (and
 * stderr) as written so far, and its exit code once it ends. `cleanup` kills it if it is still
 * running. `o.json` false: the text watch; `o.env`: added to its environment. `lines()`: the
 * --json lines written whole so far, parsed. A pipe hands stdout over in chunks that can end
 * inside a line (even right after a `}` of a nested object), so the text after the last newline
 * is never parsed: a test reading mid-write saw "Expected ',' or ']'" on a loaded machine.
 */
export function watchApprovalsJson(
  stateDir: string,
  cleanup: (() => Promise<void> | void)[],
  o: { json?: boolean; env?: Record<string, string> } = {},
): {
  child: ChildProcess;
  out: () => string;
  err: () => string;
  lines: <T>() => T[];
  exited: Promise<number | null>;
} {
  const json = o.json === false ? [] : ["--json"];
  const child = spawn(NODE, [CLI, "approvals", "--watch", ...json, "--state-dir", stateDir], {
    env: hostEnv(o.env),
    stdio: ["ignore", "pipe", "pipe"],
  });
  const { out, err } = capture(child);
  // "close", not "exit": exit can come while the end of stderr is still unread in the pipe, and a
  // test that reads err() once exited has resolved would miss its last line
  const exited = new Promise<number | null>((resolve) => child.once("close", (code) => resolve(code)));
  cleanup.push(() => {
    if (child.exitCode === null) child.kill("SIGKILL");
  });
  const lines = <T>() => completeJsonLines<T>(out());
  return { child, out, err, lines, exited };
}
