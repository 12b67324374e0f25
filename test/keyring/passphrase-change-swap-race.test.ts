// A same-user agent that replaces keyring.json with another `init`'s keyring (made under the same
// passphrase, as a human who reuses one makes it) while `portcullis passphrase` runs: after the
// command checked the keyring (its approver key against the pin) and before it reads it again under
// its lock to rewrap it. A swap before the check is refused (test/cli/passphrase-change-refusals);
// this one was rewrapped under the new passphrase, renamed into place and reported "Passphrase
// changed … (the same keys as before)" with the other keyring's key ids, exit 0. What must hold: the
// keyring read under the lock is checked there too: exit 1, "nothing was changed", the swapped file
// left byte for byte as the agent wrote it (not rewrapped), no record of a change.
//
// The swap is made at the command's own step, not timed: a preload (written by the test, inert in
// every process but `passphrase`) holds the command at its exclusive creation of the keyring's
// lock and leaves a marker; the test swaps the file, then opens the gate.
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { removeDir, tempDir, waitFor } from "../helpers/files.js";
import { hostEnv, runCli } from "../helpers/gateway.js";
import { keyringText, passphraseFile } from "../helpers/passphraseChange.js";
import { CLI, NODE } from "../helpers/paths.js";
import { newStateDir, passphraseEnv, TEST_PASSPHRASE } from "../helpers/state.js";

const NEXT = "a new passphrase for the swapped keyring";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

function lockGate() {
  const dir = tempDir("portcullis-swap-lock-gate-");
  cleanup.push(() => removeDir(dir));
  const preload = join(dir, "gate.cjs");
  writeFileSync(
    preload,
    `const fs = require("node:fs");
const path = require("node:path");
const dir = process.env.SWAP_LOCK_GATE_DIR;
if (dir && process.argv[2] === "passphrase") {
  const open = fs.openSync;
  let held = false;
  fs.openSync = function (p, flags) {
    if (!held && String(p).endsWith("keyring.json.upgrade.lock") && flags === "wx") {
      held = true;
      fs.writeFileSync(path.join(dir, "waiting"), "");
      const nap = new Int32Array(new SharedArrayBuffer(4));
      while (!fs.existsSync(path.join(dir, "open"))) Atomics.wait(nap, 0, 0, 20);
    }
    return open.apply(this, arguments);
  };
  require("node:module").syncBuiltinESMExports();
}
`,
  );
  return {
    env: { NODE_OPTIONS: `--require ${preload}`, SWAP_LOCK_GATE_DIR: dir },
    waiting: () => existsSync(join(dir, "waiting")),
    open: () => writeFileSync(join(dir, "open"), ""),
  };
}

describe("keyring.json swapped while portcullis passphrase runs", () => {
  it("the keyring read under the lock is checked again: exit 1, the swapped file not rewrapped", async () => {
    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    const other = join(tempDir("portcullis-other-init-"), "state");
    cleanup.push(() => removeDir(join(other, "..")));
    const init = await runCli(["init"], { stateDir: other, env: passphraseEnv() });
    expect(init.code, init.stderr).toBe(0);
    const swapped = readFileSync(join(other, "keyring.json"), "utf8");

    const g = lockGate();
    const child: ChildProcess = spawn(NODE, [CLI, "passphrase", "--json"], {
      env: hostEnv({
        PORTCULLIS_HOME: stateDir,
        ...passphraseEnv(),
        PORTCULLIS_PASSPHRASE_FILE: passphraseFile(TEST_PASSPHRASE),
        PORTCULLIS_NEW_PASSPHRASE_FILE: passphraseFile(NEXT),
        ...g.env,
      }),
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout!.on("data", (c: Buffer) => {
      stdout += c.toString();
    });
    child.stderr!.on("data", (c: Buffer) => {
      stderr += c.toString();
    });
    const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
    cleanup.push(async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await exited;
    });

    await waitFor(() => g.waiting() || (child.exitCode !== null ? "exited" : null), 20_000, "the lock");
    expect(child.exitCode, stderr).toBeNull();
    // the agent's swap: checked keyring out, another init's (same passphrase) in
    writeFileSync(join(stateDir, "keyring.json"), swapped, { mode: 0o600 });
    g.open();
    const code = await exited;

    expect(stdout).not.toContain('"changed": true');
    expect(stderr).toContain("nothing was changed");
    expect(code, stderr).toBe(1);
    expect(keyringText(stateDir)).toBe(swapped);
    expect(stderr).toContain("was replaced while the command ran");
    // no record of a change: the chain holds the pin alone
    const verify = await runCli(["audit", "verify", "--json"], { stateDir });
    expect(JSON.parse(verify.stdout).records).toBe(1);
  }, 60_000);
});
