// Two `portcullis passphrase` runs at once (from the same passphrase, to two new ones) that both find
// the keyring's lock left by a killed command (keyring.json.upgrade.lock naming an owner that is
// gone). Each read the dead owner, then removed "the lock" and took it: the second to act removed
// the lock the first had just taken, and both went on under "one" lock, each renamed its file over
// keyring.json and said "Passphrase changed" (exit 0); the keyring then opened only with the
// second's passphrase, the first's change lost. What must hold: as with a live lock, one change is
// made and the other finds its current passphrase no longer opens the keyring (exit 1, nothing
// changed), and the keyring opens with exactly the passphrase of the change that said so.
//
// The interleaving is made, not timed: a preload (written by the test, inert in every process but
// `passphrase`) holds each command right after its first read of the lock file (the dead owner
// read), marks it, and holds it again just before its rename over keyring.json; it also marks a
// command whose exclusive creation of the lock fails a second time (it waits on a live owner).
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { unlockKeyring } from "../../src/keyring/keyring.js";
import { WrongPassphraseError } from "../../src/keyring/keyringErrors.js";
import { removeDir, tempDir, waitFor } from "../helpers/files.js";
import { hostEnv } from "../helpers/gateway.js";
import { passphraseFile } from "../helpers/passphraseChange.js";
import { CLI, NODE } from "../helpers/paths.js";
import { newStateDir, passphraseEnv, TEST_PASSPHRASE } from "../helpers/state.js";

const A = "the first new passphrase";
const B = "the second new passphrase";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

function gates() {
  const dir = tempDir("portcullis-takeover-gate-");
  cleanup.push(() => removeDir(dir));
  const preload = join(dir, "gate.cjs");
  writeFileSync(
    preload,
    `const fs = require("node:fs");
const path = require("node:path");
const dir = process.env.TAKEOVER_GATE_DIR;
if (dir && process.argv[2] === "passphrase") {
  const hold = (name) => {
    fs.writeFileSync(path.join(dir, name + "-" + process.pid), "");
    const nap = new Int32Array(new SharedArrayBuffer(4));
    while (!fs.existsSync(path.join(dir, "open-" + name + "-" + process.pid))) Atomics.wait(nap, 0, 0, 20);
  };
  const isLock = (p) => String(p).endsWith("keyring.json.upgrade.lock");
  const read = fs.readFileSync;
  let readOnce = false;
  fs.readFileSync = function (p) {
    const r = read.apply(this, arguments);
    if (isLock(p) && !readOnce) {
      readOnce = true;
      hold("read");
    }
    return r;
  };
  const open = fs.openSync;
  let refused = 0;
  fs.openSync = function (p, flags) {
    try {
      return open.apply(this, arguments);
    } catch (e) {
      if (isLock(p) && flags === "wx" && e.code === "EEXIST" && ++refused === 2)
        fs.writeFileSync(path.join(dir, "waits-" + process.pid), "");
      throw e;
    }
  };
  const rename = fs.renameSync;
  fs.renameSync = function (from, to) {
    if (String(to).endsWith("keyring.json")) hold("rename");
    return rename.apply(this, arguments);
  };
  require("node:module").syncBuiltinESMExports();
}
`,
  );
  return {
    env: { NODE_OPTIONS: `--require ${preload}`, TAKEOVER_GATE_DIR: dir },
    at: (name: string, pid: number) => existsSync(join(dir, `${name}-${pid}`)),
    open: (name: string, pid: number) => writeFileSync(join(dir, `open-${name}-${pid}`), ""),
  };
}

interface Started {
  child: ChildProcess;
  pid: number;
  done: Promise<{ code: number | null; stderr: string }>;
}

function changeTo(stateDir: string, next: string, env: Record<string, string>): Started {
  const child = spawn(NODE, [CLI, "passphrase", "--json"], {
    env: hostEnv({
      PORTCULLIS_HOME: stateDir,
      ...passphraseEnv(),
      PORTCULLIS_PASSPHRASE_FILE: passphraseFile(TEST_PASSPHRASE),
      PORTCULLIS_NEW_PASSPHRASE_FILE: passphraseFile(next),
      ...env,
    }),
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr!.on("data", (c: Buffer) => {
    stderr += c.toString();
  });
  const done = new Promise<{ code: number | null; stderr: string }>((resolve) =>
    child.on("close", (code) => resolve({ code, stderr })),
  );
  cleanup.push(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    await done;
  });
  return { child, pid: child.pid!, done };
}

async function opensWith(stateDir: string, candidates: string[]): Promise<string[]> {
  const opened: string[] = [];
  for (const p of candidates) {
    try {
      (await unlockKeyring(stateDir, p)).dataKey.fill(0);
      opened.push(p);
    } catch (e) {
      if (!(e instanceof WrongPassphraseError)) throw e;
    }
  }
  return opened;
}

describe("two passphrase changes that both find a dead command's lock", () => {
  it("one change is made, the other exits 1; the keyring opens with exactly the one made", async () => {
    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    // the lock of a command that is gone (this pid, another start time: not this process)
    writeFileSync(
      join(stateDir, "keyring.json.upgrade.lock"),
      JSON.stringify({ pid: process.pid, startTime: "a start time no process has" }),
      { mode: 0o600 },
    );
    const g = gates();
    const a = changeTo(stateDir, A, g.env);
    const b = changeTo(stateDir, B, g.env);
    const until = (what: string, ok: () => boolean) =>
      waitFor(
        () => ok() || (a.child.exitCode !== null || b.child.exitCode !== null ? "exited" : null),
        20_000,
        what,
      );
    // both have read the dead owner
    await until("both commands reading the dead lock", () => g.at("read", a.pid) && g.at("read", b.pid));
    expect([a.child.exitCode, b.child.exitCode]).toEqual([null, null]);
    // the first takes the lock over and stops before its rename, holding it
    g.open("read", a.pid);
    await until("the first at its rename", () => g.at("rename", a.pid));
    // the second goes on from its stale read: it must wait for the first (not take the lock too)
    g.open("read", b.pid);
    await until("the second waiting, or at its rename", () => g.at("waits", b.pid) || g.at("rename", b.pid));
    const bothHeld = g.at("rename", b.pid);
    g.open("rename", a.pid);
    g.open("rename", b.pid);
    const [ra, rb] = await Promise.all([a.done, b.done]);

    expect(bothHeld).toBe(false);
    expect(ra.code, ra.stderr).toBe(0);
    expect(rb.stderr).toContain("wrong passphrase");
    expect(rb.code, rb.stderr).toBe(1);
    expect(await opensWith(stateDir, [TEST_PASSPHRASE, A, B])).toEqual([A]);
    expect(existsSync(join(stateDir, "keyring.json.upgrade.lock"))).toBe(false);
    expect(existsSync(join(stateDir, "keyring.json.upgrade.lock.takeover"))).toBe(false);
  }, 60_000);
});
