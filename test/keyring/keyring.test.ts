import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { addApproverKey, initKeyring, loadPublicKeyring, unlockKeyring } from "../../src/keyring/keyring.js";
import {
  KeyringDamagedError,
  KeyringExistsError,
  KeyringMissingError,
  WrongPassphraseError,
} from "../../src/keyring/keyringErrors.js";
import { keyringExists, keyringPath } from "../../src/keyring/keyringRead.js";
import { DEFAULT_SCRYPT } from "../../src/keyring/keyWrapping.js";
import { auditKeyId, rawX25519PrivateKey, rawX25519PublicKey } from "../../src/keyring/x25519.js";
import { PASSPHRASE, stateWithKeyring, tempDir } from "../audit/helpers.js";

describe("keyring", () => {
  it("is absent until init, then present with its public half readable without the passphrase", async () => {
    const dir = tempDir();
    expect(keyringExists(dir)).toBe(false);
    expect(loadPublicKeyring(dir)).toBeNull();
    const made = await initKeyring(dir, PASSPHRASE);
    expect(keyringExists(dir)).toBe(true);
    const pub = loadPublicKeyring(dir)!;
    expect(pub.keyId).toBe(made.keyId);
    expect(pub.keyId).toBe(auditKeyId(pub.publicKeyRaw));
    expect(rawX25519PublicKey(pub.publicKey)).toEqual(made.publicKeyRaw);
  });

  it("is written with mode 0600 and leaves no temporary file behind", async () => {
    const dir = await stateWithKeyring();
    if (process.platform !== "win32") expect(statSync(keyringPath(dir)).mode & 0o777).toBe(0o600);
    expect(readFileSync(keyringPath(dir), "utf8")).toContain('"format": "portcullis-keyring/1"');
    expect(readdirSync(dir)).toEqual(["keyring.json"]);
  });

  it("unlocks with the passphrase: the private key matches the public half", async () => {
    const dir = await stateWithKeyring();
    const k = await unlockKeyring(dir, PASSPHRASE);
    expect(k.dataKey).toHaveLength(32);
    expect(rawX25519PublicKey(k.auditPrivateKey)).toEqual(loadPublicKeyring(dir)!.publicKeyRaw);
    expect(k.keyId).toBe(loadPublicKeyring(dir)!.keyId);
  });

  it("refuses a wrong passphrase with a clear error", async () => {
    const dir = await stateWithKeyring();
    await expect(unlockKeyring(dir, "not the passphrase")).rejects.toThrow(WrongPassphraseError);
    await expect(unlockKeyring(dir, `${PASSPHRASE} `)).rejects.toThrow(/wrong passphrase/);
  });

  it("refuses to overwrite an existing keyring, and leaves it intact", async () => {
    const dir = await stateWithKeyring();
    const before = readFileSync(keyringPath(dir), "utf8");
    await expect(initKeyring(dir, "another passphrase")).rejects.toThrow(KeyringExistsError);
    expect(readFileSync(keyringPath(dir), "utf8")).toBe(before);
    await expect(unlockKeyring(dir, PASSPHRASE)).resolves.toBeTruthy();
  });

  it("lets only one of two racing inits win", async () => {
    const dir = tempDir();
    const results = await Promise.allSettled([
      initKeyring(dir, "first passphrase"),
      initKeyring(dir, "second passphrase"),
    ]);
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
    const loser = results.find((r) => r.status === "rejected") as PromiseRejectedResult;
    expect(loser.reason).toBeInstanceOf(KeyringExistsError);
  });

  it("holds no private key, data key or passphrase in clear", async () => {
    const dir = tempDir();
    await initKeyring(dir, PASSPHRASE);
    const k = await unlockKeyring(dir, PASSPHRASE);
    const file = readFileSync(keyringPath(dir));
    const priv = rawX25519PrivateKey(k.auditPrivateKey);
    for (const secret of [priv, k.dataKey, Buffer.from(PASSPHRASE)]) {
      for (const form of [
        secret,
        Buffer.from(secret.toString("hex")),
        Buffer.from(secret.toString("base64")),
        Buffer.from(secret.toString("base64url")),
      ]) {
        expect(file.includes(form)).toBe(false);
      }
    }
  });

  it("records its scrypt parameters (the test set here; the default is N=2^17, r=8, p=1)", async () => {
    const dir = await stateWithKeyring();
    const kdf = JSON.parse(readFileSync(keyringPath(dir), "utf8")).kdf;
    expect(kdf).toMatchObject({ alg: "scrypt", N: 1024, r: 8, p: 1 });
    expect(DEFAULT_SCRYPT).toEqual({ N: 2 ** 17, r: 8, p: 1 });
  });

  it("says `portcullis init` when there is no keyring to unlock", async () => {
    await expect(unlockKeyring(tempDir(), PASSPHRASE)).rejects.toThrow(KeyringMissingError);
    await expect(unlockKeyring(tempDir(), PASSPHRASE)).rejects.toThrow(/portcullis init/);
  });

  it("notices a swapped public half, and refuses absurd scrypt parameters", async () => {
    const dir = await stateWithKeyring();
    const other = await stateWithKeyring();
    const f = JSON.parse(readFileSync(keyringPath(dir), "utf8"));
    const g = JSON.parse(readFileSync(keyringPath(other), "utf8"));
    writeFileSync(
      keyringPath(dir),
      JSON.stringify({ ...f, audit: { ...f.audit, publicKey: g.audit.publicKey, keyId: g.audit.keyId } }),
    );
    await expect(unlockKeyring(dir, PASSPHRASE)).rejects.toThrow(KeyringDamagedError);
    writeFileSync(keyringPath(dir), JSON.stringify({ ...f, kdf: { ...f.kdf, N: 2 ** 30 } }));
    await expect(unlockKeyring(dir, PASSPHRASE)).rejects.toThrow(/scrypt parameters/);
    writeFileSync(join(dir, "keyring.json"), "{not json");
    expect(() => loadPublicKeyring(dir)).toThrow(KeyringDamagedError);
  });

  it("holds an Ed25519 approver key sealed under the data key; a swapped public half is noticed", async () => {
    const dir = await stateWithKeyring();
    const other = await stateWithKeyring();
    const k = await unlockKeyring(dir, PASSPHRASE);
    const f = JSON.parse(readFileSync(keyringPath(dir), "utf8"));
    expect(f.approver).toMatchObject({ alg: "Ed25519", keyId: k.signer!.keyId });
    expect(f.approver.publicKey).toBe(k.signer!.publicKeyRaw.toString("base64url"));
    expect(loadPublicKeyring(dir)!.approver!.keyId).toBe(k.signer!.keyId);
    const g = JSON.parse(readFileSync(keyringPath(other), "utf8"));
    writeFileSync(
      keyringPath(dir),
      JSON.stringify({
        ...f,
        approver: { ...f.approver, publicKey: g.approver.publicKey, keyId: g.approver.keyId },
      }),
    );
    await expect(unlockKeyring(dir, PASSPHRASE)).rejects.toThrow(/approver private key does not open/);
  });

  it("gives an old keyring (no approver key) one, keeping its audit key", async () => {
    const dir = await stateWithKeyring();
    const f = JSON.parse(readFileSync(keyringPath(dir), "utf8"));
    delete f.approver;
    writeFileSync(keyringPath(dir), JSON.stringify(f));
    expect((await unlockKeyring(dir, PASSPHRASE)).signer).toBeNull();
    const upgraded = await addApproverKey(dir, PASSPHRASE);
    expect(upgraded.signer).not.toBeNull();
    expect(upgraded.keyId).toBe(f.audit.keyId);
    expect(JSON.parse(readFileSync(keyringPath(dir), "utf8")).approver.keyId).toBe(upgraded.signer!.keyId);
  });

  it("upgrades once when two commands upgrade an old keyring at the same time", async () => {
    const dir = await stateWithKeyring();
    const f = JSON.parse(readFileSync(keyringPath(dir), "utf8"));
    delete f.approver;
    writeFileSync(keyringPath(dir), JSON.stringify(f));
    const [a, b] = await Promise.all([addApproverKey(dir, PASSPHRASE), addApproverKey(dir, PASSPHRASE)]);
    expect(a.signer!.keyId).toBe(b.signer!.keyId);
    expect(loadPublicKeyring(dir)!.approver!.keyId).toBe(a.signer!.keyId);
  });

  it("refuses an empty passphrase", async () => {
    await expect(initKeyring(tempDir(), "")).rejects.toThrow(/empty/);
  });
});
