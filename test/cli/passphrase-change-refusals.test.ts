// `portcullis passphrase` refusing what it must not take, and upgrading an old keyring on the way
// (src/cli/passphraseChange.ts). The change itself, and what it leaves working:
// test/cli/passphrase-change.test.ts. Real CLI processes.
//
// What each test would catch: a same, short or wrong passphrase, a new-passphrase file others may
// read, or a swapped keyring (another init's, its approver key not the pinned one) taken, or any
// of them changing keyring.json or writing a record; an old keyring (no approver key) changed
// without its key added and pinned; the command missing from the help, or its help without its
// exit codes; a passphrase taken from an argument.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { removeDir, tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { changeByCli, keyringText, passphraseFile, withPassphrase } from "../helpers/passphraseChange.js";
import { newKeyringOnlyStateDir, newStateDir, passphraseEnv, TEST_PASSPHRASE } from "../helpers/state.js";

const NEW = "a brand new passphrase, 2026";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

describe("portcullis passphrase refuses, and upgrades an old keyring", () => {
  it("refuses the same passphrase, a short one, a wrong current one and a new-passphrase file others may read, changing nothing", async () => {
    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    const was = keyringText(stateDir);

    const same = await changeByCli(stateDir, TEST_PASSPHRASE, TEST_PASSPHRASE);
    expect(same.code).toBe(2);
    expect(same.stderr).toMatch(
      /^portcullis passphrase: the new passphrase is the current one; nothing was changed\.\n$/,
    );

    const short = await changeByCli(stateDir, TEST_PASSPHRASE, "seven77");
    expect(short.code).toBe(2);
    expect(short.stderr).toContain(
      "the new passphrase must be at least 8 characters; nothing was changed.\n",
    );

    const wrong = await changeByCli(stateDir, "not the passphrase", NEW);
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toMatch(
      /^portcullis passphrase: wrong passphrase: the keyring did not open; nothing was changed\.\n$/,
    );

    const shared = await runCli(["passphrase"], {
      stateDir,
      env: { ...passphraseEnv(), PORTCULLIS_NEW_PASSPHRASE_FILE: passphraseFile(NEW, 0o644) },
    });
    expect(shared.code).toBe(2);
    expect(shared.stderr).toMatch(
      /^portcullis passphrase: PORTCULLIS_NEW_PASSPHRASE_FILE \([^)]*\): other users may read or change it \(mode 644\)/,
    );
    expect(shared.stderr).toContain("chmod 600");

    for (const r of [same, short, wrong, shared]) expect(r.stdout + r.stderr).not.toContain(NEW);
    expect(keyringText(stateDir)).toBe(was);
    // and no record was written: the chain holds the pin alone
    const verify = await runCli(["audit", "verify", "--json"], { stateDir });
    expect(JSON.parse(verify.stdout).records).toBe(1);
  });

  it("refuses a swapped keyring (another init's, whose approver key is not the pinned one), changing nothing", async () => {
    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    const other = join(tempDir("portcullis-other-init-"), "state");
    cleanup.push(() => removeDir(join(other, "..")));
    const init = await runCli(["init"], { stateDir: other, env: passphraseEnv() });
    expect(init.code, init.stderr).toBe(0);
    const swapped = readFileSync(join(other, "keyring.json"), "utf8");
    writeFileSync(join(stateDir, "keyring.json"), swapped, { mode: 0o600 });

    const r = await changeByCli(stateDir, TEST_PASSPHRASE, NEW);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toMatch(
      /^portcullis passphrase: the keyring's approver key [0-9a-f]{32} is not the one pinned/,
    );
    expect(keyringText(stateDir)).toBe(swapped);
  });

  it("gives a keyring made before decisions were signed its approver key, pinned, on the way", async () => {
    const stateDir = newKeyringOnlyStateDir();
    cleanup.push(() => removeDir(stateDir));
    const path = join(stateDir, "keyring.json");
    const old = JSON.parse(readFileSync(path, "utf8")) as Record<string, unknown>;
    delete old.approver;
    writeFileSync(path, `${JSON.stringify(old, null, 2)}\n`, { mode: 0o600 });

    const r = await changeByCli(stateDir, TEST_PASSPHRASE, NEW, ["--json"]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/keyring upgraded: approver key [0-9a-f]{32} pinned in the audit chain/);
    const out = JSON.parse(r.stdout) as { approverKeyAdded: boolean; approverKeyId: string };
    expect(out.approverKeyAdded).toBe(true);
    const now = JSON.parse(readFileSync(path, "utf8")) as { approver?: { keyId: string } };
    expect(now.approver?.keyId).toBe(out.approverKeyId);
    // the new passphrase opens it, with its approver key the pinned one (audit refuses a mismatch)
    const sessions = await runCli(["audit", "sessions"], { stateDir, env: withPassphrase(NEW) });
    expect(sessions.code, sessions.stderr).toBe(0);
    const verify = await runCli(["audit", "verify", "--json"], { stateDir });
    expect(verify.code, verify.stderr).toBe(0);
  });

  it("is in portcullis --help, and its own help gives its exit codes", async () => {
    const all = await runCli(["--help"]);
    expect(all.stdout).toMatch(/\n {2}passphrase \[--json\] +change the keyring's passphrase/);
    const own = await runCli(["passphrase", "--help"]);
    expect(own.code).toBe(0);
    expect(own.stdout).toMatch(/^usage: portcullis passphrase/);
    expect(own.stdout).toContain("PORTCULLIS_NEW_PASSPHRASE_FILE");
    expect(own.stdout).toMatch(/Exit codes: 0 changed, 1 the current passphrase is wrong/);
    // a word given is refused unseen: no passphrase from an argument
    const word = await runCli(["passphrase", "hunter2hunter2"], { stateDir: newStateDir() });
    expect(word.code).toBe(2);
    expect(word.stderr).not.toContain("hunter2");
  });
});
