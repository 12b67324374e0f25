// A CLI command SIGKILLed at one of its own steps, not at a guessed moment: a preload (written by
// the test, inert in every process but the command it names) stops the command at a filesystem
// call on a path with a given ending, before or after it, and leaves a marker naming its pid; the
// test then kills it there. What the tests of a killed key change share
// (test/keyring/passphrase-change-late-record, rotate-keys-killed, rotate-keys-late-record-blocked).
import { type ChildProcess, spawn } from "node:child_process";
import { readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "vitest";
import { removeDir, tempDir, waitFor } from "./files.js";
import { hostEnv } from "./gateway.js";
import { CLI, NODE } from "./paths.js";

type OnCleanup = (c: () => Promise<void> | void) => void;

export interface FsGate {
  /** the env that loads the preload */
  env: Record<string, string>;
  /** whether the command waits at the gate */
  waiting(): boolean;
}

/**
 * A preload that holds `portcullis COMMAND` for good at `fn` (renameSync or rmSync: the path is
 * its second argument or its first) of a path ending in `suffix`, `when` before or after the call.
 */
export function fsGate(
  onCleanup: OnCleanup,
  command: string,
  fn: "renameSync" | "rmSync",
  suffix: string,
  when: "before" | "after",
): FsGate {
  const dir = tempDir("portcullis-kill-gate-");
  onCleanup(() => removeDir(dir));
  const preload = join(dir, "gate.cjs");
  writeFileSync(
    preload,
    `const fs = require("node:fs");
const dir = ${JSON.stringify(dir)};
if (process.argv[2] === ${JSON.stringify(command)}) {
  const real = fs.${fn};
  const hold = () => {
    fs.writeFileSync(dir + "/waiting-" + process.pid, "");
    const nap = new Int32Array(new SharedArrayBuffer(4));
    for (;;) Atomics.wait(nap, 0, 0, 1000);
  };
  fs.${fn} = function () {
    const ours = String(arguments[${fn === "renameSync" ? 1 : 0}]).endsWith(${JSON.stringify(suffix)});
    if (ours && ${JSON.stringify(when)} === "before") hold();
    const r = real.apply(this, arguments);
    if (ours && ${JSON.stringify(when)} === "after") hold();
    return r;
  };
  require("node:module").syncBuiltinESMExports();
}
`,
  );
  return {
    env: { NODE_OPTIONS: `--require ${preload}` },
    waiting: () => readdirSync(dir).some((n) => n.startsWith("waiting-")),
  };
}

/**
 * `portcullis ...args` on `stateDir` with `env` (the passphrases it takes), stopped at `gate` and
 * SIGKILLed there; its pid.
 */
export async function killedAtGate(
  onCleanup: OnCleanup,
  stateDir: string,
  args: string[],
  env: Record<string, string>,
  gate: FsGate,
): Promise<number> {
  const child: ChildProcess = spawn(NODE, [CLI, ...args], {
    env: hostEnv({ PORTCULLIS_HOME: stateDir, ...env, ...gate.env }),
    stdio: ["ignore", "ignore", "pipe"],
  });
  const done = new Promise<NodeJS.Signals | null>((resolve) =>
    child.on("close", (_c, signal) => resolve(signal)),
  );
  onCleanup(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    await done;
  });
  await waitFor(() => gate.waiting() || child.exitCode !== null, 20_000, `${args[0]} to reach its gate`);
  expect(gate.waiting()).toBe(true);
  child.kill("SIGKILL");
  expect(await done).toBe("SIGKILL");
  return child.pid!;
}
