// `portcullis passphrase` (src/cli/passphraseChange.ts, src/keyring/keyring.ts changePassphrase):
// the keyring's data key is wrapped under a key from the new passphrase, and nothing else changes.
// Real CLI processes, a real gateway over the echo fixture, a real vault holder.
//
// What each test would catch:
//  - the old passphrase still opening the keyring after a change (approve, unlock, vault set,
//    audit all exit 1 with "wrong passphrase"), or the new one not opening it;
//  - a change that made new keys (a data key, an audit or approver key): the grant decided before
//    would not verify against the pin and the running gateway would ask again; the vault's
//    secrets, sealed under the data key, would not open (unlock with the new passphrase fails);
//    the chain would not verify, or an approve with the new passphrase would not be honoured;
//  - the unlocked vault's holder disturbed by the change;
//  - a record missing, holding a passphrase, or taken by `audit sessions` for a run;
//  - docs/security.md's limit: a copy of keyring.json taken before the change still opens with the
//    old passphrase and holds the very keys (its approver key signs decisions the gateway honours);
//  - a same passphrase, a short one, a wrong current one, a new-passphrase file others may read:
//    refused, keyring.json byte for byte as before.
import { cpSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openStoreToRead } from "../../src/store/db.js";
import { decideByCli, nextRequest } from "../helpers/approvals.js";
import { removeDir, tempDir } from "../helpers/files.js";
import { runCli, startGateway } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { newKeyringOnlyStateDir, newStateDir, passphraseEnv, TEST_PASSPHRASE } from "../helpers/state.js";
import { released } from "../helpers/vaultState.js";

const SECRET = "passphrase-change-secret-6d41b0";
const NEW = "a brand new passphrase, 2026";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/** A file of this user's alone whose first line is `text`. */
function secretFile(text: string, mode = 0o600): string {
  const file = join(tempDir("portcullis-newpass-"), "passphrase");
  writeFileSync(file, `${text}\n`, { mode });
  return file;
}

/** The env for a command taking `passphrase` (the test KDF). */
function withPassphrase(passphrase: string): Record<string, string> {
  return { ...passphraseEnv(), PORTCULLIS_PASSPHRASE_FILE: secretFile(passphrase) };
}

/** `portcullis passphrase` from `from` to `to`. */
function change(stateDir: string, from: string, to: string, extra: string[] = []) {
  return runCli(["passphrase", ...extra], {
    stateDir,
    env: { ...withPassphrase(from), PORTCULLIS_NEW_PASSPHRASE_FILE: secretFile(to) },
  });
}

const keyringOf = (stateDir: string) => readFileSync(join(stateDir, "keyring.json"), "utf8");

