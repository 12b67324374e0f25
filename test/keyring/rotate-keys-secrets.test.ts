// `portcullis rotate-keys` and what a copy of keyring.json made before it, with the old
// passphrase, still opens: the real CLI (vault set, unlock, lock, rotate-keys, audit), the real
// vault holder. What each test would catch: a rotation that leaves the vault's secrets sealed
// under the old data key (the copy opens them), records written after it sealed to the old audit
// key (the copy reads them), old records the new keyring no longer reads, secrets the vault no
// longer releases, a rotation made while the vault holder holds secrets opened with the old key.
import { copyFileSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { AuditOpenError, openRecords, storedRecords } from "../../src/audit/log.js";
import { parseHeader, splitRecord } from "../../src/audit/record.js";
import { loadPublicKeyring, unlockKeyring } from "../../src/keyring/keyring.js";
import { openStore } from "../../src/store/db.js";
import { openEgressCa } from "../../src/vault/egress/ca.js";
import { openSecret, policyOf } from "../../src/vault/secrets.js";
import { removeDir, tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { withPassphrase } from "../helpers/passphraseChange.js";
import { rotateByCli } from "../helpers/rotation.js";
import { passphraseEnv, TEST_PASSPHRASE } from "../helpers/state.js";
import { released, vaultWith } from "../helpers/vaultState.js";

const NEW = "the passphrase after the rotation";
const SECRET = "rotate-keys-secret-value-5d2a";
const LATER = "rotate-keys-later-value-91fe";
const WEB = "rotate-keys-web-value-0c44";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/** Each stored secret: whether the data key opens it. */
function opensSecrets(stateDir: string, dataKey: Buffer): Record<string, boolean> {
  const db = openStore(stateDir);
  try {
    const rows = db.prepare("SELECT name, sealed, deliver, hosts_json FROM vault_secrets").all() as {
      name: string;
      sealed: Buffer;
      deliver: string;
      hosts_json: string;
    }[];
    const out: Record<string, boolean> = {};
    for (const r of rows) {
      try {
        openSecret(dataKey, r.name, policyOf(r), r.sealed);
        out[r.name] = true;
      } catch {
        out[r.name] = false;
      }
    }
    return out;
  } finally {
    db.close();
  }
}

describe("portcullis rotate-keys and a copy of the old keyring", () => {
  it("refused while the vault is unlocked; then the vault is resealed, records after it are sealed to the new key, and the old copy opens neither", async () => {
    const stateDir = await vaultWith("api", SECRET, (c) => cleanup.push(c));
    // a secret sent over HTTP: the vault makes its local CA, whose key is sealed under the data key
    const web = await runCli(["vault", "set", "web", "--from-stdin", "--host", "api.example:443"], {
      stateDir,
      env: passphraseEnv(),
      input: WEB,
    });
    expect(web.code, web.stderr).toBe(0);
    const before = readFileSync(join(stateDir, "keyring.json"), "utf8");

    const refused = await rotateByCli(stateDir, passphraseEnv(), NEW);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain("portcullis lock first");
    expect(readFileSync(join(stateDir, "keyring.json"), "utf8")).toBe(before);
    expect((await runCli(["lock"], { stateDir })).code).toBe(0);

    // the thief's copy, made before the rotation
    const thief = tempDir("portcullis-thief-");
    cleanup.push(() => removeDir(thief));
    copyFileSync(join(stateDir, "keyring.json"), join(thief, "keyring.json"));

    const rotated = await rotateByCli(stateDir, passphraseEnv(), NEW, ["--json"]);
    expect(rotated.code, rotated.stderr).toBe(0);
    const summary = JSON.parse(rotated.stdout) as {
      rotationRecord: number;
      secretsResealed: number;
      egressCaResealed: boolean;
    };
    expect(summary.secretsResealed).toBe(2);
    expect(summary.egressCaResealed).toBe(true);

    // a secret stored after the rotation, with the new passphrase
    const set = await runCli(["vault", "set", "later", "--from-stdin", "--deliver", "env"], {
      stateDir,
      env: withPassphrase(NEW),
      input: LATER,
    });
    expect(set.code, set.stderr).toBe(0);

    // the old copy and the old passphrase: no secret opens, no record written since the rotation
    const old = await unlockKeyring(thief, TEST_PASSPHRASE);
    expect(opensSecrets(stateDir, old.dataKey)).toEqual({ api: false, later: false, web: false });
    expect(openEgressCa(stateDir, old.dataKey).ca).toBeNull();
    const now = await unlockKeyring(stateDir, NEW);
    expect(opensSecrets(stateDir, now.dataKey)).toEqual({ api: true, later: true, web: true });
    expect(openEgressCa(stateDir, now.dataKey).ca).not.toBeNull();
    // the old passphrase does not open the new keyring
    await expect(unlockKeyring(stateDir, TEST_PASSPHRASE)).rejects.toThrow(/wrong passphrase/);

    // the vault releases both secrets once unlocked with the new passphrase
    const unlocked = await runCli(["unlock", "--for", "10m"], { stateDir, env: withPassphrase(NEW) });
    expect(unlocked.code, unlocked.stderr).toBe(0);
    expect(await released(stateDir, "api")).toBe(SECRET);
    expect(await released(stateDir, "later")).toBe(LATER);

    const db = openStore(stateDir);
    try {
      const records = [...storedRecords(db)];
      const after = records.filter((r) => parseHeader(splitRecord(r)!.header)!.seq > summary.rotationRecord);
      // keys_rotated and unlock's vault_unlocked at least, each sealed to the new audit key
      expect(after.length).toBeGreaterThanOrEqual(2);
      for (const r of after)
        expect(() => [...openRecords(db, old.auditPrivateKey, [r])]).toThrow(AuditOpenError);
      // the new keyring reads every record, old and new
      const opened = [...openRecords(db, [now.auditPrivateKey, ...now.earlierAuditKeys])];
      expect(opened).toHaveLength(records.length);
      expect(opened.map((r) => r.event.type)).toContain("keys_rotated");
      expect(opened.filter((r) => r.event.type === "vault_unlocked")).toHaveLength(2);
    } finally {
      db.close();
    }

    // the CLI reads the audit with the new passphrase; the chain verifies
    for (const sub of ["sessions", "activity"]) {
      const r = await runCli(["audit", sub], { stateDir, env: withPassphrase(NEW) });
      expect(r.code, r.stderr).toBe(0);
      // keys_rotated is about the state directory: no gateway "without a run" is made of it
      expect(r.stdout).not.toContain("its client sent no request");
    }
    expect((await runCli(["audit", "verify"], { stateDir })).code).toBe(0);
    // one record sealed to the audit key rotated away (init's pin, record 1) opens with the new
    // passphrase too, as rotate-keys --help says of audit show
    const first = await runCli(["audit", "show", "1", "--json"], { stateDir, env: withPassphrase(NEW) });
    expect(first.code, first.stderr).toBe(0);
    const shown = JSON.parse(first.stdout) as { header: { key: string }; event: { type: string } };
    expect(shown.event.type).toBe("approver_key_pinned");
    expect(shown.header.key).not.toBe(loadPublicKeyring(stateDir)!.keyId);

    // the old copy put back in place of keyring.json: refused by a command that takes its passphrase
    const rotatedKeyring = readFileSync(join(stateDir, "keyring.json"));
    copyFileSync(join(thief, "keyring.json"), join(stateDir, "keyring.json"));
    const putBack = await runCli(["audit", "sessions"], { stateDir, env: passphraseEnv() });
    expect(putBack.code).toBe(1);
    expect(putBack.stderr).toMatch(
      /was rotated away \(audit record \d+\): keyring.json is a copy made before that rotation/,
    );
    writeFileSync(join(stateDir, "keyring.json"), rotatedKeyring, { mode: 0o600 });
  }, 30_000);
});
