// The local CA that servers trust for HTTP delivery: its key is sealed in the state directory and
// opened only by the vault holder, which mints leaves for the hosts an HTTP-delivered secret's
// stored policy names and for nothing else. Attacked the way a same-user agent would: reading the
// files, asking the holder's socket for a leaf of its own choosing, swapping the certificate the
// sealed key is bound to. Real CLI, real holder process.
import { createPublicKey, X509Certificate } from "node:crypto";
import { copyFileSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { askHolder } from "../../src/vault/holder.js";
import { runCli } from "../helpers/gateway.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";

let cleanup: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const DECLARED = "api.inventory.example:8443";
/** a leaf names a host (its port is the connection's business) */
const HOST = "api.inventory.example";

async function httpSecret(stateDir: string): Promise<void> {
  const r = await runCli(["vault", "set", "inventory-api", "--from-stdin", "--host", DECLARED], {
    stateDir,
    env: passphraseEnv(),
    input: "ca-holder-test-value-5e1f",
  });
  expect(r.code, r.stderr).toBe(0);
}

async function unlock(stateDir: string): Promise<void> {
  const r = await runCli(["unlock"], { stateDir, env: passphraseEnv() });
  expect(r.code, r.stderr).toBe(0);
  cleanup.push(() => runCli(["lock"], { stateDir }));
}

describe("the local CA's key", () => {
  it("is sealed on disk, and the holder mints a leaf only for a host the stored policy names, never handing out the CA's key", async () => {
    const stateDir = newStateDir();
    await httpSecret(stateDir);
    const keyFile = readFileSync(join(stateDir, "egress-ca.key"), "utf8");
    expect(keyFile).not.toMatch(/-----BEGIN [A-Z ]*PRIVATE KEY-----/);
    expect(JSON.parse(keyFile)).toMatchObject({ sealed: expect.any(String), nonce: expect.any(String) });
    const caCert = new X509Certificate(readFileSync(join(stateDir, "egress-ca.pem")));
    expect(caCert.ca).toBe(true);

    // locked: no holder, nothing minted
    expect(await askHolder(stateDir, { op: "leaf", host: HOST })).toBeNull();
    await unlock(stateDir);
    // a host of the agent's choosing
    for (const host of [
      "attacker.example",
      "inventory.example",
      "api.inventory.example.evil",
      "evil-api.inventory.example",
    ])
      expect(await askHolder(stateDir, { op: "leaf", host }), host).toMatchObject({
        ok: false,
        error: "host_not_declared",
      });
    // the declared host: a leaf signed by the CA, not a CA, with a key that is not the CA's
    const leaf = (await askHolder(stateDir, { op: "leaf", host: HOST })) as {
      ok: boolean;
      cert: string;
      key: string;
    };
    expect(leaf.ok).toBe(true);
    const cert = new X509Certificate(leaf.cert);
    expect(cert.ca).toBe(false);
    expect(cert.checkIssued(caCert)).toBe(true);
    expect(cert.verify(caCert.publicKey)).toBe(true);
    expect(cert.checkHost("api.inventory.example")).toBe("api.inventory.example");
    const leafPublic = createPublicKey(leaf.key).export({ type: "spki", format: "der" });
    expect(leafPublic.equals(caCert.publicKey.export({ type: "spki", format: "der" }))).toBe(false);
    // no other request of the holder's protocol names the CA
    for (const op of ["ca", "caKey", "key"])
      expect(JSON.stringify(await askHolder(stateDir, { op }))).not.toMatch(/PRIVATE KEY/);
  });

  it("bound to its certificate: another CA's certificate put in its place mints nothing", async () => {
    const stateDir = newStateDir();
    await httpSecret(stateDir);
    const other = newStateDir();
    await httpSecret(other);
    // the agent swaps in a certificate whose key it holds (here: another store's CA)
    copyFileSync(join(other, "egress-ca.pem"), join(stateDir, "egress-ca.pem"));
    await unlock(stateDir);
    const r = await askHolder(stateDir, { op: "leaf", host: HOST });
    expect(r).toMatchObject({ ok: false, error: "no_ca" });
    expect(JSON.stringify(r)).not.toMatch(/BEGIN/);
  });
});
