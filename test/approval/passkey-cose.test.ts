// The COSE keys a pinned passkey may hold (ES256, EdDSA, RS256), decoded by the gateway's own small
// CBOR reader, checked against the library's encoder and against real signatures; anything
// else (other algorithms, trailing bytes, truncation, other CBOR forms) is refused.
import { generateKeyPairSync, sign, verify } from "node:crypto";
import { isoCBOR } from "@simplewebauthn/server/helpers";
import { describe, expect, it } from "vitest";
import { coseKey, decodeCoseKey } from "../../src/approval/passkeyAssertion.js";

const bytes = (b64u: string) => new Uint8Array(Buffer.from(b64u, "base64url"));
const encode = (m: Map<number, number | Uint8Array>) => isoCBOR.encode(m as never);

function verifies(cose: Uint8Array, privateKey: Parameters<typeof sign>[2], hash: string | null): boolean {
  const data = Buffer.from("authenticatorData || clientDataHash");
  const { key, hash: h } = coseKey(cose);
  expect(h).toBe(hash);
  return verify(h, data, key, sign(hash, data, privateKey));
}

describe("coseKey", () => {
  it("reads ES256, EdDSA and RS256 public keys and verifies their signatures", () => {
    const ec = generateKeyPairSync("ec", { namedCurve: "P-256" });
    const ecJwk = ec.publicKey.export({ format: "jwk" });
    const es256 = encode(
      new Map<number, number | Uint8Array>([
        [1, 2],
        [3, -7],
        [-1, 1],
        [-2, bytes(ecJwk.x!)],
        [-3, bytes(ecJwk.y!)],
      ]),
    );
    expect(verifies(es256, ec.privateKey, "sha256")).toBe(true);

    const ed = generateKeyPairSync("ed25519");
    const eddsa = encode(
      new Map<number, number | Uint8Array>([
        [1, 1],
        [3, -8],
        [-1, 6],
        [-2, bytes(ed.publicKey.export({ format: "jwk" }).x!)],
      ]),
    );
    expect(verifies(eddsa, ed.privateKey, null)).toBe(true);

    const rsa = generateKeyPairSync("rsa", { modulusLength: 2048 });
    const rsaJwk = rsa.publicKey.export({ format: "jwk" });
    const rs256 = encode(
      new Map<number, number | Uint8Array>([
        [1, 3],
        [3, -257],
        [-1, bytes(rsaJwk.n!)],
        [-2, bytes(rsaJwk.e!)],
      ]),
    );
    expect(verifies(rs256, rsa.privateKey, "sha256")).toBe(true);
    // another key's signature does not verify
    expect(
      verify(
        "sha256",
        Buffer.from("x"),
        coseKey(es256).key,
        sign("sha256", Buffer.from("x"), rsa.privateKey),
      ),
    ).toBe(false);
  });

  it("refuses other algorithms and malformed CBOR", () => {
    const es384 = encode(
      new Map<number, number | Uint8Array>([
        [1, 2],
        [3, -35],
        [-1, 2],
        [-2, new Uint8Array(48)],
        [-3, new Uint8Array(48)],
      ]),
    );
    expect(() => coseKey(es384)).toThrow(/unsupported COSE key/);
    const good = encode(new Map<number, number | Uint8Array>([[1, 1]]));
    expect(decodeCoseKey(good)).toEqual(new Map([[1, 1]]));
    expect(() => decodeCoseKey(new Uint8Array([...good, 0]))).toThrow(/bytes after/);
    expect(() => decodeCoseKey(new Uint8Array([0xa1, 0x01]))).toThrow(/truncated/);
    expect(() => decodeCoseKey(new Uint8Array([0xa1, 0x01, 0x43, 0x01]))).toThrow(/truncated/);
    expect(() => decodeCoseKey(new Uint8Array([0x81, 0x01]))).toThrow(/CBOR map/);
    expect(() => decodeCoseKey(new Uint8Array([0xa1, 0x01, 0x61, 0x78]))).toThrow(/integers or byte strings/);
    expect(() => decodeCoseKey(new Uint8Array([0xa2, 0x01, 0x01, 0x01, 0x02]))).toThrow(/distinct/);
    expect(() => decodeCoseKey(new Uint8Array([0xbf]))).toThrow(/CBOR form/);
  });
});