describe("portcullis passphrase", () => {
  it("changes what opens the keyring, and nothing it protects: grants, the pin, the chain, the vault and its holder go on", async () => {
    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    const set = await runCli(["vault", "set", "api", "--from-stdin", "--deliver", "env"], {
      stateDir,
      env: passphraseEnv(),
      input: SECRET,
    });
    expect(set.code, set.stderr).toBe(0);
    const unlock = await runCli(["unlock", "--for", "10m"], { stateDir, env: passphraseEnv() });
    expect(unlock.code, unlock.stderr).toBe(0);
    cleanup.push(async () => void (await runCli(["lock"], { stateDir })));

    // a running gateway whose run holds a session grant decided with the old passphrase
    const gw = await startGateway({ args: ["--label", "echo", "--", ...fixtureCommand("echo")], stateDir });
    cleanup.push(() => gw.close());
    const first = gw.client.callTool({ name: "echo", arguments: { message: "one" } });
    await decideByCli(stateDir, "approve", (await nextRequest(stateDir)).request, "--for", "session");
    expect(JSON.stringify(await first)).toContain("Echo: one");
    const before = JSON.parse(keyringOf(stateDir)) as Record<string, unknown>;
    // a copy of the state directory, as a backup holds it
    const backup = tempDir("portcullis-backup-");
    cleanup.push(() => removeDir(backup));
    cpSync(join(stateDir, "keyring.json"), join(backup, "keyring.json"));

    const changed = await change(stateDir, TEST_PASSPHRASE, NEW, ["--json"]);
    expect(changed.code, changed.stderr).toBe(0);
    const out = JSON.parse(changed.stdout) as Record<string, unknown>;
    expect(out).toMatchObject({
      changed: true,
      keyring: join(stateDir, "keyring.json"),
      keyId: (before.audit as { keyId: string }).keyId,
      approverKeyId: (before.approver as { keyId: string }).keyId,
      approverKeyAdded: false,
    });
    expect(typeof out.auditRecord).toBe("number");
    expect(changed.stdout + changed.stderr).not.toContain(NEW);
    expect(changed.stdout + changed.stderr).not.toContain(TEST_PASSPHRASE);

    // only the data key's wrapping and its salt changed
    const after = JSON.parse(keyringOf(stateDir)) as Record<string, unknown>;
    expect(after.audit).toEqual(before.audit);
    expect(after.approver).toEqual(before.approver);
    expect((after.kdf as { salt: string }).salt).not.toBe((before.kdf as { salt: string }).salt);
    expect(after.dataKey).not.toEqual(before.dataKey);

    // the running gateway's grant still covers its run's calls: no request, the call answered
    expect(
      JSON.stringify(await gw.client.callTool({ name: "echo", arguments: { message: "two" } })),
    ).toContain("Echo: two");
    // the holder unlocked before the change still releases the secret
    expect(await released(stateDir, "api")).toBe(SECRET);

    // another run asks: the old passphrase decides nothing, the new one does, and its gateway honours it
    const gw2 = await startGateway({ args: ["--label", "echo", "--", ...fixtureCommand("echo")], stateDir });
    cleanup.push(() => gw2.close());
    const third = gw2.client.callTool({ name: "echo", arguments: { message: "three" } });
    const req = await nextRequest(stateDir);
    const oldCommands: { args: string[]; input?: string }[] = [
      { args: ["approve", req.request, "--for", "session"] },
      { args: ["unlock", "--for", "1m"] },
      { args: ["vault", "set", "other", "--from-stdin", "--deliver", "env"], input: "x-value" },
      { args: ["audit", "sessions"] },
      { args: ["passphrase"] },
    ];
    for (const { args, input } of oldCommands) {
      const r = await runCli(args, {
        stateDir,
        env: { ...passphraseEnv(), PORTCULLIS_NEW_PASSPHRASE_FILE: secretFile("yet another one") },
        input,
      });
      expect(r.code, `${args.join(" ")}: ${r.stderr}`).toBe(1);
      expect(r.stderr, args.join(" ")).toMatch(/wrong passphrase: the keyring did not open/);
    }
    const approve = await runCli(["approve", req.request, "--for", "session"], {
      stateDir,
      env: withPassphrase(NEW),
    });
    expect(approve.code, approve.stderr).toBe(0);
    expect(JSON.stringify(await third)).toContain("Echo: three");

    // the vault's secrets open with the new passphrase: a new unlock releases the same value
    const relock = await runCli(["unlock", "--for", "10m"], { stateDir, env: withPassphrase(NEW) });
    expect(relock.code, relock.stderr).toBe(0);
    expect(await released(stateDir, "api")).toBe(SECRET);
    const list = await runCli(["vault", "list", "--json"], { stateDir });
    expect(JSON.parse(list.stdout).secrets.map((s: { name: string }) => s.name)).toEqual(["api"]);

    // the chain verifies; the change is in it, with no passphrase; it starts no session of its own
    const verify = await runCli(["audit", "verify", "--json"], { stateDir });
    expect(verify.code, verify.stderr).toBe(0);
    const show = await runCli(["audit", "show", String(out.auditRecord), "--json"], {
      stateDir,
      env: withPassphrase(NEW),
    });
    expect(show.code, show.stderr).toBe(0);
    const event = JSON.parse(show.stdout).event as Record<string, unknown>;
    expect(event).toMatchObject({
      type: "passphrase_changed",
      keyId: out.keyId,
      approverKeyId: out.approverKeyId,
    });
    expect(show.stdout).not.toContain(NEW);
    const sessions = await runCli(["audit", "sessions", "--json"], { stateDir, env: withPassphrase(NEW) });
    expect(sessions.code, sessions.stderr).toBe(0);
    const runs = JSON.parse(sessions.stdout) as { run: string | null; writer?: string }[];
    expect(runs.filter((r) => r.run === null)).toEqual([]);

    // docs/security.md: the copy taken before still opens with the old passphrase (not with the
    // new one), and holds the same approver key: the pin in the chain names it
    const oldCopy = tempDir("portcullis-oldcopy-");
    cleanup.push(() => removeDir(oldCopy));
    cpSync(join(backup, "keyring.json"), join(oldCopy, "keyring.json"));
    // the store as it is now (its log included: a copy of the file alone misses what the -wal holds)
    const db = openStoreToRead(stateDir);
    try {
      db.prepare("VACUUM INTO ?").run(join(oldCopy, "portcullis.db"));
    } finally {
      db.close();
    }
    const viaCopy = await runCli(["audit", "show", String(out.auditRecord), "--json"], {
      stateDir: oldCopy,
      env: passphraseEnv(),
    });
    expect(viaCopy.code, viaCopy.stderr).toBe(0);
    expect(JSON.parse(viaCopy.stdout).event.type).toBe("passphrase_changed");
    const copyNew = await runCli(["audit", "sessions"], { stateDir: oldCopy, env: withPassphrase(NEW) });
    expect(copyNew.code).toBe(1);
  });

  it("refuses the same passphrase, a short one, a wrong current one and a new-passphrase file others may read, changing nothing", async () => {
    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    const was = keyringOf(stateDir);

    const same = await change(stateDir, TEST_PASSPHRASE, TEST_PASSPHRASE);
    expect(same.code).toBe(2);
    expect(same.stderr).toMatch(
      /^portcullis passphrase: the new passphrase is the current one; nothing was changed\.?\n$/,
    );

    const short = await change(stateDir, TEST_PASSPHRASE, "seven77");
    expect(short.code).toBe(2);
    expect(short.stderr).toContain("the new passphrase must be at least 8 characters; nothing was changed");

    const wrong = await change(stateDir, "not the passphrase", NEW);
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toMatch(
      /^portcullis passphrase: wrong passphrase: the keyring did not open; nothing was changed/,
    );

    const shared = await runCli(["passphrase"], {
      stateDir,
      env: { ...passphraseEnv(), PORTCULLIS_NEW_PASSPHRASE_FILE: secretFile(NEW, 0o644) },
    });
    expect(shared.code).toBe(2);
    expect(shared.stderr).toMatch(
      /^portcullis passphrase: PORTCULLIS_NEW_PASSPHRASE_FILE \([^)]*\): other users may read or change it \(mode 644\)/,
    );
    expect(shared.stderr).toContain("chmod 600");

    for (const r of [same, short, wrong, shared]) expect(r.stdout + r.stderr).not.toContain(NEW);
    expect(keyringOf(stateDir)).toBe(was);
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

    const r = await change(stateDir, TEST_PASSPHRASE, NEW);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toMatch(
      /^portcullis passphrase: the keyring's approver key [0-9a-f]{32} is not the one pinned/,
    );
    expect(keyringOf(stateDir)).toBe(swapped);
  });

  it("gives a keyring made before decisions were signed its approver key, pinned, on the way", async () => {
    const stateDir = newKeyringOnlyStateDir();
    cleanup.push(() => removeDir(stateDir));
    const path = join(stateDir, "keyring.json");
    const old = JSON.parse(readFileSync(path, "utf8")) as Record<string, unknown>;
    delete old.approver;
    writeFileSync(path, `${JSON.stringify(old, null, 2)}\n`, { mode: 0o600 });

    const r = await change(stateDir, TEST_PASSPHRASE, NEW, ["--json"]);
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
