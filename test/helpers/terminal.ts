// A portcullis command run at a terminal of its own (a pseudo-terminal made by terminal.py, with
// python3's pty module: Node has none), typed at as a person types: each step waits for a prompt,
// then sends its bytes. For what is read from /dev/tty (a passphrase, a secret's value), which no
// pipe can stand in for.
import { spawn } from "node:child_process";
import { join } from "node:path";
import { assertBuilt, hostEnv } from "./gateway.js";
import { CLI, NODE, REPO } from "./paths.js";

export interface TerminalStep {
  /** text the command shows (a prompt) before the step types */
  await: string;
  /** the bytes typed, as a terminal sends them (a line ends with "\r") */
  send: Buffer;
}

export interface TerminalResult {
  /** what the terminal showed: stdout and stderr both, with "\r\n" line ends */
  output: string;
  /** the exit code; null when the command was still running after `timeoutS` (then killed) */
  code: number | null;
}

/** `portcullis ...args` on a terminal of its own, the steps typed in turn. */
export function runAtTerminal(
  args: string[],
  steps: TerminalStep[],
  options: { env?: Record<string, string>; timeoutS?: number } = {},
): Promise<TerminalResult> {
  assertBuilt();
  const spec = JSON.stringify({
    argv: [NODE, CLI, ...args],
    steps: steps.map((s) => ({ await: s.await, send: s.send.toString("hex") })),
    timeout: options.timeoutS ?? 20,
  });
  // a host's minimal environment: no passphrase file unless `env` gives one
  const env = hostEnv(options.env);
  return new Promise((resolve, reject) => {
    const child = spawn("python3", [join(REPO, "test", "helpers", "terminal.py"), spec], {
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    let err = "";
    child.stdout.on("data", (c: Buffer) => {
      out += c.toString();
    });
    child.stderr.on("data", (c: Buffer) => {
      err += c.toString();
    });
    child.on("error", reject);
    child.on("close", (code) => {
      if (code !== 0) return reject(new Error(`terminal.py exited ${code}: ${err}`));
      resolve(JSON.parse(out) as TerminalResult);
    });
  });
}
