import { type ChildProcess, spawn } from "node:child_process";
import { hostEnv } from "./gateway.js";
import { CLI, NODE } from "./paths.js";

/**
 * `portcullis approvals --watch --json` on `stateDir` as a long-running process: its stdout (and
 * stderr) as written so far, and its exit code once it ends. `cleanup` kills it if it is still
 * running. `o.json` false: the text watch; `o.env`: added to its environment.
 */
export function watchApprovalsJson(
  stateDir: string,
  cleanup: (() => Promise<void> | void)[],
  o: { json?: boolean; env?: Record<string, string> } = {},
): { child: ChildProcess; out: () => string; err: () => string; exited: Promise<number | null> } {
  const json = o.json === false ? [] : ["--json"];
  const child = spawn(NODE, [CLI, "approvals", "--watch", ...json, "--state-dir", stateDir], {
    env: hostEnv(o.env),
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
  // "close", not "exit": exit can come while the end of stderr is still unread in the pipe, and a
  // test that reads err() once exited has resolved would miss its last line
  const exited = new Promise<number | null>((resolve) => child.once("close", (code) => resolve(code)));
  cleanup.push(() => {
    if (child.exitCode === null) child.kill("SIGKILL");
  });
  return { child, out: () => out, err: () => err, exited };
}
