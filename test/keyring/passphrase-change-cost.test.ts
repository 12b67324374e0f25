// The key-derivation cost a passphrase change gives the keyring (src/keyring/keyWrapping.ts, newCost):
// init's current cost, so a cheaper keyring (an older default) is raised to it, and never lower
// than the keyring's own, so a change never weakens what guards it against guessing. Would catch: a
// change that kept the old cost (a keyring made at a test cost, or an old default, stays cheap for
// good), or one that always wrote init's (a keyring made stronger, by hand or by a later version
// with a higher default, silently made weaker). Real CLI; the stronger keyring is built here, its
// data key wrapped as docs/audit-format.md ("Keyring") says.
import { createCipheriv, randomBytes, scryptSync } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import canonicalize from "canonicalize";
import { afterEach, describe, expect, it } from "vitest";
import { unlockKeyring } from "../../src/keyring/keyring.js";
import { removeDir } from "../helpers/files.js";
import { changeByCli } from "../helpers/passphraseChange.js";
import { newStateDir, TEST_PASSPHRASE } from "../helpers/state.js";

const NEW = "a passphrase with a cost";

let cleanup: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanup.reverse()) c();
  cleanup = [];
});

interface Kdf {
  alg: "scrypt";
  N: number;
  r: number;
  p: number;
  salt: string;
}
const kdfOf = (stateDir: string) =>
  (JSON.parse(readFileSync(join(stateDir, "keyring.json"), "utf8")) as { kdf: Kdf }).kdf;

async function change(stateDir: string, env: Record<string, string>) {
  const r = await changeByCli(stateDir, TEST_PASSPHRASE, NEW, [], env);
  expect(r.code, r.stderr).toBe(0);
}

/** The state directory's keyring, its data key wrapped anew under the test passphrase at cost `N`. */
async function rewrapAt(stateDir: string, N: number): Promise<void> {
  const path = join(stateDir, "keyring.json");
  const k = JSON.parse(readFileSync(path, "utf8")) as Record<string, unknown>;
  const { dataKey } = await unlockKeyring(stateDir, TEST_PASSPHRASE);
  const kdf: Kdf = { alg: "scrypt", N, r: 8, p: 1, salt: randomBytes(16).toString("base64url") };
  const kek = scryptSync(TEST_PASSPHRASE, Buffer.from(kdf.salt, "base64url"), 32, { N, r: 8, p: 1 });
  const nonce = randomBytes(12);
  const c = createCipheriv("chacha20-poly1305", kek, nonce, { authTagLength: 16 });
  c.setAAD(Buffer.from(`portcullis-keyring/1\ndata-key\n${canonicalize(kdf)}`), { plaintextLength: 32 });
  const sealed = Buffer.concat([c.update(dataKey), c.final(), c.getAuthTag()]);
  k.kdf = kdf;
  k.dataKey = {
    alg: "chacha20-poly1305",
    nonce: nonce.toString("base64url"),
    sealed: sealed.toString("base64url"),
  };
  writeFileSync(path, `${JSON.stringify(k, null, 2)}\n`, { mode: 0o600 });
  await expect(unlockKeyring(stateDir, TEST_PASSPHRASE)).resolves.toBeDefined();
}

describe("the cost a passphrase change derives the new key with", () => {
  it("raises a keyring of the test cost to the default (no test KDF set)", async () => {
    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    expect(kdfOf(stateDir).N).toBe(2 ** 10);
    await change(stateDir, { PORTCULLIS_INSECURE_TEST_KDF: "0" });
    expect(kdfOf(stateDir)).toMatchObject({ N: 2 ** 17, r: 8, p: 1 });
  });

  it("keeps a keyring's own cost when it is higher than the one a change would choose", async () => {
    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    await rewrapAt(stateDir, 2 ** 11);
    const was = kdfOf(stateDir);
    await change(stateDir, { PORTCULLIS_INSECURE_TEST_KDF: "1" });
    const now = kdfOf(stateDir);
    expect(now).toMatchObject({ N: 2 ** 11, r: 8, p: 1 });
    expect(now.salt).not.toBe(was.salt);
    await expect(unlockKeyring(stateDir, NEW)).resolves.toBeDefined();
  });
});
