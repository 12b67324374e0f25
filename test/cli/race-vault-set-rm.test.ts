import { existsSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { askHolder } from "../../src/vault/holder.js";
import { startCli, startedUntilVaultWait } from "../helpers/cliProcess.js";
import { removeDir, tempDir, waitFor } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { passphraseEnv } from "../helpers/state.js";
import { vaultWith } from "../helpers/vaultState.js";

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
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

describe("vault set and vault rm of one secret at once, vault unlocked", () => {
  it("an rm started between set's store write and its put waits for set: what the vault lists and what the holder releases agree", async () => {
    const stateDir = await vaultWith(null, "", (c) => cleanup.push(c));

    const gateDir = tempDir("portcullis-sockgate-");
    const gate = join(gateDir, "open");
    const preload = join(gateDir, "gate.cjs");
    writeFileSync(preload, PRELOAD);
    cleanup.push(() => {
      writeFileSync(gate, "");
      removeDir(gateDir);
    });

    // `vault set api` of a new name: its only connection to the holder is the `put`, after the store write
    const set = startCli(["vault", "set", "api", "--from-stdin", "--deliver", "env"], {
      stateDir,
      env: { NODE_OPTIONS: `--require ${preload}`, SOCK_GATE: gate, SOCK_GATE_AT: "1" },
      input: VALUE,
      onCleanup: (c) => cleanup.push(c),
    });
    await waitFor(
      () => readdirSync(gateDir).some((f) => f.startsWith("open.waiting-")),
      20_000,
      "vault set to reach the holder's put",
    );

    // meanwhile, at another terminal: vault rm api (the store has it: set committed)
    const removing = await startedUntilVaultWait(["vault", "rm", "api"], {
      stateDir,
      onCleanup: (c) => cleanup.push(c),
    });
    writeFileSync(gate, "");
    expect(await set.exited, set.stderr()).toBe(0);
    const rm = await removing.done();
    expect(rm.code, rm.stderr).toBe(0);
    expect(rm.stdout).toBe("secret api removed\n");
    expect(set.stdout()).toContain("secret api stored");
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
    const stateDir = await vaultWith("api", "value-before-both-rotations", (c) => cleanup.push(c));

    const gateDir = tempDir("portcullis-sockgate-");
    const gate = join(gateDir, "open");
    const preload = join(gateDir, "gate.cjs");
    writeFileSync(preload, PRELOAD);
    cleanup.push(() => {
      writeFileSync(gate, "");
      removeDir(gateDir);
    });
    // rotation A: its connections to the holder are `forget` (1), then `put` (2), after its store write
    const a = startCli(["vault", "set", "api", "--from-stdin", "--deliver", "env"], {
      stateDir,
      env: { NODE_OPTIONS: `--require ${preload}`, SOCK_GATE: gate, SOCK_GATE_AT: "2" },
      input: "value-of-rotation-a-1111",
      onCleanup: (c) => cleanup.push(c),
    });
    await waitFor(
      () => readdirSync(gateDir).some((f) => f.startsWith("open.waiting-")),
      20_000,
      "rotation A to reach the holder's put",
    );
    // rotation B, at another terminal
    const rotatingB = await startedUntilVaultWait(
      ["vault", "set", "api", "--from-stdin", "--deliver", "env"],
      {
        stateDir,
        input: "value-of-rotation-b-2222",
        onCleanup: (c) => cleanup.push(c),
      },
    );
    writeFileSync(gate, "");
    expect(await a.exited, a.stderr()).toBe(0);
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
