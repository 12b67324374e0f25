// A portcullis command run as an agent's subprocess or a CI job runs it: a session of its own
// (no controlling terminal to ask a passphrase on) and no passphrase file in its environment.
import { spawn } from "node:child_process";
import { CLI, NODE } from "./paths.js";

export interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * `portcullis ...args` with no terminal, in `base` less its PORTCULLIS_PASSPHRASE_FILE, then
 * `env` (where a test may give a passphrase file on purpose).
 */
export function runWithoutTerminal(
  args: string[],
  options: {
    base: Record<string, string | undefined>;
    env?: Record<string, string | undefined>;
    cwd?: string;
  },
): Promise<Ran> {
  const { base, env = {}, cwd } = options;
  const childEnv = { ...base };
  delete childEnv.PORTCULLIS_PASSPHRASE_FILE;
  Object.assign(childEnv, env);
  const child = spawn(NODE, [CLI, ...args], {
    cwd,
    env: childEnv,
    stdio: ["ignore", "pipe", "pipe"],
    detached: true, // a new session: no controlling terminal
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d: Buffer) => {
    stdout += d.toString();
  });
  child.stderr.on("data", (d: Buffer) => {
    stderr += d.toString();
  });
  return new Promise((resolve) => child.on("close", (code) => resolve({ code, stdout, stderr })));
}
