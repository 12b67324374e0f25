// The CLI on a pseudo-terminal standing for the human's (`script`), its stdout sent to a file as
// an agent or a script would read it: for the tests of what `approve` shows on the terminal the
// passphrase is typed on.
import { spawn, spawnSync } from "node:child_process";
import { CLI } from "./paths.js";
import { TEST_PASSPHRASE } from "./state.js";

/** Whether `script` (util-linux) can run a command on a pseudo-terminal here. */
export const hasScript = spawnSync("script", ["--version"]).status === 0 && process.platform === "linux";

/**
 * `portcullis ARGS > OUT` on a pseudo-terminal: `choice`, when given, typed at approve's question
 * ("[q] leave it pending"), then the passphrase after its prompt. What the terminal showed, and
 * the exit code.
 */
export function cliOnTerminal(
  args: string[],
  out: string,
  choice?: string,
): Promise<{ code: number | null; screen: string }> {
  const command = `${[process.execPath, CLI, ...args].map((a) => `'${a}'`).join(" ")} > '${out}'`;
  const env: Record<string, string | undefined> = { ...process.env, PORTCULLIS_INSECURE_TEST_KDF: "1" };
  delete env.PORTCULLIS_PASSPHRASE_FILE;
  const child = spawn("script", ["-qec", command, "/dev/null"], { env });
  let screen = "";
  let chose = choice === undefined;
  let typed = false;
  child.stdout.setEncoding("utf8").on("data", (d: string) => {
    screen += d;
    if (!chose && /\[q\] leave it pending: /.test(screen)) {
      chose = true;
      child.stdin.write(`${choice}\r`);
    }
    if (!typed && /passphrase to approve[^\n]*: /i.test(screen)) {
      typed = true;
      setTimeout(() => child.stdin.write(`${TEST_PASSPHRASE}\r`), 50); // after raw mode is on
    }
  });
  return new Promise((resolve) => child.on("exit", (code) => resolve({ code, screen })));
}
