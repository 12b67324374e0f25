// `portcullis unlock` killed with SIGKILL while its vault holder starts. The holder, not the unlock,
// records `vault_unlocked`, before it answers anyone, and `vault_locked` when it stops: before,
// the unlock recorded it once it heard `ready`, and an unlock killed after the holder was ready
// left a vault unlocked (a holder answering gateways with the opened secrets) with nothing in the
// chain saying so; a later `lock` then recorded a `vault_locked` that followed no `vault_unlocked`.
//
// The kill point is made observable without timing guesses: the holder is held at its start by
// test/fixtures/holder-gate.cjs; the test takes the store's write lock (as another program
// writing the store would), opens the gate, waits until the holder listens (its record then waits
// for the store), and kills the unlock. Nothing may be released before the record is in; once the
// lock goes, the holder records it, finds its unlock gone (it cannot say `ready`), locks itself
// and records that too.
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openStore } from "../../src/store/db.js";
import { askHolder } from "../../src/vault/holder.js";
import { alive, removeDir, tempDir, waitFor } from "../helpers/files.js";
import { hostEnv, runCli } from "../helpers/gateway.js";
import { CLI, NODE, REPO } from "../helpers/paths.js";
import { passphraseEnv } from "../helpers/state.js";
import { vaultRecords, vaultWith } from "../helpers/vaultState.js";

const SECRET = "unlock-killed-value-41d9e6b0";
const GATE = join(REPO, "test", "fixtures", "holder-gate.cjs");

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

describe("portcullis unlock killed with SIGKILL", () => {
  it("while its holder records the unlock: nothing is released before the record, and the holder that cannot say ready records its lock", async () => {
    const stateDir = await vaultWith("api", SECRET, (c) => cleanup.push(c), false);

    const gateDir = tempDir("portcullis-gate-");
    const gate = join(gateDir, "open");
    cleanup.push(() => {
      writeFileSync(gate, "");
      removeDir(gateDir);
    });
    const unlock: ChildProcess = spawn(NODE, [CLI, "unlock", "--for", "10m"], {
      env: hostEnv({
        PORTCULLIS_HOME: stateDir,
        ...passphraseEnv(),
        NODE_OPTIONS: `--require ${GATE}`,
        HOLDER_GATE: gate,
      }),
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    unlock.stdout!.on("data", (c: Buffer) => {
      stdout += c.toString();
    });
    unlock.stderr!.on("data", (c: Buffer) => {
      stderr += c.toString();
    });
    const exited = new Promise<NodeJS.Signals | null>((resolve) => unlock.on("close", (_c, s) => resolve(s)));
    cleanup.push(async () => {
      if (unlock.exitCode === null && unlock.signalCode === null) unlock.kill("SIGKILL");
      await exited;
    });
    await waitFor(
      () => {
        if (unlock.exitCode !== null) throw new Error(`unlock exited: ${stderr}`);
        return readdirSync(gateDir).some((n) => n.startsWith("open.waiting-"));
      },
      20_000,
      "the unlock's holder to be starting",
    );

    // another writer holds the store: the holder's record waits for it
    const other = openStore(stateDir);
    other.exec("BEGIN IMMEDIATE");
    try {
      writeFileSync(gate, "");
      await waitFor(() => existsSync(join(stateDir, "vault.sock")), 20_000, "the holder to listen");
      const pid = unlock.pid!;
      unlock.kill("SIGKILL");
      expect(await exited).toBe("SIGKILL");
      expect(alive(pid)).toBe(false);
      // nothing is released while nothing in the chain says the vault is unlocked
      expect(await askHolder(stateDir, { op: "release", scope: "api" })).toBeNull();
      expect(vaultRecords(stateDir)).toEqual([]);
    } finally {
      other.exec("ROLLBACK");
      other.close();
    }
    expect(stdout).not.toContain("vault unlocked");

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
});
