import { createHash, createPublicKey, type KeyObject, verify } from "node:crypto";

/**
 * A passkey decision's signature: the WebAuthn assertion the authenticator made over a challenge
 * that is the decision's digest (docs/security.md, "Signed decisions"). It is stored in the same
 * column as an approver key's Ed25519 signature (grants.signature, approval_requests.
 * decision_signature), as JSON: an Ed25519 signature is 86 base64url characters and never starts
 * with "{".
 *
 * Verification here is synchronous (node:crypto), because a gateway verifies on its call path;
 * the console's completion also runs @simplewebauthn/server's own checks (passkey.ts).
 */

export interface PasskeyAssertion {
  v: "webauthn/1";
  /** the credential id, base64url, as the authenticator gives it */
  credentialId: string;
  /** base64url of the raw bytes */
  authenticatorData: string;
  clientDataJSON: string;
  signature: string;
}

/** The COSE algorithms a pinned passkey may use: what verifyAssertion can check. */
export const PASSKEY_ALGORITHMS = [-8, -7, -257] as const;

const B64URL = /^[A-Za-z0-9_-]+$/;
const FLAG_UP = 0x01;
const FLAG_UV = 0x04;

export function isPasskeySignature(signature: string): boolean {
  return signature.startsWith("{");
}

export function encodePasskeySignature(a: Omit<PasskeyAssertion, "v">): string {
  return JSON.stringify({
    v: "webauthn/1",
    credentialId: a.credentialId,
    authenticatorData: a.authenticatorData,
    clientDataJSON: a.clientDataJSON,
    signature: a.signature,
  } satisfies PasskeyAssertion);
}

/** The assertion a signature column holds, or null when it is not one (bad JSON, a field missing). */
export function parsePasskeySignature(signature: string): PasskeyAssertion | null {
  let v: unknown;
  try {
    v = JSON.parse(signature);
  } catch {
    return null;
  }
  if (!v || typeof v !== "object") return null;
  const o = v as Record<string, unknown>;
  if (o.v !== "webauthn/1") return null;
  for (const k of ["credentialId", "authenticatorData", "clientDataJSON", "signature"] as const) {
    if (typeof o[k] !== "string" || !B64URL.test(o[k] as string)) return null;
  }
  return o as unknown as PasskeyAssertion;
}

/**
 * The WebAuthn challenge of a decision: the 32 bytes of its digest ("sha256:<hex>"), base64url.
 * An assertion over it signs exactly that decision and no other.
 */
export function decisionChallenge(digest: string): string {
  const m = /^sha256:([0-9a-f]{64})$/.exec(digest);
  if (!m) throw new Error("a decision digest is sha256:<64 hex>");
  return Buffer.from(m[1]!, "hex").toString("base64url");
}

/** A node:crypto key and the verify() digest name for a COSE public key; throws when unsupported. */
export function coseKey(publicKey: Uint8Array): { key: KeyObject; hash: string | null } {
  const k = decodeCoseKey(publicKey);
  const kty = k.get(1);
  const alg = k.get(3);
  const b64 = (label: number) => {
    const v = k.get(label);
    if (!(v instanceof Uint8Array)) throw new Error(`COSE key parameter ${label} missing`);
    return Buffer.from(v).toString("base64url");
  };
  // EC2 (kty 2) ES256 on P-256 (crv 1): x -2, y -3
  if (kty === 2 && alg === -7 && k.get(-1) === 1) {
    const jwk = { kty: "EC", crv: "P-256", x: b64(-2), y: b64(-3) };
    return { key: createPublicKey({ key: jwk, format: "jwk" }), hash: "sha256" };
  }
  // OKP (kty 1) EdDSA on Ed25519 (crv 6): x -2
  if (kty === 1 && alg === -8 && k.get(-1) === 6) {
    const jwk = { kty: "OKP", crv: "Ed25519", x: b64(-2) };
    return { key: createPublicKey({ key: jwk, format: "jwk" }), hash: null };
  }
  // RSA (kty 3) RS256: n -1, e -2
  if (kty === 3 && alg === -257) {
    const jwk = { kty: "RSA", n: b64(-1), e: b64(-2) };
    return { key: createPublicKey({ key: jwk, format: "jwk" }), hash: "sha256" };
  }
  throw new Error(`unsupported COSE key (kty ${String(kty)}, alg ${String(alg)})`);
}

/**
 * The COSE_Key map (RFC 9052): a CBOR map of integer labels to integers or byte strings, which is
 * all a public key holds. Decoded here rather than with @simplewebauthn/server's helpers, whose
 * import costs a gateway half a second at start; anything else in the bytes is refused.
 */
