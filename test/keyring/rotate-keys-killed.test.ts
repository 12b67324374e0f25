// `portcullis rotate-keys` killed with SIGKILL around its rename of keyring.json: the old keyring
// or the new one is in place, never a store whose secrets no keyring opens. Killed after the
// rename and before its rotation record (and its vault reseal), the new keyring opens the vault's
// secrets still sealed under the old data key, and the next command that takes the passphrase
// appends the rotation record the new keyring carries. What each test would catch: a rotation
// killed after its rename whose new key no gateway would ever honour (the record lost with the
// process), secrets the new keyring cannot open, a keyring half written. Real CLI processes; the
// kill point is made observable by a preload (test/helpers/killedAtGate.ts).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { loadPublicKeyring, unlockKeyring } from "../../src/keyring/keyring.js";
import { runCli } from "../helpers/gateway.js";
import { fsGate, killedAtGate } from "../helpers/killedAtGate.js";
import { passphraseFile, withPassphrase } from "../helpers/passphraseChange.js";
import { pinChain, rotateByCli } from "../helpers/rotation.js";
import { passphraseEnv, TEST_PASSPHRASE } from "../helpers/state.js";
import { released, vaultWith } from "../helpers/vaultState.js";

const NEW = "the passphrase of a killed rotation";
const SECRET = "rotate-keys-killed-value-3b71";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/** `portcullis rotate-keys` to NEW, SIGKILLed `when` its rename of keyring.json. */
async function killedAt(stateDir: string, when: "before" | "after"): Promise<void> {
  const onCleanup = (c: () => Promise<void> | void) => cleanup.push(c);
  const gate = fsGate(onCleanup, "rotate-keys", "renameSync", "keyring.json", when);
  const env = { ...passphraseEnv(), PORTCULLIS_NEW_PASSPHRASE_FILE: passphraseFile(NEW) };
  await killedAtGate(onCleanup, stateDir, ["rotate-keys", "--json"], env, gate);
}

/** The approver key id at the end of the chain of pins, as a gateway follows it. */
const chainHead = (stateDir: string) => pinChain(stateDir)?.at(-1) ?? null;

describe("portcullis rotate-keys killed around its rename", () => {
  it("killed before its rename: the old keyring, the old passphrase, the same chain; a rotation after it succeeds", async () => {
    const stateDir = await vaultWith("api", SECRET, (c) => cleanup.push(c), false);
    const before = readFileSync(join(stateDir, "keyring.json"), "utf8");
    const head = chainHead(stateDir);
    await killedAt(stateDir, "before");
    expect(readFileSync(join(stateDir, "keyring.json"), "utf8")).toBe(before);
    expect(chainHead(stateDir)).toBe(head);
    const unlocked = await runCli(["unlock", "--for", "10m"], { stateDir, env: passphraseEnv() });
    expect(unlocked.code, unlocked.stderr).toBe(0);
    expect(await released(stateDir, "api")).toBe(SECRET);
    expect((await runCli(["lock"], { stateDir })).code).toBe(0);
    const rotated = await rotateByCli(stateDir, passphraseEnv(), NEW);
    expect(rotated.code, rotated.stderr).toBe(0);
    expect(chainHead(stateDir)).toBe(loadPublicKeyring(stateDir)!.approver!.keyId);
  }, 30_000);

  it("killed after its rename, before its record and reseal: the new keyring opens the vault, and the next command records the rotation late", async () => {
    const stateDir = await vaultWith("api", SECRET, (c) => cleanup.push(c), false);
    const oldKeyId = loadPublicKeyring(stateDir)!.approver!.keyId;
    await killedAt(stateDir, "after");
    // the new keyring is in place: the new passphrase opens it, the old one does not
    await expect(unlockKeyring(stateDir, TEST_PASSPHRASE)).rejects.toThrow(/wrong passphrase/);
    const newKeyId = loadPublicKeyring(stateDir)!.approver!.keyId;
    expect(newKeyId).not.toBe(oldKeyId);
    // the chain still honours the old key: nothing is honoured until the record is written
    expect(chainHead(stateDir)).toBe(oldKeyId);
    // doctor, which takes no passphrase, says so and names the command that records it
    const found = await runCli(["doctor"], { stateDir });
    expect(found.stdout).toContain("holds no record of the rotation yet");

    // the vault: its secret, still sealed under the old data key, opens with the new keyring
    // (unlock reseals it under the new data key and says so)
    const unlocked = await runCli(["unlock", "--for", "10m"], { stateDir, env: withPassphrase(NEW) });
    expect(unlocked.code, unlocked.stderr).toBe(0);
    expect(unlocked.stderr).toContain("resealed under the current one");
    expect(await released(stateDir, "api")).toBe(SECRET);

    // the next command that takes the passphrase appends the rotation record, once
    const sessions = await runCli(["audit", "sessions"], { stateDir, env: withPassphrase(NEW) });
    expect(sessions.code, sessions.stderr).toBe(0);
    expect(sessions.stderr).toMatch(
      /the key rotation its command left unrecorded is recorded now \(audit record \d+\)/,
    );
    expect(chainHead(stateDir)).toBe(newKeyId);
    const again = await runCli(["audit", "sessions"], { stateDir, env: withPassphrase(NEW) });
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).not.toContain("recorded now");
    expect((await runCli(["audit", "verify"], { stateDir })).code).toBe(0);
    expect((await runCli(["doctor"], { stateDir })).stdout).not.toContain("no record of the rotation");
  }, 30_000);
});
