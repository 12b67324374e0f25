// `portcullis passphrase` killed with SIGKILL between its rename of keyring.json and its
// `passphrase_changed` record (src/approval/lateWrapping.ts): the change stood with no record in
// the chain, for good. Now the command marks the change before its rename and removes the mark
// once its record is written, and the next command that opens the keyring with the passphrase
// and the store records a marked change late (`late: true`, the wrapping's fingerprint, who
// changed it, who recorded it). What each test would catch: a change killed after its rename
// still missing from the chain after the next command (the first test fails without the mark);
// a late record of a change never made (killed before its rename); a change recorded twice (killed
// after its record, before its mark was removed); a late record written again by each command.
// Real CLI processes; the kill points are made observable by a preload (test/helpers/killedAtGate.ts).
import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openRecords } from "../../src/audit/log.js";
import { unlockKeyring } from "../../src/keyring/keyring.js";
import { keyringWrapping } from "../../src/keyring/passphraseChange.js";
import { openStore } from "../../src/store/db.js";
import { removeDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { fsGate, killedAtGate } from "../helpers/killedAtGate.js";
import { passphraseFile, withPassphrase } from "../helpers/passphraseChange.js";
import { newStateDir, passphraseEnv, TEST_PASSPHRASE } from "../helpers/state.js";

const NEW = "the passphrase of a killed change";
const MARK = "keyring.json.change-unrecorded";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/** `portcullis passphrase` to NEW, stopped `when` its `fn` of a path ending in `suffix` and killed there; its pid. */
function killedAt(
  stateDir: string,
  fn: "renameSync" | "rmSync",
  suffix: string,
  when: "before" | "after",
): Promise<number> {
  const onCleanup = (c: () => Promise<void> | void) => cleanup.push(c);
  const gate = fsGate(onCleanup, "passphrase", fn, suffix, when);
  const env = { ...passphraseEnv(), PORTCULLIS_NEW_PASSPHRASE_FILE: passphraseFile(NEW) };
  return killedAtGate(onCleanup, stateDir, ["passphrase", "--json"], env, gate);
}

/** The chain's passphrase_changed records, once `audit verify` found it whole. */
async function changes(stateDir: string, passphrase = NEW): Promise<Record<string, unknown>[]> {
  const verified = await runCli(["audit", "verify", "--state-dir", stateDir]);
  expect(verified.code, verified.stderr).toBe(0);
  const { auditPrivateKey } = await unlockKeyring(stateDir, passphrase);
  const db = openStore(stateDir);
  try {
    return [...openRecords(db, auditPrivateKey)]
      .map((r) => r.event as Record<string, unknown>)
      .filter((e) => e.type === "passphrase_changed");
  } finally {
    db.close();
  }
}

describe("portcullis passphrase killed around its record", () => {
  it("killed after its rename, before its record: the next command that takes the passphrase records the change late, once", async () => {
    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    const pid = await killedAt(stateDir, "renameSync", "keyring.json", "after");
    expect(existsSync(join(stateDir, MARK))).toBe(true);

    const sessions = await runCli(["audit", "sessions", "--json"], { stateDir, env: withPassphrase(NEW) });
    expect(sessions.code, sessions.stderr).toBe(0);
    expect(sessions.stderr).toMatch(
      new RegExp(
        `the keyring's passphrase was changed by \\S+ via 'portcullis passphrase' \\(pid ${pid}\\) at \\S+, and that change was not in the audit chain .*: recorded now, late \\(passphrase_changed, record \\d+\\)`,
      ),
    );
    expect(sessions.stdout + sessions.stderr).not.toContain(NEW);
    expect(existsSync(join(stateDir, MARK))).toBe(false);

    const wrapping = keyringWrapping(stateDir)!;
    const recorded = await changes(stateDir);
    expect(recorded).toEqual([
      expect.objectContaining({
        late: true,
        wrapping: wrapping.wrapping,
        keyId: wrapping.keyId,
        approverKeyId: wrapping.approverKeyId,
        by: expect.stringContaining(`'portcullis passphrase' (pid ${pid})`),
        recordedBy: expect.stringContaining("'portcullis audit'"),
      }),
    ]);
    expect(JSON.stringify(recorded)).not.toContain(NEW);

    // the next command finds nothing more to record
    const again = await runCli(["audit", "sessions", "--json"], { stateDir, env: withPassphrase(NEW) });
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).not.toContain("late");
    expect(await changes(stateDir)).toHaveLength(1);
  }, 30_000);

  it("killed before its rename: nothing was changed, and nothing is recorded", async () => {
    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    await killedAt(stateDir, "renameSync", "keyring.json", "before");
    expect(existsSync(join(stateDir, MARK))).toBe(true);
    // the old passphrase still opens the keyring: the mark names a wrapping that is not there
    const sessions = await runCli(["audit", "sessions", "--json"], { stateDir, env: passphraseEnv() });
    expect(sessions.code, sessions.stderr).toBe(0);
    expect(sessions.stderr).not.toContain("late");
    expect(existsSync(join(stateDir, MARK))).toBe(false);
    expect(await changes(stateDir, TEST_PASSPHRASE)).toEqual([]);
  }, 30_000);

  it("killed after its record, before removing its mark: the change is not recorded twice", async () => {
    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    await killedAt(stateDir, "rmSync", MARK, "before");
    expect(existsSync(join(stateDir, MARK))).toBe(true);
    const sessions = await runCli(["audit", "sessions", "--json"], { stateDir, env: withPassphrase(NEW) });
    expect(sessions.code, sessions.stderr).toBe(0);
    expect(sessions.stderr).not.toContain("late");
    expect(existsSync(join(stateDir, MARK))).toBe(false);
    const recorded = await changes(stateDir);
    expect(recorded).toHaveLength(1);
    expect(recorded[0]).not.toHaveProperty("late");
    expect(recorded[0]?.wrapping).toBe(keyringWrapping(stateDir)!.wrapping);
  }, 30_000);
});
