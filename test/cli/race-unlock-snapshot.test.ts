import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { askHolder } from "../../src/vault/holder.js";
import { startedUntilVaultWait, unlockWithHeldHolder } from "../helpers/cliProcess.js";
import { runCli } from "../helpers/gateway.js";
import { REPO } from "../helpers/paths.js";
import { vaultWith } from "../helpers/vaultState.js";

const _GATE = join(REPO, "test", "fixtures", "holder-gate.cjs");
const OLD = "old-value-that-leaked-5d1c2a";
const NEW = "new-value-after-rotation-9e4b7f";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/** unlock, its new holder held at its start (after unlock opened the secrets) until `open()`. */
async function gatedUnlock(stateDir: string) {
  const { unlock, open } = await unlockWithHeldHolder(stateDir, (c) => cleanup.push(c));
  return {
    open: async () => {
      open();
      const code = await unlock.exited;
      return { code, stdout: unlock.stdout(), stderr: unlock.stderr() };
    },
  };
}

async function listed(stateDir: string) {
  const list = await runCli(["vault", "list", "--json"], { stateDir });
  expect(list.code, list.stderr).toBe(0);
  return JSON.parse(list.stdout) as {
    unlocked: boolean;
    secrets: { name: string; held: boolean | null }[];
    heldNotStored: string[];
  };
}

describe("unlock racing vault set / vault rm", () => {
  it("a secret rotated while unlock starts its holder: the holder releases the new value, not the old one", async () => {
    const stateDir = await vaultWith("api", OLD, (c) => cleanup.push(c), false);

    const unlock = await gatedUnlock(stateDir);
    // a human rotates the leaked value at another terminal
    const rotating = await startedUntilVaultWait(
      ["vault", "set", "api", "--from-stdin", "--deliver", "env"],
      {
        stateDir,
        input: NEW,
        onCleanup: (c) => cleanup.push(c),
      },
    );
    const u = await unlock.open();
    expect(u.code, u.stderr).toBe(0);
    const rotated = await rotating.done();
    expect(rotated.code, rotated.stderr).toBe(0);
    expect(rotated.stdout).toContain("secret api rotated");
    expect(existsSync(join(stateDir, "vault.sock"))).toBe(true);

    // both commands said they succeeded; the vault lists the rotated secret as held...
    const list = await listed(stateDir);
    expect(list.unlocked).toBe(true);
    expect(list.secrets.map((s) => [s.name, s.held])).toEqual([["api", true]]);
    // ...so what the holder releases must be the value the store now has, never the rotated-out one
    const released = await askHolder(stateDir, { op: "release", scope: "api" });
    expect(released?.value).not.toBe(OLD);
    expect(released).toEqual({ ok: true, value: NEW });
  });

  it("a secret removed while unlock starts its holder: the holder does not release it", async () => {
    const stateDir = await vaultWith("api", OLD, (c) => cleanup.push(c), false);

    const unlock = await gatedUnlock(stateDir);
    const removing = await startedUntilVaultWait(["vault", "rm", "api"], {
      stateDir,
      onCleanup: (c) => cleanup.push(c),
    });
    const u = await unlock.open();
    expect(u.code, u.stderr).toBe(0);
    const rm = await removing.done();
    expect(rm.code, rm.stderr).toBe(0);
    expect(rm.stdout).toBe("secret api removed\n");

    // nothing was interrupted: the vault lists no secret, and the holder holds none
    const list = await listed(stateDir);
    expect(list.secrets).toEqual([]);
    expect(list.heldNotStored).toEqual([]);
    expect(await askHolder(stateDir, { op: "release", scope: "api" })).toEqual({
      ok: false,
      error: "credential_missing",
    });
  });
});
