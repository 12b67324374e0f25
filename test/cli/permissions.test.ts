// Files this user may not read or write, seen for real: the suite often runs as root, whom file
// modes do not bind, so as root each command runs as `nobody` (uid 65534) against files root
// owns with mode 0600/0700; as another user, a mode of 000 does the same. Each refusal names
// the file, says what is wrong in words and what to do (src/util/errno.ts), exit 2, never a
// stack; and the state is unharmed: the owner's `audit verify` passes afterwards.
import { spawnSync } from "node:child_process";
import { chmodSync, chownSync, closeSync, mkdirSync, openSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { commandNamed } from "../helpers/commandNamed.js";
import { tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { unprivilegedUser } from "../helpers/otherUser.js";
import { CLI, NODE } from "../helpers/paths.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";

const ROOT = process.getuid?.() === 0;
const NOBODY = { uid: 65534, gid: 65534 };
/** how this process runs a command that file modes must bind */
const AS = ROOT ? NOBODY : {};
const DENIED = "permission denied: this user may not open it; check its mode and owner (EACCES)";

/** Whether `nobody` can run the built CLI (a checkout it cannot read cannot be tested so). */
function canRunAsOther(): boolean {
  if (!ROOT) return true;
  return spawnSync(NODE, [CLI, "--version"], { ...NOBODY, encoding: "utf8" }).status === 0;
}
const SKIP = canRunAsOther()
  ? false
  : "the user nobody cannot run the built CLI here (its checkout is not readable)";

const restore: (() => void)[] = [];
afterEach(() => {
  for (const r of restore.splice(0).reverse()) r();
});

/** Makes `path` unusable to the user of AS: root's own file or directory is already (0600/0700). */
function deny(path: string, mode: number): void {
  if (ROOT) return;
  chmodSync(path, 0);
  restore.push(() => chmodSync(path, mode));
}

function oneSentence(r: { code: number | null; stderr: string }): void {
  expect(r.stderr, r.stderr).not.toMatch(/ {4}at |internal error|Error:/);
  expect(r.stderr.trim().split("\n")).toHaveLength(1);
  expect(r.code, r.stderr).toBe(2);
}

/** The owner's verification of the store, after the refusals: nothing was changed or damaged. */
async function verifiesAfter(stateDir: string): Promise<void> {
  const ok = await runCli(["audit", "verify", "--json"], { stateDir });
  expect(ok.code, ok.stderr).toBe(0);
  expect(JSON.parse(ok.stdout)).toMatchObject({ ok: true });
}

/** A state directory with a store and a few audit records (one gateway's start and end). */
async function usedStateDir(): Promise<string> {
  const stateDir = newStateDir();
  const r = await runCli(["run", "--label", "p", "--approval", "none", "--", NODE, "-e", ""], { stateDir });
  expect(r.code, r.stderr).toBe(0);
  await verifiesAfter(stateDir);
  return stateDir;
}

describe.skipIf(SKIP)("files this user may not use", () => {
  it("another user's state directory: every command says it cannot be read, not that init was never run", async () => {
    const stateDir = await usedStateDir();
    deny(stateDir, 0o700);
    const said = `the state directory ${stateDir} cannot be read: ${DENIED}. Run the command as the user the directory belongs to, or give a state directory of your own (--state-dir or PORTCULLIS_HOME).\n`;
    for (const args of [
      ["status"],
      ["approvals"],
      ["audit", "verify"],
      ["audit", "export"],
      ["audit", "checkpoint"],
      ["lock"],
      ["catalog", "show", "p"],
    ]) {
      const r = await runCli(args, { stateDir, env: { HOME: tempDir() }, ...AS });
      oneSentence(r);
      // named by the command, as every failure is
      expect(r.stderr, args.join(" ")).toBe(`portcullis ${commandNamed(args)}: ${said}`);
      expect(r.stdout).toBe("");
    }
    // one below a directory this user may not enter
    const inner = join(stateDir, "inner");
    mkdirSync(inner);
    // (the directory that refuses is named: inner's own mode is not the cause)
    const below = await runCli(["status"], { stateDir: inner, env: { HOME: tempDir() }, ...AS });
    oneSentence(below);
    expect(below.stderr).toBe(
      `portcullis status: the state directory ${inner} cannot be read: this user may not enter the directory ${stateDir} on its way (mode ${ROOT ? "700" : "000"}: no search permission for it) (EACCES). Run the command as the user that directory belongs to, or give a state directory of your own (--state-dir or PORTCULLIS_HOME).\n`,
    );
    for (const r of restore.splice(0).reverse()) r();
    await verifiesAfter(stateDir);
  });

  it("a keyring in a directory this user may not enter: the directory is named, not the file", async () => {
    // unlock, vault list, console and init read keyring.json before anything else: the open is
    // refused for the directory (another user's, mode 0700), and the sentence blamed the file,
    // whose own mode was fine
    const stateDir = newStateDir();
    deny(stateDir, 0o700);
    const keyring = join(stateDir, "keyring.json");
    const mode = ROOT ? "700" : "000";
    const said = `${keyring} cannot be read: this user may not enter the directory ${stateDir} (mode ${mode}: no search permission for it), so no file in it can be opened (EACCES); run the command as the user the directory belongs to (ls -ld ${stateDir} shows who), or give a state directory of your own (--state-dir or PORTCULLIS_HOME).\n`;
    const as = { stateDir, env: { HOME: tempDir(), ...passphraseEnv() }, ...AS };
    for (const args of [["unlock"], ["vault", "list"], ["console", "--no-open"], ["init"]]) {
      const r = await runCli(args, as);
      oneSentence(r);
      expect(r.stderr.replace(/^portcullis( vault list| unlock| init)?: /, ""), args.join(" ")).toBe(said);
    }
    // doctor: its owner is the one to run as, not a backup to restore
    const doctor = await runCli(["doctor", "--json"], as);
    const findings = (JSON.parse(doctor.stdout) as { findings: { what: string; next: string }[] }).findings;
    expect(findings).toContainEqual({
      ok: false,
      what: said.slice(0, -2),
      next: `run portcullis as the user ${stateDir} belongs to (ls -ld ${stateDir} shows who), or give a state directory of your own: nothing says the keyring in it is damaged`,
    });
  });

  it("a store (holding the vault and the audit log) this user may not open: named, with what to do", async () => {
    const stateDir = await usedStateDir();
    const db = join(stateDir, "portcullis.db");
    // the directory is the other user's; the store in it is not (root's 0600, or mode 000)
    const user = unprivilegedUser([stateDir]);
    if (!user) throw new Error("unreachable: SKIP covers it");
    if (ROOT) chmodSync(db, 0o600);
    if (ROOT) chownSync(db, 0, 0);
    deny(db, 0o600);
    const said = `the store ${db} cannot be opened: ${DENIED}; run the command as the user the store belongs to, or give a state directory of your own (--state-dir or PORTCULLIS_HOME).\n`;
    for (const args of [
      ["status"],
      ["audit", "verify"],
      ["audit", "export"],
      ["vault", "list"],
      ["run", "--label", "p", "--", NODE, "-e", ""],
    ]) {
      const r = await runCli(args, { stateDir, env: { HOME: stateDir, ...passphraseEnv() }, ...user.spawn });
      oneSentence(r);
      expect(r.stderr, args.join(" ")).toBe(`portcullis ${commandNamed(args)}: ${said}`);
    }
    // doctor: the cause, and its one step (not "check what it is and who owns it")
    const doctor = await runCli(["doctor", "--json"], { stateDir, env: { HOME: stateDir }, ...user.spawn });
    expect(
      (JSON.parse(doctor.stdout) as { findings: { cause?: string }[] }).findings.filter((f) => f.cause),
    ).toEqual([
      {
        ok: false,
        what: said.slice(0, -2),
        next: `run portcullis as the user ${db} belongs to (ls -l ${db} shows who), or give a state directory of your own (--state-dir or PORTCULLIS_HOME)`,
        cause: "permissions",
      },
    ]);
    for (const r of restore.splice(0).reverse()) r();
    if (ROOT) spawnSync("chown", ["-R", "0:0", stateDir]);
    await verifiesAfter(stateDir);
  });

  it("a keyring, a configuration and a passphrase file this user may not read: each named", async () => {
    const stateDir = newStateDir();
    const dir = tempDir();
    const config = join(dir, "portcullis.json");
    writeFileSync(config, JSON.stringify({ servers: { p: { command: NODE, args: ["-e", ""] } } }), {
      mode: 0o600,
    });
    const pass = passphraseEnv();
    const user = unprivilegedUser([stateDir]);
    if (!user) throw new Error("unreachable: SKIP covers it");
    const keyring = join(stateDir, "keyring.json");
    if (ROOT) spawnSync("chown", ["0:0", keyring]);
    deny(keyring, 0o600);
    deny(config, 0o600);
    deny(pass.PORTCULLIS_PASSPHRASE_FILE!, 0o600);
    const as = { stateDir, env: { HOME: stateDir }, ...user.spawn };
    const unlock = await runCli(["unlock"], as);
    oneSentence(unlock);
    expect(unlock.stderr).toBe(`portcullis unlock: ${keyring} cannot be read: ${DENIED}.\n`);
    // doctor: a keyring this user may not read is not a damaged one to restore from a backup
    const doctor = await runCli(["doctor", "--json"], as);
    expect(doctor.code).toBe(1);
    const findings = (
      JSON.parse(doctor.stdout) as { findings: { ok: boolean; what: string; next: string }[] }
    ).findings;
    expect(findings).toContainEqual({
      ok: false,
      what: `${keyring} cannot be read: ${DENIED}`,
      next: `run portcullis as the user ${keyring} belongs to (ls -l ${keyring} shows who): a keyring is for its owner's eyes only, and nothing says this one is damaged`,
    });
    const run = await runCli(["run", "--config", config, "p"], as);
    oneSentence(run);
    expect(run.stderr).toBe(`portcullis run: ${config}: cannot be read: ${DENIED}.\n`);
    if (ROOT) spawnSync("chown", ["65534:65534", keyring]);
    else chmodSync(keyring, 0o600);
    const passphrase = await runCli(["unlock"], { ...as, env: { HOME: stateDir, ...pass } });
    oneSentence(passphrase);
    expect(passphrase.stderr).toContain(
      `cannot read PORTCULLIS_PASSPHRASE_FILE (${pass.PORTCULLIS_PASSPHRASE_FILE}): ${DENIED}.\n`,
    );
  });

  it("audit export to an output it cannot write (a full disk, a descriptor opened to read): said in words", async () => {
    const stateDir = await usedStateDir();
    const readOnly = join(tempDir(), "opened-to-read");
    writeFileSync(readOnly, "");
    for (const [target, why] of [
      ["/dev/full", "the disk is full (ENOSPC)"],
      [readOnly, "it is not open for writing (a file opened only to read, or closed) (EBADF)"],
    ] as const) {
      const fd = openSync(target, target === readOnly ? "r" : "w");
      try {
        const r = spawnSync(NODE, [CLI, "audit", "export"], {
          env: { ...process.env, PORTCULLIS_HOME: stateDir },
          stdio: ["ignore", fd, "pipe"],
          encoding: "utf8",
        });
        expect(r.stderr).toBe(
          `portcullis audit export: standard output cannot be written: ${why}; what it received is incomplete.\n`,
        );
        expect(r.status).toBe(2);
      } finally {
        closeSync(fd);
      }
    }
    await verifiesAfter(stateDir);
  });
});
