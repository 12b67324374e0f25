// `portcullis passphrase` killed with SIGKILL inside its write of keyring.json, and run twice at
// once, or beside an old keyring's upgrade (src/keyring/passphraseChange.ts, changePassphrase): keyring.json
// is always whole, opened by exactly one passphrase (the one before, or the one after), with the
// same keys; no change is written over another.
//
// The kill points are made observable, not guessed: a preload (written by the test, inert in every
// process but the one it names) stops the command at its rename of the temporary file over
// keyring.json (`before`: the new file written and fsynced, not yet renamed; `after`: renamed, the
// directory not yet fsynced, the lock still held, nothing recorded) and leaves a marker with its
// pid; the test then SIGKILLs it, or lets it go on by opening the gate (test/helpers/killedAtGate.ts).
//
// What each would catch: a killed change's temporary file (the keys under the passphrase it was
// given) left for good once the next change has run; a keyring written in place (the `before` kill would leave it cut short,
// or already the new one); a rewrite that made new keys; a lock left by a killed change that the
// next change waits out instead of taking over; two changes at once both reported done with one
// lost (without the lock, or without reading and opening the file again under it, the second
// renames its own file over the first's: both exit 0, and one of the two "new" passphrases opens
// nothing); an old keyring's upgrade (approver key added) lost under a change, or the reverse; a
// change that, finding the upgrade's key already renamed into place, does not wait for the
// upgrade's lock (changePassphrase's own lock); a killed upgrade's temporary file left for good by
// the next upgrade, or not named by `portcullis doctor` meanwhile.
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { unlockKeyring } from "../../src/keyring/keyring.js";
import { WrongPassphraseError } from "../../src/keyring/keyringErrors.js";
import { alive, removeDir, tempDir, waitFor } from "../helpers/files.js";
import { hostEnv, runCli } from "../helpers/gateway.js";
import { type FsGate, fsGate } from "../helpers/killedAtGate.js";
import { keyringText } from "../helpers/passphraseChange.js";
import { CLI, NODE } from "../helpers/paths.js";
import { newKeyringOnlyStateDir, newStateDir, passphraseEnv, TEST_PASSPHRASE } from "../helpers/state.js";

const A = "the first new passphrase";
const B = "the second new passphrase";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

function secretFile(text: string): string {
  const dir = tempDir("portcullis-newpass-");
  cleanup.push(() => removeDir(dir));
  const file = join(dir, "passphrase");
  writeFileSync(file, `${text}\n`, { mode: 0o600 });
  return file;
}

/** Which of `candidates` opens the state directory's keyring (every one is tried). */
async function opensWith(stateDir: string, candidates: string[]): Promise<string[]> {
  const opened: string[] = [];
  for (const p of candidates) {
    try {
      const k = await unlockKeyring(stateDir, p);
      k.dataKey.fill(0);
      opened.push(p);
    } catch (e) {
      if (!(e instanceof WrongPassphraseError)) throw e;
    }
  }
  return opened;
}

/** The key ids and public halves: what must never change. */
function keysOf(stateDir: string): unknown {
  const k = JSON.parse(readFileSync(join(stateDir, "keyring.json"), "utf8")) as Record<string, unknown>;
  return { audit: k.audit, approver: k.approver };
}

/** A state directory whose keyring is one made before decisions were signed (no approver key). */
function oldKeyringStateDir(): string {
  const stateDir = newKeyringOnlyStateDir();
  cleanup.push(() => removeDir(stateDir));
  const path = join(stateDir, "keyring.json");
  const old = JSON.parse(readFileSync(path, "utf8")) as Record<string, unknown>;
  delete old.approver;
  writeFileSync(path, `${JSON.stringify(old, null, 2)}\n`, { mode: 0o600 });
  return stateDir;
}

/** A preload that stops `portcullis CMD` at its rename over keyring.json (see the header). */
function renameGate(command: "passphrase" | "audit", when: "before" | "after"): FsGate {
  return fsGate((c) => cleanup.push(c), command, "renameSync", "keyring.json", when);
}

