import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openStore } from "../../src/store/db.js";
import { askHolder } from "../../src/vault/holder.js";
import { unlockWithHeldHolder } from "../helpers/cliProcess.js";
import { alive, waitFor } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { REPO } from "../helpers/paths.js";
import { passphraseEnv } from "../helpers/state.js";
import { vaultRecords, vaultWith } from "../helpers/vaultState.js";

const SECRET = "unlock-killed-value-41d9e6b0";
const _GATE = join(REPO, "test", "fixtures", "holder-gate.cjs");

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

describe("portcullis unlock killed with SIGKILL", () => {
  it("while its holder records the unlock: nothing is released before the record, and the holder that cannot say ready records its lock", async () => {
    const stateDir = await vaultWith("api", SECRET, (c) => cleanup.push(c), false);

    const { unlock, open } = await unlockWithHeldHolder(stateDir, (c) => cleanup.push(c));
    const exited = new Promise<NodeJS.Signals | null>((resolve) =>
      unlock.child.once("close", (_c, s) => resolve(s)),
    );

    // another writer holds the store: the holder's record waits for it
    const other = openStore(stateDir);
    other.exec("BEGIN IMMEDIATE");
    try {
      open();
      await waitFor(() => existsSync(join(stateDir, "vault.sock")), 20_000, "the holder to listen");
      const pid = unlock.child.pid!;
      unlock.child.kill("SIGKILL");
      expect(await exited).toBe("SIGKILL");
      expect(alive(pid)).toBe(false);
      // nothing is released while nothing in the chain says the vault is unlocked
      expect(await askHolder(stateDir, { op: "release", scope: "api" })).toBeNull();
      expect(vaultRecords(stateDir)).toEqual([]);
    } finally {
      other.exec("ROLLBACK");
      other.close();
    }
    expect(unlock.stdout()).not.toContain("vault unlocked");

    // the holder recorded its unlock, could not tell its unlock it was ready, and locked itself
    await waitFor(() => vaultRecords(stateDir).length === 2 || undefined, 20_000, "the holder's two records");
    expect(vaultRecords(stateDir)).toEqual(["vault_unlocked", "vault_locked"]);
    await waitFor(async () => !existsSync(join(stateDir, "vault.sock")), 20_000, "the holder gone");
    expect(await askHolder(stateDir, { op: "release", scope: "api" })).toBeNull();
    const list = await runCli(["vault", "list", "--json"], { stateDir });
    expect(JSON.parse(list.stdout).unlocked).toBe(false);

    const verify = await runCli(["audit", "verify", "--json"], { stateDir });
    expect(verify.code, verify.stderr).toBe(0);

    // the next unlock does not wait for the killed one; lock follows it in the chain
    const again = await runCli(["unlock", "--for", "10m"], { stateDir, env: passphraseEnv() });
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).not.toContain("waiting for another");
    expect(vaultRecords(stateDir)).toEqual(["vault_unlocked", "vault_locked", "vault_unlocked"]);
    const lock = await runCli(["lock"], { stateDir });
    expect(lock.stdout).toBe("vault locked\n");
    expect(vaultRecords(stateDir)).toEqual([
      "vault_unlocked",
      "vault_locked",
      "vault_unlocked",
      "vault_locked",
    ]);
  });

  it("a holder whose record cannot be written (another program's lock past the busy timeout) serves nobody, and unlock says the vault was not unlocked", async () => {
    const stateDir = await vaultWith("api", SECRET, (c) => cleanup.push(c), false);
    const { unlock, open } = await unlockWithHeldHolder(stateDir, (c) => cleanup.push(c), {
      PORTCULLIS_BUSY_TIMEOUT_MS: "300",
    });
    const other = openStore(stateDir);
    other.exec("BEGIN IMMEDIATE");
    try {
      open();
      expect(await unlock.exited).toBe(2);
    } finally {
      other.exec("ROLLBACK");
      other.close();
    }
    expect(unlock.stderr()).toMatch(
      /the vault was not unlocked: its record could not be written to the audit log/,
    );
    expect(unlock.stdout()).not.toContain("vault unlocked");
    expect(existsSync(join(stateDir, "vault.sock"))).toBe(false);
    expect(await askHolder(stateDir, { op: "release", scope: "api" })).toBeNull();
    expect(vaultRecords(stateDir)).toEqual([]);
    const list = await runCli(["vault", "list", "--json"], { stateDir });
    expect(JSON.parse(list.stdout).unlocked).toBe(false);
  });
});
