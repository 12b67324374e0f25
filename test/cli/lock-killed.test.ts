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
import { alive, waitFor } from "../helpers/files.js";
import { hostEnv, runCli } from "../helpers/gateway.js";
import { CLI, NODE } from "../helpers/paths.js";
import { vaultRecords, vaultWith } from "../helpers/vaultState.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

describe("portcullis lock killed with SIGKILL", () => {
  it("after the holder locked, while its record waits for the store: the chain says the vault was locked", async () => {
    const stateDir = await vaultWith("api", "lock-killed-value-0b7d3a91", (c) => cleanup.push(c));
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