export function decodeCoseKey(bytes: Uint8Array): Map<number, number | Uint8Array> {
  let at = 0;
  const head = (): { major: number; value: number } => {
    if (at >= bytes.length) throw new Error("COSE key truncated");
    const b = bytes[at++] as number;
    const info = b & 0x1f;
    let value: number;
    if (info < 24) value = info;
    else if (info === 24 || info === 25 || info === 26) {
      const n = info === 24 ? 1 : info === 25 ? 2 : 4;
      if (at + n > bytes.length) throw new Error("COSE key truncated");
      value = 0;
      for (let i = 0; i < n; i++) value = value * 256 + (bytes[at++] as number);
    } else throw new Error("COSE key uses a CBOR form a public key does not need");
    return { major: b >> 5, value };
  };
  const int = (h: { major: number; value: number }): number | null =>
    h.major === 0 ? h.value : h.major === 1 ? -1 - h.value : null;
  const map = head();
  if (map.major !== 5) throw new Error("a COSE key is a CBOR map");
  const out = new Map<number, number | Uint8Array>();
  for (let i = 0; i < map.value; i++) {
    const label = int(head());
    if (label === null || out.has(label)) throw new Error("a COSE key's labels are distinct integers");
    const h = head();
    const n = int(h);
    if (n !== null) out.set(label, n);
    else if (h.major === 2) {
      if (at + h.value > bytes.length) throw new Error("COSE key truncated");
      out.set(label, bytes.subarray(at, at + h.value));
      at += h.value;
    } else throw new Error("a COSE key's values are integers or byte strings");
  }
  if (at !== bytes.length) throw new Error("bytes after the COSE key");
  return out;
}

/** What an assertion is checked against: the credential as pinned in the audit chain. */
export interface AssertionKey {
  credentialId: string;
  /** COSE, base64url */
  publicKey: string;
  rpId: string;
}

/**
 * Null when `a` is `pinned`'s assertion over `challenge` (base64url; a decision's is
 * decisionChallenge of its digest) with user verification,
 * else why not. Checks: the credential, clientDataJSON (type webauthn.get, the challenge, an
 * origin on the pinned RP id's host), authenticatorData (RP id hash, UP and UV flags) and the
 * signature over authenticatorData || SHA-256(clientDataJSON). The signature counter is not read
 * here: the challenge binds the assertion to one decision, so replaying it decides nothing new.
 */
export function assertionFault(pinned: AssertionKey, challenge: string, a: PasskeyAssertion): string | null {
  if (a.credentialId !== pinned.credentialId) return "the assertion is by another credential";
  let client: Record<string, unknown>;
  const clientBytes = Buffer.from(a.clientDataJSON, "base64url");
  try {
    client = JSON.parse(clientBytes.toString("utf8")) as Record<string, unknown>;
  } catch {
    return "its clientDataJSON cannot be read";
  }
  if (client.type !== "webauthn.get") return "its clientDataJSON is not an assertion's";
  if (client.challenge !== challenge) {
    return "the passkey signed another decision (its challenge is not this decision's digest)";
  }
  if (typeof client.origin !== "string" || originHost(client.origin) !== pinned.rpId) {
    return `its origin is not on the passkey's RP id ${pinned.rpId}`;
  }
  const auth = Buffer.from(a.authenticatorData, "base64url");
  if (auth.length < 37) return "its authenticatorData is too short";
  const rpIdHash = createHash("sha256").update(pinned.rpId, "utf8").digest();
  if (!auth.subarray(0, 32).equals(rpIdHash)) return "its authenticatorData is for another RP id";
  const flags = auth[32] as number;
  if (!(flags & FLAG_UP)) return "the authenticator did not see the user present";
  if (!(flags & FLAG_UV)) return "the authenticator did not verify the user (UV flag not set)";
  let key: ReturnType<typeof coseKey>;
  try {
    key = coseKey(Buffer.from(pinned.publicKey, "base64url"));
  } catch (e) {
    return `the pinned public key cannot be used (${(e as Error).message})`;
  }
  const signed = Buffer.concat([auth, createHash("sha256").update(clientBytes).digest()]);
  let ok = false;
  try {
    ok = verify(key.hash, signed, key.key, Buffer.from(a.signature, "base64url"));
  } catch {
    ok = false;
  }
  return ok ? null : "its signature does not verify against the pinned passkey";
}

function originHost(origin: string): string | null {
  try {
    const u = new URL(origin);
    return u.protocol === "https:" || u.protocol === "http:" ? u.hostname : null;
  } catch {
    return null;
  }
}
