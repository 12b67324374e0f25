// `portcullis passphrase --help` and `rotate-keys --help` name the commands that record late what
// the command left unrecorded (killed between its rename of keyring.json and its record, or the
// store unwritable then). They named some of them: a passphrase change was said to be recorded by
// "approve, deny, audit sessions, passphrase, unlock, vault set" (audit activity and show, vault
// rm and rotate-keys do it too), a rotation by "approve, deny, audit sessions, passphrase".
// The set is derived here from what the commands do: each command that asks for the passphrase
// (README's list, the one the wrong-passphrase test holds) is run, with the new passphrase, on a
// state directory holding an unrecorded change, or an unrecorded rotation, and those that record
// it must be exactly the help's list. Real CLI processes; approve and deny against a real
// gateway's pending request; the rotation killed by SIGKILL after its rename. The unrecorded
// change (or rotation) is made once per case, and each command runs on a copy of its own.
import { chmodSync, cpSync, existsSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { loadPublicKeyring } from "../../src/keyring/keyring.js";
import { nextStoredRequest } from "../helpers/approvals.js";
import { removeDir, tempDir } from "../helpers/files.js";
import { runCli, startGateway } from "../helpers/gateway.js";
import { fsGate, killedAtGate } from "../helpers/killedAtGate.js";
import { holdStoreLock } from "../helpers/lock.js";
import { changeByCli, passphraseFile, withPassphrase } from "../helpers/passphraseChange.js";
import { readmeWrongPassphraseCommands, writtenOut } from "../helpers/passphraseCommands.js";
import { fixtureCommand } from "../helpers/paths.js";
import { pinChain } from "../helpers/rotation.js";
import { newStateDir, passphraseEnv, TEST_PASSPHRASE } from "../helpers/state.js";

const NEW = "the passphrase left unrecorded";
const NEWER = "a passphrase after that one";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});
const onCleanup = (c: () => Promise<void> | void) => cleanup.push(c);

/** The commands a help text lists after `lead`, up to the `;` that ends the list, written out. */
async function listedBy(command: string, lead: string): Promise<string[]> {
  const help = (await runCli([command, "--help"])).stdout.replace(/\s+/g, " ");
  const at = help.indexOf(lead);
  expect(at, `${command} --help: ${lead}`).toBeGreaterThanOrEqual(0);
  return help
    .slice(at + lead.length)
    .split(";")[0]!
    .split(",")
    .flatMap((c) => writtenOut(c));
}

/** A state directory with a secret stored (for vault rm), then a passphrase change left unrecorded. */
async function changeUnrecorded(): Promise<string> {
  const stateDir = newStateDir();
  onCleanup(() => removeDir(stateDir));
  await storeSecret(stateDir);
  const lock = await holdStoreLock(stateDir);
  const r = await changeByCli(stateDir, TEST_PASSPHRASE, NEW, [], { PORTCULLIS_BUSY_TIMEOUT_MS: "200" });
  await lock.release();
  expect(r.code, r.stderr).toBe(0);
  expect(existsSync(join(stateDir, "keyring.json.change-unrecorded"))).toBe(true);
  return stateDir;
}

/** A state directory with a secret stored, then a rotation killed after its rename, before its record. */
async function rotationUnrecorded(): Promise<string> {
  const stateDir = newStateDir();
  onCleanup(() => removeDir(stateDir));
  await storeSecret(stateDir);
  const gate = fsGate(onCleanup, "rotate-keys", "renameSync", "keyring.json", "after");
  const env = { ...passphraseEnv(), PORTCULLIS_NEW_PASSPHRASE_FILE: passphraseFile(NEW) };
  await killedAtGate(onCleanup, stateDir, ["rotate-keys", "--json"], env, gate);
  expect(rotationRecorded(stateDir)).toBe(false);
  return stateDir;
}

/**
 * A copy of `made`, a state directory no process has open (its store, keyring and the files the
 * unrecorded change left, byte for byte): each command is run on a copy of its own, since the one
 * that records the change changes it. The change (or the killed rotation) is made once per case,
 * not once per command: three CLI processes per command were two that only set the state up.
 */
