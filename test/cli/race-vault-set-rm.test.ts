// `vault set NAME` and `vault rm NAME` of the same secret at once, while the vault is unlocked.
//
// `vault set` writes the store (putSecret), then tells the running holder (`put`); `vault rm`
// tells the holder (`forget`), then removes the secret from the store. Nothing orders the two
// commands: an rm that runs entirely between set's store write and set's `put` removes the secret
// from the store and from a holder that does not have it yet; set's `put` then hands the holder a
// secret the store no longer has. Both commands exit 0 (stored, removed), and the holder releases
// a secret that no list shows (`vault list` blames an interrupted removal) — exactly the state
// src/cli/vault.ts (vaultRm) says its order of operations never leaves. Two rotations of one
// secret at once end the same way: the store has the last one written, the holder the last one
// `put`, and `vault list` says it is held.
//
// Seen in a plain loop of the two commands (about one run in fifteen). Now one vault command at a
// time holds the vault lock (src/vault/holderProcs.ts, takeVaultLock) from its store write to the
// holder's answer. Made deterministic with a gate preloaded into `vault set` (written by the test,
// as test/fixtures/holder-gate.cjs gates a holder): it holds the command just before it connects
// to the holder's socket for the `put`, after its store write committed; the other command is
// started there and the gate opens once it either finished (the race lost, as before the lock) or
// says it waits for the vault lock. No mock: the real CLI, the real holder, the real store.
import { spawn } from "node:child_process";
import { existsSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { askHolder } from "../../src/vault/holder.js";
import { removeDir, tempDir, waitFor } from "../helpers/files.js";
import { hostEnv, runCli } from "../helpers/gateway.js";
import { CLI, NODE } from "../helpers/paths.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";

const VALUE = "value-of-the-race-8f3e2d1c";

// Preloaded into the gated command (NODE_OPTIONS=--require): the Nth connection it opens to a
// vault holder's socket waits, before it is made, until the file SOCK_GATE names exists (having
// written SOCK_GATE.waiting-PID). Atomics.wait: the command does nothing meanwhile.
const PRELOAD = `
const net = require("node:net");
const { existsSync, writeFileSync } = require("node:fs");
const gate = process.env.SOCK_GATE;
const at = Number(process.env.SOCK_GATE_AT);
const original = net.createConnection;
let n = 0;
net.createConnection = function (...args) {
  if (gate && String(args[0]).endsWith("vault.sock") && ++n === at) {
    writeFileSync(gate + ".waiting-" + process.pid, "");
    const nap = new Int32Array(new SharedArrayBuffer(4));
    while (!existsSync(gate)) Atomics.wait(nap, 0, 0, 20);
  }
  return original.apply(this, args);
};
`;

let cleanup: (() => Promise<void> | void)[] = [];

/** `portcullis ARGS` started now; resolves once it finished or says it waits for another vault command. */
async function started(stateDir: string, args: string[], input = "") {
  const child = spawn(NODE, [CLI, ...args], {
    env: hostEnv({ PORTCULLIS_HOME: stateDir, ...passphraseEnv() }),
    stdio: ["pipe", "pipe", "pipe"],
  });
  child.stdin.end(input);
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (c: Buffer) => {
    stdout += c.toString();
  });
  child.stderr.on("data", (c: Buffer) => {
    stderr += c.toString();
  });
  const exited = new Promise<number | null>((r) => child.once("close", (code) => r(code)));
  cleanup.push(() => {
    if (child.exitCode === null) child.kill("SIGKILL");
  });
  await waitFor(
    () => child.exitCode !== null || stderr.includes("waiting for another vault command"),
    20_000,
    `${args.join(" ")} to finish or wait for the vault lock`,
  );
  return { done: async () => ({ code: await exited, stdout, stderr }) };
}
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