/**
 * A preload that leaves a marker once `portcullis passphrase` tries to take the keyring's lock
 * (its current passphrase checked, its new one read): `tried()` says whether it has.
 */
function lockWatch(): { env: Record<string, string>; tried(): boolean } {
  const dir = tempDir("portcullis-lock-watch-");
  cleanup.push(() => removeDir(dir));
  const marker = join(dir, "tried");
  const preload = join(dir, "watch.cjs");
  writeFileSync(
    preload,
    `const fs = require("node:fs");
const marker = process.env.KEYRING_LOCK_TRIED;
if (marker && process.argv[2] === "passphrase") {
  const open = fs.openSync;
  fs.openSync = function (path, flags) {
    if (String(path).endsWith("keyring.json.upgrade.lock") && flags === "wx") fs.writeFileSync(marker, "");
    return open.apply(this, arguments);
  };
  require("node:module").syncBuiltinESMExports();
}
`,
  );
  return {
    env: { NODE_OPTIONS: `--require ${preload}`, KEYRING_LOCK_TRIED: marker },
    tried: () => existsSync(marker),
  };
}

interface Started {
  child: ChildProcess;
  done: Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>;
}

function start(stateDir: string, args: string[], env: Record<string, string>): Started {
  const child = spawn(NODE, [CLI, ...args], {
    env: hostEnv({ PORTCULLIS_HOME: stateDir, ...passphraseEnv(), ...env }),
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
  const done = new Promise<{
    code: number | null;
    signal: NodeJS.Signals | null;
    stdout: string;
    stderr: string;
  }>((resolve) => child.on("close", (code, signal) => resolve({ code, signal, stdout, stderr })));
  cleanup.push(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    await done;
  });
  return { child, done };
}

function changeTo(stateDir: string, next: string, from = TEST_PASSPHRASE, env: Record<string, string> = {}) {
  return start(stateDir, ["passphrase", "--json"], {
    PORTCULLIS_PASSPHRASE_FILE: secretFile(from),
    PORTCULLIS_NEW_PASSPHRASE_FILE: secretFile(next),
    ...env,
  });
}

async function waitingAt(gate: FsGate, s: Started): Promise<void> {
  const pid = await waitFor(
    () => gate.waiting() ?? (s.child.exitCode !== null ? -1 : 0),
    20_000,
    "the command to reach its rename of keyring.json",
  );
  expect(pid).toBe(s.child.pid);
}

async function kill(s: Started): Promise<void> {
  s.child.kill("SIGKILL");
  expect((await s.done).signal).toBe("SIGKILL");
  expect(alive(s.child.pid!)).toBe(false);
}

describe("portcullis passphrase killed inside its write, or run beside another rewrite", () => {
  it("killed with the new file written but not renamed: the old passphrase opens the keyring, same keys; the next change takes over the lock", async () => {
    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    const keys = keysOf(stateDir);
    const was = readFileSync(join(stateDir, "keyring.json"), "utf8");
    const gate = renameGate("passphrase", "before");
    const s = changeTo(stateDir, A, TEST_PASSPHRASE, gate.env);
    await waitingAt(gate, s);
    expect(existsSync(join(stateDir, "keyring.json.upgrade.lock"))).toBe(true);
    await kill(s);

    expect(readFileSync(join(stateDir, "keyring.json"), "utf8")).toBe(was);
    expect(await opensWith(stateDir, [TEST_PASSPHRASE, A])).toEqual([TEST_PASSPHRASE]);
    // its temporary file is left, holding the same keys under A
    const temps = () => readdirSync(stateDir).filter((n) => n.endsWith(".tmp"));
    expect(temps()).toEqual([
      expect.stringMatching(new RegExp(`^keyring\\.json\\.${s.child.pid}\\.[0-9a-f]{12}\\.tmp$`)),
    ]);
    const sessions = await runCli(["audit", "sessions"], { stateDir, env: passphraseEnv() });
    expect(sessions.code, sessions.stderr).toBe(0);

    // the dead command's lock does not stop the next change
    const again = await changeTo(stateDir, B).done;
    expect(again.code, again.stderr).toBe(0);
    expect(await opensWith(stateDir, [TEST_PASSPHRASE, A, B])).toEqual([B]);
    expect(keysOf(stateDir)).toEqual(keys);
    // and removes what the killed one left (a dead process's temporary file)
    expect(temps()).toEqual([]);
  });

  it("killed right after its rename: the new passphrase opens the keyring, the old one does not, same keys", async () => {
    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    const keys = keysOf(stateDir);
    const gate = renameGate("passphrase", "after");
    const s = changeTo(stateDir, A, TEST_PASSPHRASE, gate.env);
    await waitingAt(gate, s);
    await kill(s);

    expect(await opensWith(stateDir, [TEST_PASSPHRASE, A])).toEqual([A]);
    expect(keysOf(stateDir)).toEqual(keys);
    const verify = await runCli(["audit", "verify", "--json"], { stateDir });
    expect(verify.code, verify.stderr).toBe(0);
    const again = await changeTo(stateDir, B, A).done;
    expect(again.code, again.stderr).toBe(0);
    expect(await opensWith(stateDir, [TEST_PASSPHRASE, A, B])).toEqual([B]);
  });

  it("two changes at once from the same passphrase: one wins, the other finds its passphrase no longer opens the keyring", async () => {
    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    const keys = keysOf(stateDir);
    // the first holds the lock, its new file written; the second starts then, and must wait for it
    const gate = renameGate("passphrase", "before");
    const first = changeTo(stateDir, A, TEST_PASSPHRASE, gate.env);
    await waitingAt(gate, first);
    const watch = lockWatch();
    const second = changeTo(stateDir, B, TEST_PASSPHRASE, watch.env);
    // the second has checked the current passphrase (still the old one) and tries the lock
    await waitFor(
      () => watch.tried() || second.child.exitCode !== null,
      20_000,
      "the second change at the lock",
    );
    expect(second.child.exitCode).toBeNull();
    gate.open();
    const [r1, r2] = await Promise.all([first.done, second.done]);
    expect(r1.code, r1.stderr).toBe(0);
    expect(r2.code, r2.stderr).toBe(1);
    expect(r2.stderr).toMatch(
      /^portcullis passphrase: wrong passphrase: the keyring did not open; nothing was changed/m,
    );
    expect(await opensWith(stateDir, [TEST_PASSPHRASE, A, B])).toEqual([A]);
    expect(keysOf(stateDir)).toEqual(keys);

    // and let loose together, with no gate: exactly one wins, the keyring whole
    const free = [changeTo(stateDir, TEST_PASSPHRASE, A), changeTo(stateDir, B, A)];
    const codes = (await Promise.all(free.map((f) => f.done))).map((r) => r.code).sort();
    expect(codes).toEqual([0, 1]);
    expect((await opensWith(stateDir, [TEST_PASSPHRASE, A, B])).length).toBe(1);
    expect(keysOf(stateDir)).toEqual(keys);
  });

  // This test passes with changePassphrase's own lock removed, and cannot be made to fail so: the
  // change finds no approver key, so its addApproverKey waits on the same lock, and once it has it
  // the upgrade is over and no other writer is left. Its own lock is tested by the next test, with
  // the upgrade held after its rename (its key written, its lock still held).
  it("an old keyring's upgrade by another command in progress: the change waits for it and keeps its approver key", async () => {
    const stateDir = oldKeyringStateDir();
    const path = join(stateDir, "keyring.json");

    // `audit activity` adds the approver key; held with its new file written, under the lock
    const gate = renameGate("audit", "before");
    const audit = start(stateDir, ["audit", "activity", "--json"], gate.env);
    await waitingAt(gate, audit);
    const watch = lockWatch();
    const change = changeTo(stateDir, A, TEST_PASSPHRASE, watch.env);
    // it found no approver key, and tries the lock to add one (addApproverKey, under the same lock)
    await waitFor(() => watch.tried() || change.child.exitCode !== null, 20_000, "the change at the lock");
    expect(change.child.exitCode).toBeNull();
    gate.open();
    const [ra, rc] = await Promise.all([audit.done, change.done]);
    expect(ra.code, ra.stderr).toBe(0);
    expect(rc.code, rc.stderr).toBe(0);
    const now = JSON.parse(readFileSync(path, "utf8")) as { approver?: { keyId: string } };
    // the approver key the upgrade added is the one kept, and the one pinned
    expect(now.approver?.keyId).toBe(JSON.parse(rc.stdout).approverKeyId);
    expect(await opensWith(stateDir, [TEST_PASSPHRASE, A])).toEqual([A]);
    const sessions = await runCli(["audit", "sessions"], {
      stateDir,
      env: { ...passphraseEnv(), PORTCULLIS_PASSPHRASE_FILE: secretFile(A) },
    });
    expect(sessions.code, sessions.stderr).toBe(0);
  });

  it("a change started once an old keyring's upgrade has written its approver key, its lock still held: the change waits for that lock, and both commands succeed", async () => {
    const stateDir = oldKeyringStateDir();
    const gate = renameGate("audit", "after");
    const audit = start(stateDir, ["audit", "activity", "--json"], gate.env);
    await waitingAt(gate, audit);
    const added = (JSON.parse(keyringText(stateDir)) as { approver?: { keyId: string } }).approver?.keyId;
    expect(added).toBeDefined();
    // the change finds the approver key already there (its addApproverKey takes no lock): only
    // changePassphrase's own lock keeps it from rewriting keyring.json under the upgrade, whose
    // command opens the keyring again before it lets the lock go (a change then: wrong passphrase)
    const watch = lockWatch();
    const change = changeTo(stateDir, A, TEST_PASSPHRASE, watch.env);
    await waitFor(() => watch.tried() || change.child.exitCode !== null, 20_000, "the change at the lock");
    expect(change.child.exitCode, "the change did not wait for the upgrade's lock").toBeNull();
    gate.open();
    const [ra, rc] = await Promise.all([audit.done, change.done]);
    expect(ra.code, ra.stderr).toBe(0);
    expect(rc.code, rc.stderr).toBe(0);
    expect(JSON.parse(rc.stdout)).toMatchObject({ approverKeyId: added, approverKeyAdded: false });
    expect((JSON.parse(keyringText(stateDir)) as { approver?: { keyId: string } }).approver?.keyId).toBe(
      added,
    );
    expect(await opensWith(stateDir, [TEST_PASSPHRASE, A])).toEqual([A]);
  });

  it("an old keyring's upgrade killed with its new file written but not renamed: the keyring is as it was, doctor names the file left, and the next upgrade removes it", async () => {
    const stateDir = oldKeyringStateDir();
    const was = keyringText(stateDir);
    const gate = renameGate("audit", "before");
    const audit = start(stateDir, ["audit", "activity", "--json"], gate.env);
    await waitingAt(gate, audit);
    await kill(audit);

    expect(keyringText(stateDir)).toBe(was);
    const temps = () => readdirSync(stateDir).filter((n) => n.endsWith(".tmp"));
    const left = temps();
    expect(left).toEqual([
      expect.stringMatching(new RegExp(`^keyring\\.json\\.${audit.child.pid}\\.[0-9a-f]{12}\\.tmp$`)),
    ]);
    const doctor = await runCli(["doctor", "--json"], { stateDir });
    expect(doctor.code, doctor.stderr).toBe(1);
    const findings = (
      JSON.parse(doctor.stdout) as { findings: { ok: boolean; what: string; next: string }[] }
    ).findings;
    expect(findings.find((f) => f.what.includes(left[0]!))).toMatchObject({ ok: false });

    // the next command that takes the passphrase upgrades the keyring, and removes the dead one's file
    const again = await runCli(["audit", "activity", "--json"], { stateDir, env: passphraseEnv() });
    expect(again.code, again.stderr).toBe(0);
    expect((JSON.parse(keyringText(stateDir)) as { approver?: unknown }).approver).toBeDefined();
    expect(temps()).toEqual([]);
    const after = await runCli(["doctor", "--json"], { stateDir });
    expect(after.stdout).not.toContain(".tmp");
  });
});
