// `portcullis unlock` racing `vault set` (a rotation) and `vault rm` of the same state directory.
//
// unlock opens every secret with the passphrase (a snapshot of the store), and only later, after
// taking the unlock lock, locking the running holder and waiting for it to end, starts the new
// holder and hands it that snapshot. A `vault set NAME` or `vault rm NAME` that completes in
// between tells the holder it finds over the socket (none, or the old one being replaced) and
// changes the store, but the new holder starts with what the store said before: a rotated secret
// (often one that leaked) is released with its OLD value, and a removed one is released still,
// with `vault list` then saying the removal "was interrupted", though every command succeeded.
//
// Now one vault command at a time holds the vault lock (src/vault/holderProcs.ts, takeVaultLock),
// unlock from before its read of the secrets: the other command waits for it, then updates the
// store and the running holder. The window is made observable without timing guesses: the new
// holder is held at its start by test/fixtures/holder-gate.cjs (before it reads anything), after
// unlock made its snapshot; the other command is started, and the gate opens once it either
// finished (as it did before the lock: the race lost) or says it waits for the unlock.
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { askHolder } from "../../src/vault/holder.js";
import { removeDir, tempDir, waitFor } from "../helpers/files.js";
import { hostEnv, runCli } from "../helpers/gateway.js";
import { CLI, NODE, REPO } from "../helpers/paths.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";

const GATE = join(REPO, "test", "fixtures", "holder-gate.cjs");
const OLD = "old-value-that-leaked-5d1c2a";
const NEW = "new-value-after-rotation-9e4b7f";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/** Starts `portcullis unlock` whose holder waits at the gate; resolves once that holder waits there. */
async function gatedUnlock(stateDir: string) {
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
  const exited = new Promise<number | null>((r) => unlock.once("exit", (code) => r(code)));
  // the holder is spawned only after unlock opened the secrets: from now on its snapshot is made
  await waitFor(
    () => readdirSync(gateDir).some((f) => f.startsWith("open.waiting-")),
    20_000,
    "the new holder to wait at the gate",
  );
  return {
    open: async () => {
      writeFileSync(gate, "");
      const code = await exited;
      return { code, stdout, stderr };
    },
  };
}

/** `portcullis ARGS` started now; resolves once it finished or says it waits for another vault command. */
async function started(stateDir: string, args: string[], input = "") {
  const child: ChildProcess = spawn(NODE, [CLI, ...args], {
    env: hostEnv({ PORTCULLIS_HOME: stateDir, ...passphraseEnv() }),
    stdio: ["pipe", "pipe", "pipe"],
  });
  child.stdin!.end(input);
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (c: Buffer) => {
    stdout += c.toString();
  });
  child.stderr!.on("data", (c: Buffer) => {
    stderr += c.toString();
  });
  const exited = new Promise<number | null>((r) => child.once("close", (code) => r(code)));
  cleanup.push(() => {
    if (child.exitCode === null) child.kill("SIGKILL");
  });
  await waitFor(
    () => child.exitCode !== null || stderr.includes("waiting for another vault command"),
    20_000,
    `${args.join(" ")} to finish or wait for the unlock`,
  );
  return { done: async () => ({ code: await exited, stdout, stderr }) };
}

async function storeSecret(stateDir: string, value: string) {
  const set = await runCli(["vault", "set", "api", "--from-stdin", "--deliver", "env"], {
    stateDir,
    env: passphraseEnv(),
    input: value,
  });
  expect(set.code, set.stderr).toBe(0);
  return set;
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
    const stateDir = newStateDir();
    cleanup.push(async () => {
      await runCli(["lock"], { stateDir });
      removeDir(stateDir);
    });
    await storeSecret(stateDir, OLD);

    const unlock = await gatedUnlock(stateDir);
    // a human rotates the leaked value at another terminal
    const rotating = await started(
      stateDir,
      ["vault", "set", "api", "--from-stdin", "--deliver", "env"],
      NEW,
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
    const stateDir = newStateDir();
    cleanup.push(async () => {
      await runCli(["lock"], { stateDir });
      removeDir(stateDir);
    });
    await storeSecret(stateDir, OLD);

    const unlock = await gatedUnlock(stateDir);
    const removing = await started(stateDir, ["vault", "rm", "api"]);
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