function copyOf(made: string): string {
  const dir = join(tempDir("portcullis-state-copy-"), "state");
  cpSync(made, dir, { recursive: true });
  chmodSync(dir, 0o700);
  return dir;
}

async function storeSecret(stateDir: string): Promise<void> {
  const set = await runCli(["vault", "set", "api", "--from-stdin", "--deliver", "env"], {
    stateDir,
    env: passphraseEnv(),
    input: "a-value-of-the-secret",
  });
  expect(set.code, set.stderr).toBe(0);
}

const changeRecorded = (stateDir: string) => !existsSync(join(stateDir, "keyring.json.change-unrecorded"));
const rotationRecorded = (stateDir: string) =>
  pinChain(stateDir)?.at(-1) === loadPublicKeyring(stateDir)!.approver!.keyId;

/** `command` run with the new passphrase on `stateDir`, far enough to take it. */
async function runWithNewPassphrase(command: string, stateDir: string): Promise<void> {
  const env = { ...withPassphrase(NEW), PORTCULLIS_NEW_PASSPHRASE_FILE: passphraseFile(NEWER) };
  const args: Record<string, string[]> = {
    unlock: ["unlock", "--for", "1m"],
    "vault set": ["vault", "set", "other", "--from-stdin", "--deliver", "env"],
    "vault rm": ["vault", "rm", "api"],
    approve: ["approve", "--next", "--for", "session"],
    deny: ["deny", "--next"],
    "audit sessions": ["audit", "sessions"],
    "audit activity": ["audit", "activity", "--json"],
    "audit show": ["audit", "show", "1"],
    passphrase: ["passphrase"],
    "rotate-keys": ["rotate-keys"],
  };
  expect(args[command], `how to run ${command}`).toBeDefined();
  if (command === "approve" || command === "deny") {
    // a request waiting for a human, so that approve and deny get as far as the passphrase
    const gw = await startGateway({ args: ["--label", "asks", "--", ...fixtureCommand("echo")], stateDir });
    onCleanup(() => gw.close());
    void gw.client.callTool({ name: "echo", arguments: { message: "hi" } }).catch(() => {});
    // (read in the test process: the listing is not what this is about)
    await nextStoredRequest(stateDir);
  }
  const r = await runCli(args[command]!, { stateDir, env, input: "another-value" });
  expect(r.code, `${command}: ${r.stderr}`).toBe(0);
  if (command === "unlock") expect((await runCli(["lock"], { stateDir })).code).toBe(0);
}

describe("the commands that record late what passphrase and rotate-keys left unrecorded", () => {
  it("passphrase --help names every command that records a change late, and no other", async () => {
    const recorders: string[] = [];
    const unrecorded = await changeUnrecorded();
    for (const command of readmeWrongPassphraseCommands()) {
      const stateDir = copyOf(unrecorded);
      expect(changeRecorded(stateDir), `the copy for ${command} holds the change unrecorded`).toBe(false);
      await runWithNewPassphrase(command, stateDir);
      if (changeRecorded(stateDir)) recorders.push(command);
    }
    const listed = await listedBy(
      "passphrase",
      "the next command that takes the passphrase records it late: ",
    );
    expect(listed.sort()).toEqual(recorders.sort());
  }, 240_000);

  it("rotate-keys --help names every command that records a rotation late, and no other", async () => {
    const recorders: string[] = [];
    const unrecorded = await rotationUnrecorded();
    for (const command of readmeWrongPassphraseCommands()) {
      const stateDir = copyOf(unrecorded);
      expect(rotationRecorded(stateDir), `the copy for ${command} holds the rotation unrecorded`).toBe(false);
      await runWithNewPassphrase(command, stateDir);
      if (rotationRecorded(stateDir)) recorders.push(command);
    }
    const listed = await listedBy("rotate-keys", "appends the record the new keyring carries: ");
    expect(listed.sort()).toEqual(recorders.sort());
  }, 240_000);
});
