// The CLI on a pseudo-terminal standing for the human's (`script`), its stdout sent to a file as
// an agent or a script would read it: for the tests of what `approve` shows on the terminal the
// passphrase is typed on.
import { spawn, spawnSync } from "node:child_process";
import { nextStoredRequest } from "./approvals.js";
import { makeCatalog } from "./catalog.js";
import { exitWithOutput } from "./exitWithOutput.js";
import { removeDir, tempDir } from "./files.js";
import { startGateway } from "./gateway.js";
import { CLI, fixtureCommand } from "./paths.js";
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
  // the screen once script's stdout is read to its end, not at its exit: the last of what the
  // terminal showed can still be in the pipe then
  // (its stdout only: its stderr is read by nobody)
  return exitWithOutput(child, [child.stdout]).then(({ code }) => ({ code, screen }));
}

/**
 * A gateway ("ops") before the catalog fixture whose tool `wipe` was called and waits for a human:
 * the call, its request, and a directory for the CLI's stdout files; ended by `cleanup`.
 */
export async function heldWipe(cleanup: (() => Promise<void> | void)[], prefix: string) {
  const cat = makeCatalog([
    { name: "wipe", description: "Wipes the disk.", inputSchema: { type: "object" } },
  ]);
  const gw = await startGateway({
    args: ["--label", "ops", "--approval-timeout", "60000", "--", ...fixtureCommand("catalog")],
    env: cat.env,
  });
  const dir = tempDir(prefix);
  cleanup.push(
    () => gw.close(),
    () => cat.cleanup(),
    () => removeDir(dir),
  );
  await gw.client.listTools();
  const call = gw.client.callTool({ name: "wipe", arguments: {} }, undefined, { timeout: 90_000 });
  call.catch(() => {}); // awaited by the test
  const req = await nextStoredRequest(gw.stateDir!);
  return { gw, call, req, dir, stateDir: gw.stateDir! };
}
