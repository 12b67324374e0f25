// `portcullis passphrase` (src/cli/passphraseChange.ts, src/keyring/passphraseChange.ts changePassphrase):
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
//    old passphrase, reads a record written after the change (the same audit key), and its
//    approver half is the current one (the pinned key).
// Refusals, and an old keyring's upgrade: passphrase-change-refusals.test.ts.
import { cpSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openStoreToRead } from "../../src/store/db.js";
import { decideByCli, nextStoredRequest } from "../helpers/approvals.js";
import { removeDir, tempDir } from "../helpers/files.js";
import { runCli, startGateway } from "../helpers/gateway.js";
import { changeByCli, keyringText, passphraseFile, withPassphrase } from "../helpers/passphraseChange.js";
import { fixtureCommand } from "../helpers/paths.js";
import { newStateDir, passphraseEnv, TEST_PASSPHRASE } from "../helpers/state.js";
import { released } from "../helpers/vaultState.js";

const SECRET = "passphrase-change-secret-6d41b0";
const NEW = "a brand new passphrase, 2026";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

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
    await decideByCli(stateDir, "approve", (await nextStoredRequest(stateDir)).request, "--for", "session");
    expect(JSON.stringify(await first)).toContain("Echo: one");
    const before = JSON.parse(keyringText(stateDir)) as Record<string, unknown>;
    // a copy of the state directory, as a backup holds it
    const backup = tempDir("portcullis-backup-");
    cleanup.push(() => removeDir(backup));
    cpSync(join(stateDir, "keyring.json"), join(backup, "keyring.json"));

    const changed = await changeByCli(stateDir, TEST_PASSPHRASE, NEW, ["--json"]);
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
    const after = JSON.parse(keyringText(stateDir)) as Record<string, unknown>;
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
    const req = await nextStoredRequest(stateDir);
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
        env: { ...passphraseEnv(), PORTCULLIS_NEW_PASSPHRASE_FILE: passphraseFile("yet another one") },
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
});
