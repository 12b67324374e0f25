import { X509Certificate } from "node:crypto";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { askHolder } from "../../src/vault/holder.js";
import { startCli } from "../helpers/cliProcess.js";
import { removeDir, tempDir, waitFor } from "../helpers/files.js";
import { vaultWith } from "../helpers/vaultState.js";

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
  const p = startCli(["vault", "set", name, "--from-stdin", "--host", host], {
    stateDir,
    env: { NODE_OPTIONS: `--require ${preload}`, CA_GATE: gate },
    input: `value-of-${name}-7c1d9e3f`,
    onCleanup: (c) => cleanup.push(c),
  });
  return { exited: p.exited, out: () => ({ stdout: p.stdout(), stderr: p.stderr() }) };
}

describe("the first two HTTP-delivered secrets stored at once, vault unlocked", () => {
  it("the holder mints leaves under the CA that egress-ca.pem holds, and one CA is created", async () => {
    const stateDir = await vaultWith(null, "", (c) => cleanup.push(c));

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
