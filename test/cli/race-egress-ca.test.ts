// Two `vault set NAME --host HOST` (HTTP delivery) at once, the first ones of a state directory,
// while the vault is unlocked.
//
// The first HTTP-delivered secret creates the state directory's local CA (ensureEgressCa:
// `existsSync(egress-ca.pem)`, then a key pair is generated, then egress-ca.key and egress-ca.pem
// are written), and `vault set` hands it to the running holder with its `put`; the holder takes
// the first CA it is given and ignores later ones. Nothing makes the check and the write one step:
// two commands that both find no CA both create one, both say "created the local CA servers will
// trust", and the second's files replace the first's. The holder keeps minting leaves with the
// first CA's key, while egress-ca.pem (what servers are told to trust) is the second's: every
// intercepted HTTPS connection to a declared host fails until the next unlock. In a plain loop of
// the two commands this happened 8 runs out of 8 (and, vault locked, two CAs were made in 10 of 10).
//
// Now one vault command at a time holds the vault lock (src/vault/holderProcs.ts, takeVaultLock),
// the CA's check and write inside it. Deterministic here: a gate preloaded into each `vault set`
// (written by the test) holds it right after its CA check found no CA, before the key pair is
// generated; once each command is at its gate or says it waits for the vault lock, the test lets
// the first one finish, then the second.
import { type ChildProcess, spawn } from "node:child_process";
import { X509Certificate } from "node:crypto";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { askHolder } from "../../src/vault/holder.js";
import { removeDir, tempDir, waitFor } from "../helpers/files.js";
import { hostEnv, runCli } from "../helpers/gateway.js";
import { CLI, NODE } from "../helpers/paths.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";

// Preloaded (NODE_OPTIONS=--require): the first existsSync of an egress-ca.pem that finds none
// writes CA_GATE.waiting-PID and returns (false, what it found) only once CA_GATE exists.
const PRELOAD = `
const fs = require("node:fs");
const gate = process.env.CA_GATE;
const original = fs.existsSync;
let done = false;
fs.existsSync = function (p) {
  const found = original.call(this, p);
  if (gate && !done && !found && String(p).endsWith("egress-ca.pem")) {
    done = true;
    fs.writeFileSync(gate + ".waiting-" + process.pid, "");
    const nap = new Int32Array(new SharedArrayBuffer(4));
    while (!original(gate)) Atomics.wait(nap, 0, 0, 20);
  }
  return found;
};
`;

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

function gatedSet(stateDir: string, name: string, host: string, preload: string, gate: string) {
  const child: ChildProcess = spawn(NODE, [CLI, "vault", "set", name, "--from-stdin", "--host", host], {
    env: hostEnv({
      PORTCULLIS_HOME: stateDir,
      ...passphraseEnv(),
      NODE_OPTIONS: `--require ${preload}`,
      CA_GATE: gate,
    }),
    stdio: ["pipe", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout!.on("data", (c: Buffer) => {
    stdout += c.toString();
  });
  child.stderr!.on("data", (c: Buffer) => {
    stderr += c.toString();
  });
  const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
  cleanup.push(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  });
  child.stdin!.end(`value-of-${name}-7c1d9e3f`);
  return { exited, out: () => ({ stdout, stderr }) };
}

describe("the first two HTTP-delivered secrets stored at once, vault unlocked", () => {
  it("the holder mints leaves under the CA that egress-ca.pem holds, and one CA is created", async () => {
    const stateDir = newStateDir();
    cleanup.push(async () => {
      await runCli(["lock"], { stateDir });
      removeDir(stateDir);
    });
    const unlock = await runCli(["unlock", "--for", "10m"], { stateDir, env: passphraseEnv() });
    expect(unlock.code, unlock.stderr).toBe(0);

    const gateDir = tempDir("portcullis-cagate-");
    const preload = join(gateDir, "gate.cjs");
    writeFileSync(preload, PRELOAD);
    const gateA = join(gateDir, "a");
    const gateB = join(gateDir, "b");
    cleanup.push(() => {
      writeFileSync(gateA, "");
      writeFileSync(gateB, "");
      removeDir(gateDir);
    });

    const a = gatedSet(stateDir, "api-a", "a.example", preload, gateA);
    const b = gatedSet(stateDir, "api-b", "b.example", preload, gateB);
    // each has looked for the CA and found none (the race), or waits for the other (the lock)
    const waitsForLock = (c: typeof a) => c.out().stderr.includes("waiting for another vault command");
    await waitFor(
      () => {
        const f = readdirSync(gateDir);
        return (
          (f.some((n) => n.startsWith("a.waiting-")) || waitsForLock(a)) &&
          (f.some((n) => n.startsWith("b.waiting-")) || waitsForLock(b))
        );
      },
      20_000,
      "each vault set command at its CA check, or waiting for the other",
    );
    // (whichever holds the vault lock goes first; under the race, A then B)
    writeFileSync(gateA, "");
    if (!waitsForLock(a)) expect(await a.exited, a.out().stderr).toBe(0);
    writeFileSync(gateB, "");
    expect(await b.exited, b.out().stderr).toBe(0);
    expect(await a.exited, a.out().stderr).toBe(0);

    const leaf = await askHolder(stateDir, { op: "leaf", host: "a.example" }, 10_000);
    expect(leaf?.ok, JSON.stringify(leaf)).toBe(true);
    const trusted = new X509Certificate(readFileSync(join(stateDir, "egress-ca.pem")));
    const minted = new X509Certificate(leaf!.cert as string);
    const created = [a, b].filter((c) => c.out().stdout.includes("created the local CA")).length;
    expect({ leafVerifiesUnderTrustedCa: minted.verify(trusted.publicKey), casCreated: created }).toEqual({
      leafVerifiesUnderTrustedCa: true,
      casCreated: 1,
    });
  });
});
