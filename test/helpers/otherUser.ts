// Read-only files only refuse a user who is not root: root ignores file modes. Under root (CI
// containers often are) a test runs its CLI child as `nobody` instead, after giving that user its
// directories; it is skipped only where that user cannot run the built CLI (a checkout it cannot
// read).
import { spawn, spawnSync } from "node:child_process";
import { chownSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { exitWithOutput } from "./exitWithOutput.js";
import { CLI, NODE } from "./paths.js";

export interface Unprivileged {
  /** spawn options: the other user's, or none when this process is not root */
  spawn: { uid?: number; gid?: number };
}

export const NOBODY = 65534;

/** Where a test can start another user's process (root) and read whose a socket is (Linux's table). */
export const ROOT_ON_LINUX = process.platform === "linux" && process.getuid?.() === 0;

/**
 * What a Node script run as `uid` (null: this process's user) writes on its stdout, read as
 * JSON once it exits: another user's process, for the tests that attack what listens on loopback.
 */
export function scriptOutputAs<T>(uid: number | null, script: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const p = spawn(NODE, ["-e", script], {
      ...(uid === null ? {} : { uid, gid: uid }),
      stdio: ["ignore", "pipe", "inherit"],
    });
    let out = "";
    p.stdout.on("data", (c: Buffer) => {
      out += c.toString();
    });
    p.on("error", reject);
    // read once its stdout has ended, not at its exit: the end of the JSON can still be in the pipe
    void exitWithOutput(p).then(() => {
      try {
        resolve(JSON.parse(out) as T);
      } catch (e) {
        reject(
          new Error(
            `no answer from the process of uid ${uid ?? "(this one)"}: ${JSON.stringify(out)} (${(e as Error).message})`,
          ),
        );
      }
    });
  });
}

/**
 * A user whom file modes bind, owning `dirs` (recursively) when it is another user than this
 * process's; null when there is none that can run the CLI.
 */
export function unprivilegedUser(dirs: string[]): Unprivileged | null {
  if (process.getuid?.() !== 0) return { spawn: {} };
  const spawn = { uid: NOBODY, gid: NOBODY };
  const runs = spawnSync(NODE, [CLI, "--version"], { ...spawn, encoding: "utf8" });
  if (runs.status !== 0) return null;
  for (const dir of dirs) chownTree(dir, NOBODY);
  return { spawn };
}

function chownTree(path: string, id: number): void {
  chownSync(path, id, id);
  if (!statSync(path).isDirectory()) return;
  for (const name of readdirSync(path)) chownTree(join(path, name), id);
}
