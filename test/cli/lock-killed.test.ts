// `portcullis lock` killed with SIGKILL after the vault holder locked. The holder records its own
// `vault_locked` as it ends (what it held wiped first), and `lock` waits for it: before, `lock`
// wrote the record after the holder's answer, and a kill between left the chain's last word on
// the vault `vault_unlocked` with its later `until`, while `lock` again said "the vault was
// already locked" and recorded nothing.
//
// The kill point is observable without timing guesses: the test holds the store's write lock
// (as another program writing the store would: the holder's record waits for it), runs `lock`,
// waits until the holder no longer answers, and kills `lock`.
import { type ChildProcess, spawn } from "node:child_process";
import { afterEach, describe, expect, it } from "vitest";
import { openStore } from "../../src/store/db.js";
import { askHolder } from "../../src/vault/holder.js";
import { alive, removeDir, waitFor } from "../helpers/files.js";
import { hostEnv, runCli } from "../helpers/gateway.js";
import { CLI, NODE } from "../helpers/paths.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/** The header types of the chain's vault records, in order. */
function vaultRecords(stateDir: string): string[] {
  const db = openStore(stateDir);
  try {
    return (db.prepare("SELECT record FROM audit_records ORDER BY seq").pluck().all() as Buffer[])
      .map((r) => /"type":"([a-z_]+)"/.exec(r.toString("latin1", 0, r.indexOf(0x0a)))![1]!)
      .filter((t) => t.startsWith("vault_"));
  } finally {
    db.close();
  }
}

describe("portcullis lock killed with SIGKILL", () => {
  it("after the holder locked, while its record waits for the store: the chain says the vault was locked", async () => {
    const stateDir = newStateDir();
    cleanup.push(async () => {
      await runCli(["lock"], { stateDir });
      removeDir(stateDir);
    });
    const set = await runCli(["vault", "set", "api", "--from-stdin", "--deliver", "env"], {
      stateDir,
      env: passphraseEnv(),
      input: "lock-killed-value-0b7d3a91",
    });
    expect(set.code, set.stderr).toBe(0);
    const unlock = await runCli(["unlock", "--for", "10m"], { stateDir, env: passphraseEnv() });
    expect(unlock.code, unlock.stderr).toBe(0);
    expect(vaultRecords(stateDir)).toEqual(["vault_unlocked"]);

    const other = openStore(stateDir);
    other.exec("BEGIN IMMEDIATE");
    let lock: ChildProcess | undefined;
    try {
      lock = spawn(NODE, [CLI, "lock"], {
        env: hostEnv({ PORTCULLIS_HOME: stateDir }),
        stdio: ["ignore", "pipe", "pipe"],
      });
      const child = lock;
      let stdout = "";
      child.stdout!.on("data", (c: Buffer) => {
        stdout += c.toString();
      });
      const exited = new Promise<NodeJS.Signals | null>((resolve) =>
        child.on("close", (_c, s) => resolve(s)),
      );
      cleanup.push(async () => {
        if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
        await exited;
      });
      await waitFor(
        async () => (await askHolder(stateDir, { op: "status" })) === null,
        20_000,
        "the holder to be locked",
      );
      expect(child.exitCode).toBeNull();
      const pid = child.pid!;
      child.kill("SIGKILL");
      expect(await exited).toBe("SIGKILL");
      expect(alive(pid)).toBe(false);
      expect(stdout).toBe("");
    } finally {
      other.exec("ROLLBACK");
      other.close();
    }

    // the holder writes its record once the store is free
    await waitFor(() => vaultRecords(stateDir).length === 2 || undefined, 20_000, "the holder's record");
    expect(vaultRecords(stateDir)).toEqual(["vault_unlocked", "vault_locked"]);
    const list = await runCli(["vault", "list", "--json"], { stateDir });
    expect(JSON.parse(list.stdout).unlocked).toBe(false);

    // running lock again changes nothing, and the chain still verifies
    const again = await runCli(["lock"], { stateDir });
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toBe("the vault was already locked\n");
    expect(vaultRecords(stateDir)).toEqual(["vault_unlocked", "vault_locked"]);
    const verify = await runCli(["audit", "verify", "--json"], { stateDir });
    expect(verify.code, verify.stderr).toBe(0);
  });
});
