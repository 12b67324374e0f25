import { type ChildProcess, spawn } from "node:child_process";
import { hostEnv } from "./gateway.js";
import { CLI, NODE } from "./paths.js";

/**
 * `portcullis approvals --watch --json` on `stateDir` as a long-running process: its stdout as
 * written so far, and its exit code once it ends. `cleanup` kills it if it is still running.
 */
export function watchApprovalsJson(
  stateDir: string,
  cleanup: (() => Promise<void> | void)[],
): { child: ChildProcess; out: () => string; exited: Promise<number | null> } {
  const child = spawn(NODE, [CLI, "approvals", "--watch", "--json", "--state-dir", stateDir], {
    env: hostEnv(),
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout!.on("data", (c: Buffer) => {
    out += c.toString();
  });
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  cleanup.push(() => {
    if (child.exitCode === null) child.kill("SIGKILL");
  });
  return { child, out: () => out, exited };
}
