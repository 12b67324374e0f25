// A CLI command stopped at one of its own steps, not at a guessed moment: a preload (written by
// the test, inert in every process but the command it names) stops the command at a filesystem
// call on a path with a given ending, before or after it, and leaves a marker naming its pid; the
// test then SIGKILLs it there, or lets it go on. What the tests of a killed or raced key change
// share (test/keyring/passphrase-change-late-record, passphrase-change-killed, rotate-keys-killed,
// rotate-keys-late-record-blocked).
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
  /** the pid of the command waiting at the gate, or null */
  waiting(): number | null;
  /** lets the command waiting at the gate go on */
  open(): void;
}

/**
 * A preload that holds `portcullis COMMAND` at `fn` (renameSync or rmSync: the path is its second
 * argument or its first) of a path ending in `suffix`, `when` before or after the call, until the
 * gate is opened.
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
    while (!fs.existsSync(dir + "/open")) Atomics.wait(nap, 0, 0, 20);
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
    waiting: () => {
      const marker = readdirSync(dir).find((n) => n.startsWith("waiting-"));
      return marker ? Number(marker.slice("waiting-".length)) : null;
    },
    open: () => writeFileSync(join(dir, "open"), ""),
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
  await waitFor(
    () => gate.waiting() !== null || child.exitCode !== null,
    20_000,
    `${args[0]} to reach its gate`,
  );
  expect(gate.waiting()).toBe(child.pid);
  child.kill("SIGKILL");
  expect(await done).toBe("SIGKILL");
  return child.pid!;
}
