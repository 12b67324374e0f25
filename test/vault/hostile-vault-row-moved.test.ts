// A same-user process that edits the store with SQL moves one secret's sealed value under another
// secret's name: both stored for the same host and delivery, so the edit changes no policy. Were
// the name not bound to the sealed value, the scope a human reviews and grants (`staging`) would
// release another secret's value (`prod`). The name is part of the associated data the value is
// sealed with (src/vault/secrets.ts), so the moved row does not open: `unlock` refuses, and no
// holder serves anything.
import { existsSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { runCli } from "../helpers/gateway.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";
import { storeSecret } from "./helpers.js";

const STAGING = "staging-value-0b1e2c93d4";
const PROD = "prod-value-9f8e7d6c5b4a";
const HOST = ["--host", "api.example.com:443"];

let stateDirs: string[] = [];
afterEach(async () => {
  for (const stateDir of stateDirs) await runCli(["lock"], { stateDir });
  stateDirs = [];
});

describe("a sealed value moved under another name with SQL", () => {
  it("does not open: unlock refuses naming the row, shows neither value, and no holder serves", async () => {
    const stateDir = newStateDir();
    stateDirs.push(stateDir);
    const env = passphraseEnv();
    await storeSecret(stateDir, "staging", STAGING, ...HOST);
    await storeSecret(stateDir, "prod", PROD, ...HOST);
    // the same delivery and hosts: only the name differs between the two rows
    const listed = JSON.parse((await runCli(["vault", "list", "--json"], { stateDir })).stdout).secrets;
    expect(listed.map((s: { hosts: string[] }) => s.hosts)).toEqual([
      ["api.example.com:443"],
      ["api.example.com:443"],
    ]);
    // before the edit, the vault opens (so the refusal below is the edit's doing)
    const first = await runCli(["unlock"], { stateDir, env });
    expect(first.code, first.stderr).toBe(0);
    expect((await runCli(["lock"], { stateDir })).code).toBe(0);

    const db = new Database(join(stateDir, "portcullis.db"));
    const prod = db.prepare("SELECT sealed, bytes FROM vault_secrets WHERE name = 'prod'").get() as {
      sealed: Buffer;
      bytes: number;
    };
    db.prepare("UPDATE vault_secrets SET sealed = ?, bytes = ? WHERE name = 'staging'").run(
      prod.sealed,
      prod.bytes,
    );
    db.close();

    const unlock = await runCli(["unlock"], { stateDir, env });
    expect(unlock.code).toBe(2);
    expect(unlock.stderr).toContain("the stored secret staging does not open");
    for (const out of [unlock.stdout, unlock.stderr]) {
      expect(out).not.toContain(PROD);
      expect(out).not.toContain(STAGING);
    }
    expect(existsSync(join(stateDir, "vault.sock"))).toBe(false);
    const after = JSON.parse((await runCli(["vault", "list", "--json"], { stateDir })).stdout);
    expect(after.unlocked).toBe(false);
  });
});
