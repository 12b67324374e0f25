// A `portcullis` command started as a process of its own, for the tests that act while it runs
// (kill it at a point, race another command against it): its output as it comes, its exit.
import { type ChildProcess, spawn } from "node:child_process";
import { readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { removeDir, tempDir, waitFor } from "./files.js";
import { hostEnv } from "./gateway.js";
import { CLI, NODE, REPO } from "./paths.js";
import { passphraseEnv } from "./state.js";

export interface CliProcess {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** its exit code (null when ended by a signal), once its output is all read */
  exited: Promise<number | null>;
}

/**
 * Starts `portcullis ARGS` on `stateDir` (PORTCULLIS_HOME, the test passphrase file, then `env`),
 * `input` written to its stdin; a cleanup that SIGKILLs it if still running goes to `onCleanup`.
 */
export function startCli(
  args: string[],
  o: { stateDir: string; env?: Record<string, string>; input?: string; onCleanup: (c: () => void) => void },
): CliProcess {
  const child = spawn(NODE, [CLI, ...args], {
    env: hostEnv({ PORTCULLIS_HOME: o.stateDir, ...passphraseEnv(), ...o.env }),
    stdio: ["pipe", "pipe", "pipe"],
  });
  child.stdin!.on("error", () => {});
  child.stdin!.end(o.input ?? "");
  let out = "";
  let err = "";
  child.stdout!.on("data", (c: Buffer) => {
    out += c.toString();
  });
  child.stderr!.on("data", (c: Buffer) => {
    err += c.toString();
  });
  const exited = new Promise<number | null>((r) => child.once("close", (code) => r(code)));
  o.onCleanup(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  });
  return { child, stdout: () => out, stderr: () => err, exited };
}

/**
 * `portcullis ARGS` started now (startCli); resolves once it finished, or once it says it waits for
 * another vault command to let go of the vault lock.
 */
export async function startedUntilVaultWait(
  args: string[],
  o: { stateDir: string; input?: string; onCleanup: (c: () => void) => void },
): Promise<{ done(): Promise<{ code: number | null; stdout: string; stderr: string }> }> {
  const p = startCli(args, o);
  await waitFor(
    () => p.child.exitCode !== null || p.stderr().includes("waiting for another vault command"),
    20_000,
    `${args.join(" ")} to finish or wait for the vault lock`,
  );
  return { done: async () => ({ code: await p.exited, stdout: p.stdout(), stderr: p.stderr() }) };
}

/**
 * `portcullis unlock --for 10m` on `stateDir` whose new holder waits at its start (before it
 * reads anything: test/fixtures/holder-gate.cjs); resolves once that holder waits there, after
 * unlock opened the secrets. `open()` lets the holder go on.
 */
export async function unlockWithHeldHolder(
  stateDir: string,
  onCleanup: (c: () => void) => void,
  env: Record<string, string> = {},
): Promise<{ unlock: CliProcess; open(): void }> {
  const gateDir = tempDir("portcullis-gate-");
  const gate = join(gateDir, "open");
  onCleanup(() => {
    writeFileSync(gate, "");
    removeDir(gateDir);
  });
  const unlock = startCli(["unlock", "--for", "10m"], {
    stateDir,
    env: {
      ...env,
      NODE_OPTIONS: `--require ${join(REPO, "test", "fixtures", "holder-gate.cjs")}`,
      HOLDER_GATE: gate,
    },
    onCleanup,
  });
  await waitFor(
    () => {
      if (unlock.child.exitCode !== null) throw new Error(`unlock exited: ${unlock.stderr()}`);
      return readdirSync(gateDir).some((n) => n.startsWith("open.waiting-"));
    },
    20_000,
    "the unlock's new holder to wait at its start",
  );
  return { unlock, open: () => writeFileSync(gate, "") };
}
