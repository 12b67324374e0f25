// `portcullis vault rm NAME` killed with SIGKILL while the vault is unlocked. rm tells the running
// vault holder to forget the secret, then removes it from the store (src/cli/vaultRm.ts).
// Killed between the two, the vault still lists a secret the holder no longer releases (calls
// that need it are refused; `vault list` says so), never the other way round: before, the store
// went first, and an rm killed there left a holder releasing, to every gateway that asked until
// the unlock ran out, a secret no list showed; rm again said "there is no secret named NAME" and
// never reached the holder. An rm of a name the store lacks still tells the holder to forget it.
//
// The kill point is made observable, not guessed: a preload (written by the test, inert in every
// process but a `vault rm`) stops the rm once the holder has answered its forget (as the rm
// closes that connection), and leaves a marker; then the test SIGKILLs it.
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openStore } from "../../src/store/db.js";
import { waitFor } from "../helpers/files.js";
import { hostEnv, runCli } from "../helpers/gateway.js";
import { CLI, NODE } from "../helpers/paths.js";
import { passphraseEnv } from "../helpers/state.js";
import { holderAnsweredGate, released, storedNames, vaultWith } from "../helpers/vaultState.js";

const SECRET = "vault-rm-killed-value-8c1f7d2e";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

describe("portcullis vault rm killed with SIGKILL while the vault is unlocked", () => {
  it("after the holder forgot the secret, before the store did: nothing is released that the vault does not list, list says so, and rm again finishes", async () => {
    const stateDir = await vaultWith("api", SECRET, (c) => cleanup.push(c));
    expect(await released(stateDir, "api")).toBe(SECRET);

    const g = holderAnsweredGate("rm", (c) => cleanup.push(c));
    const rm: ChildProcess = spawn(NODE, [CLI, "vault", "rm", "api"], {
      env: hostEnv({ PORTCULLIS_HOME: stateDir, ...passphraseEnv(), ...g.env }),
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    rm.stdout!.on("data", (c: Buffer) => {
      stdout += c.toString();
    });
    rm.stderr!.on("data", (c: Buffer) => {
      stderr += c.toString();
    });
    const exited = new Promise<NodeJS.Signals | null>((resolve) => rm.on("close", (_c, s) => resolve(s)));
    cleanup.push(async () => {
      if (rm.exitCode === null && rm.signalCode === null) rm.kill("SIGKILL");
      await exited;
    });
    const pid = await waitFor(
      () => g.waiting() ?? (rm.exitCode !== null ? -1 : 0),
      20_000,
      "vault rm to have the holder's answer",
    );
    expect(pid, stderr).toBe(rm.pid);
    // the holder has forgotten it; the store has not yet
    expect(storedNames(stateDir)).toEqual(["api"]);
    expect(await released(stateDir, "api")).toBeNull();
    rm.kill("SIGKILL");
    expect(await exited).toBe("SIGKILL");
    expect(stdout).not.toContain("removed");

    // the vault lists it, says the holder does not hold it, and nothing releases it
    const list = await runCli(["vault", "list", "--json"], { stateDir });
    expect(list.code, list.stderr).toBe(0);
    const listed = JSON.parse(list.stdout) as {
      unlocked: boolean;
      secrets: { name: string; held: boolean | null }[];
      heldNotStored: string[];
    };
    expect(listed.unlocked).toBe(true);
    expect(listed.secrets.map((s) => [s.name, s.held])).toEqual([["api", false]]);
    expect(listed.heldNotStored).toEqual([]);
    const text = await runCli(["vault", "list"], { stateDir });
    expect(text.stdout).toMatch(/warning: the running vault holder does not hold it/);
    expect(text.stdout).not.toContain(SECRET);

    // the user runs the command again: it finishes
    const again = await runCli(["vault", "rm", "api"], { stateDir, env: passphraseEnv() });
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toBe("secret api removed\n");
    expect(storedNames(stateDir)).toEqual([]);
    expect(await released(stateDir, "api")).toBeNull();

    // and the chain still verifies
    const verify = await runCli(["audit", "verify", "--json"], { stateDir });
    expect(verify.code, verify.stderr).toBe(0);
    expect(existsSync(join(stateDir, "vault.sock"))).toBe(true);
  });

  it("a name the store lacks but a running holder still holds (an rm interrupted by an older version): list warns, and rm ends the release", async () => {
    const stateDir = await vaultWith("api", SECRET, (c) => cleanup.push(c));
    // the store forgets it behind the holder's back (what the older rm's kill left)
    const db = openStore(stateDir);
    try {
      db.prepare("DELETE FROM vault_secrets WHERE name = 'api'").run();
    } finally {
      db.close();
    }
    expect(await released(stateDir, "api")).toBe(SECRET);
    const list = await runCli(["vault", "list", "--json"], { stateDir });
    expect(JSON.parse(list.stdout).heldNotStored).toEqual(["api"]);
    const text = await runCli(["vault", "list"], { stateDir });
    expect(text.stdout).toMatch(
      /warning: the running vault holder still releases api, which the vault no longer lists/,
    );

    const rm = await runCli(["vault", "rm", "api"], { stateDir, env: passphraseEnv() });
    expect(rm.code).toBe(2);
    expect(rm.stderr).toContain("there is no secret by that name");
    expect(await released(stateDir, "api")).toBeNull();
  });
});