describe("vault set and vault rm of one secret at once, vault unlocked", () => {
  it("an rm started between set's store write and its put waits for set: what the vault lists and what the holder releases agree", async () => {
    const stateDir = newStateDir();
    cleanup.push(async () => {
      await runCli(["lock"], { stateDir });
      removeDir(stateDir);
    });
    const unlock = await runCli(["unlock", "--for", "10m"], { stateDir, env: passphraseEnv() });
    expect(unlock.code, unlock.stderr).toBe(0);

    const gateDir = tempDir("portcullis-sockgate-");
    const gate = join(gateDir, "open");
    const preload = join(gateDir, "gate.cjs");
    writeFileSync(preload, PRELOAD);
    cleanup.push(() => {
      writeFileSync(gate, "");
      removeDir(gateDir);
    });

    // `vault set api` of a new name: its only connection to the holder is the `put`, after the store write
    const set = spawn(NODE, [CLI, "vault", "set", "api", "--from-stdin", "--deliver", "env"], {
      env: hostEnv({
        PORTCULLIS_HOME: stateDir,
        ...passphraseEnv(),
        NODE_OPTIONS: `--require ${preload}`,
        SOCK_GATE: gate,
        SOCK_GATE_AT: "1",
      }),
      stdio: ["pipe", "pipe", "pipe"],
    });
    let setOut = "";
    let setErr = "";
    set.stdout.on("data", (c: Buffer) => {
      setOut += c.toString();
    });
    set.stderr.on("data", (c: Buffer) => {
      setErr += c.toString();
    });
    const setExit = new Promise<number | null>((r) => set.once("exit", (code) => r(code)));
    set.stdin.end(VALUE);
    await waitFor(
      () => readdirSync(gateDir).some((f) => f.startsWith("open.waiting-")),
      20_000,
      "vault set to reach the holder's put",
    );

    // meanwhile, at another terminal: vault rm api (the store has it: set committed)
    const removing = await started(stateDir, ["vault", "rm", "api"]);
    writeFileSync(gate, "");
    expect(await setExit, setErr).toBe(0);
    const rm = await removing.done();
    expect(rm.code, rm.stderr).toBe(0);
    expect(rm.stdout).toBe("secret api removed\n");
    expect(setOut).toContain("secret api stored");
    expect(existsSync(join(stateDir, "vault.sock"))).toBe(true);

    // Both succeeded; in either order the secret ends up neither stored nor released (set then
    // rm), or rm would have found nothing to remove. What the vault lists and what the holder
    // releases must agree.
    const list = await runCli(["vault", "list", "--json"], { stateDir });
    expect(list.code, list.stderr).toBe(0);
    const listed = JSON.parse(list.stdout) as {
      secrets: { name: string; held: boolean }[];
      heldNotStored: string[];
    };
    const released = await askHolder(stateDir, { op: "release", scope: "api" });
    const stored = listed.secrets.some((s) => s.name === "api");
    expect({ stored, released: released?.ok === true, heldNotStored: listed.heldNotStored }).toEqual({
      stored,
      released: stored,
      heldNotStored: [],
    });
  });

  it("two rotations at once take turns: the holder releases the value the store has", async () => {
    const stateDir = newStateDir();
    cleanup.push(async () => {
      await runCli(["lock"], { stateDir });
      removeDir(stateDir);
    });
    const first = await runCli(["vault", "set", "api", "--from-stdin", "--deliver", "env"], {
      stateDir,
      env: passphraseEnv(),
      input: "value-before-both-rotations",
    });
    expect(first.code, first.stderr).toBe(0);
    const unlock = await runCli(["unlock", "--for", "10m"], { stateDir, env: passphraseEnv() });
    expect(unlock.code, unlock.stderr).toBe(0);

    const gateDir = tempDir("portcullis-sockgate-");
    const gate = join(gateDir, "open");
    const preload = join(gateDir, "gate.cjs");
    writeFileSync(preload, PRELOAD);
    cleanup.push(() => {
      writeFileSync(gate, "");
      removeDir(gateDir);
    });
    // rotation A: its connections to the holder are `forget` (1), then `put` (2), after its store write
    const a = spawn(NODE, [CLI, "vault", "set", "api", "--from-stdin", "--deliver", "env"], {
      env: hostEnv({
        PORTCULLIS_HOME: stateDir,
        ...passphraseEnv(),
        NODE_OPTIONS: `--require ${preload}`,
        SOCK_GATE: gate,
        SOCK_GATE_AT: "2",
      }),
      stdio: ["pipe", "pipe", "pipe"],
    });
    let aErr = "";
    a.stderr.on("data", (c: Buffer) => {
      aErr += c.toString();
    });
    const aExit = new Promise<number | null>((r) => a.once("exit", (code) => r(code)));
    a.stdin.end("value-of-rotation-a-1111");
    await waitFor(
      () => readdirSync(gateDir).some((f) => f.startsWith("open.waiting-")),
      20_000,
      "rotation A to reach the holder's put",
    );
    // rotation B, at another terminal
    const rotatingB = await started(
      stateDir,
      ["vault", "set", "api", "--from-stdin", "--deliver", "env"],
      "value-of-rotation-b-2222",
    );
    writeFileSync(gate, "");
    expect(await aExit, aErr).toBe(0);
    const b = await rotatingB.done();
    expect(b.code, b.stderr).toBe(0);

    // what the running holder releases, and what the vault lists
    const released = (await askHolder(stateDir, { op: "release", scope: "api" }))?.value;
    const list = await runCli(["vault", "list", "--json"], { stateDir });
    const listed = JSON.parse(list.stdout) as { secrets: { name: string; held: boolean }[] };
    expect(listed.secrets.map((s) => [s.name, s.held])).toEqual([["api", true]]);
    // what the store holds: the value a fresh unlock hands its holder (B's: the last write)
    expect((await runCli(["lock"], { stateDir })).code).toBe(0);
    const again = await runCli(["unlock", "--for", "10m"], { stateDir, env: passphraseEnv() });
    expect(again.code, again.stderr).toBe(0);
    const stored = (await askHolder(stateDir, { op: "release", scope: "api" }))?.value;
    expect(stored).toBe("value-of-rotation-b-2222");
    expect(released, "the holder released a value the store no longer has").toBe(stored);
  });
});
