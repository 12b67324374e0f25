// Raw 32-byte keys <-> node:crypto KeyObjects (src/keyring/x25519.ts, approver.ts). New keys are
// made from random bytes and raw bytes read from DER, because generateKeyPair(Sync) together with
// a JWK export can deadlock Node 20 (a gateway hung at its first audit record). Checked here: the
// DER reading gives the bytes a JWK export gives, keys round-trip, and no source file asks for
// generateKeyPair again.
import { createPublicKey, diffieHellman, sign, verify } from "node:crypto";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  ed25519PrivateKeyFromRaw,
  newApproverKeyPair,
  rawEd25519PrivateKey,
  rawEd25519PublicKey,
} from "../../src/keyring/approver.js";
import {
  newX25519PrivateKey,
  rawX25519PrivateKey,
  rawX25519PublicKey,
  x25519PrivateKeyFromRaw,
  x25519PublicKeyFromRaw,
} from "../../src/keyring/x25519.js";
import { REPO } from "../helpers/paths.js";

const jwk = (k: ReturnType<typeof createPublicKey>, part: "x" | "d") =>
  Buffer.from(k.export({ format: "jwk" })[part] as string, "base64url");

describe("raw keys", () => {
  it("X25519: the DER reading gives the JWK's bytes; raw keys round-trip; two keys agree on a secret", () => {
    for (let i = 0; i < 50; i++) {
      const a = newX25519PrivateKey();
      const b = newX25519PrivateKey();
      expect(rawX25519PublicKey(a)).toEqual(jwk(createPublicKey(a), "x"));
      expect(rawX25519PrivateKey(a)).toEqual(jwk(a, "d"));
      const again = x25519PrivateKeyFromRaw(rawX25519PrivateKey(a));
      expect(rawX25519PublicKey(again)).toEqual(rawX25519PublicKey(a));
      const ab = diffieHellman({ privateKey: a, publicKey: x25519PublicKeyFromRaw(rawX25519PublicKey(b)) });
      const ba = diffieHellman({ privateKey: b, publicKey: x25519PublicKeyFromRaw(rawX25519PublicKey(a)) });
      expect(ab).toEqual(ba);
    }
  });

  it("Ed25519: the DER reading gives the JWK's bytes; a new approver pair signs and verifies", () => {
    for (let i = 0; i < 50; i++) {
      const { publicRaw, privateRaw } = newApproverKeyPair();
      const priv = ed25519PrivateKeyFromRaw(privateRaw);
      expect(rawEd25519PrivateKey(priv)).toEqual(privateRaw);
      expect(rawEd25519PublicKey(priv)).toEqual(publicRaw);
      expect(rawEd25519PublicKey(priv)).toEqual(jwk(createPublicKey(priv), "x"));
      const sig = sign(null, Buffer.from("decision"), priv);
      expect(verify(null, Buffer.from("decision"), createPublicKey(priv), sig)).toBe(true);
    }
  });

  it("no source file generates a key pair with node:crypto's generateKeyPair", () => {
    const found: string[] = [];
    const walk = (dir: string) => {
      for (const name of readdirSync(dir)) {
        const path = join(dir, name);
        if (statSync(path).isDirectory()) walk(path);
        else if (path.endsWith(".ts") && /\bgenerateKeyPair(Sync)?\s*\(/.test(readFileSync(path, "utf8")))
          found.push(path);
      }
    };
    walk(join(REPO, "src"));
    expect(found).toEqual([]);
  });
});
