import { createCipheriv, createDecipheriv, createHash, randomBytes } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { writeFileAtomic } from "../../util/atomicFile.js";
import type { CaMaterial } from "./certs.js";

/**
 * The local CA of a state directory, at rest. Its certificate is public (`egress-ca.pem`, what
 * servers are told to trust); its private key is sealed with ChaCha20-Poly1305 under the
 * keyring's data key (`egress-ca.key`), bound to that certificate by the associated data, so it
 * opens only in a process that holds the data key: `vault set` and `unlock`, which hand it to the
 * vault holder. Gateways never see it: they get per-host leaves from the holder.
 */

export const CA_CERT_FILE = "egress-ca.pem";
export const CA_KEY_FILE = "egress-ca.key";
const FORMAT = "portcullis-egress-ca/1";

export function caCertPath(stateDir: string): string {
  return join(stateDir, CA_CERT_FILE);
}

function aad(certPem: string): Buffer {
  return Buffer.from(`${FORMAT}\n${createHash("sha256").update(certPem).digest("hex")}`, "utf8");
}

/** A name that tells two state directories' CAs apart in a trust store listing. */
function caName(stateDir: string): string {
  return `portcullis local CA ${createHash("sha256").update(stateDir).digest("hex").slice(0, 12)}`;
}

/** Creates the CA when missing (needs the data key). Returns whether it was created. */
export async function ensureEgressCa(stateDir: string, dataKey: Buffer): Promise<boolean> {
  if (existsSync(caCertPath(stateDir)) && existsSync(join(stateDir, CA_KEY_FILE))) return false;
  // loaded only here: X.509 is a large library, and most commands never create a CA
  const { createCa } = await import("./certs.js");
  const ca = await createCa(caName(stateDir));
  // The key first: a certificate on disk always has its key beside it.
  writeSealedKey(stateDir, dataKey, ca);
  writeFileAtomic(caCertPath(stateDir), ca.certPem, { mode: 0o644 });
  return true;
}

/** Seals the CA's key under `dataKey` (bound to its certificate) into CA_KEY_FILE, and wipes it. */
function writeSealedKey(stateDir: string, dataKey: Buffer, ca: { certPem: string; keyPkcs8: Buffer }): void {
  const nonce = randomBytes(12);
  const c = createCipheriv("chacha20-poly1305", dataKey, nonce, { authTagLength: 16 });
  c.setAAD(aad(ca.certPem), { plaintextLength: ca.keyPkcs8.length });
  const sealed = Buffer.concat([c.update(ca.keyPkcs8), c.final(), c.getAuthTag()]);
  ca.keyPkcs8.fill(0);
  writeFileAtomic(
    join(stateDir, CA_KEY_FILE),
    `${JSON.stringify({ format: FORMAT, nonce: nonce.toString("base64url"), sealed: sealed.toString("base64url") })}\n`,
    { mode: 0o600 },
  );
}

/**
 * A key rotation's reseal of the CA key (src/vault/reseal.ts): when it does not open under
 * `dataKey` but does under one of `earlier`, it is sealed again under `dataKey` (written whole,
 * renamed over the old file; the certificate is unchanged). Whether it was resealed.
 */
export function resealEgressCa(stateDir: string, dataKey: Buffer, earlier: readonly Buffer[]): boolean {
  if (openEgressCa(stateDir, dataKey).ca) return false;
  for (const k of earlier) {
    const { ca } = openEgressCa(stateDir, k);
    if (!ca) continue;
    writeSealedKey(stateDir, dataKey, ca);
    return true;
  }
  return false;
}

/** Opens the CA with the data key; null when there is none or it does not open (said in `why`). */
export function openEgressCa(stateDir: string, dataKey: Buffer): { ca: CaMaterial | null; why?: string } {
  const certFile = caCertPath(stateDir);
  const keyFile = join(stateDir, CA_KEY_FILE);
  if (!existsSync(certFile) || !existsSync(keyFile)) return { ca: null, why: "no local CA yet" };
  try {
    const certPem = readFileSync(certFile, "utf8");
    const f = JSON.parse(readFileSync(keyFile, "utf8")) as {
      format?: unknown;
      nonce?: unknown;
      sealed?: unknown;
    };
    if (f.format !== FORMAT || typeof f.nonce !== "string" || typeof f.sealed !== "string")
      return { ca: null, why: `${keyFile} is not a sealed CA key` };
    const sealed = Buffer.from(f.sealed, "base64url");
    const d = createDecipheriv("chacha20-poly1305", dataKey, Buffer.from(f.nonce, "base64url"), {
      authTagLength: 16,
    });
    d.setAAD(aad(certPem), { plaintextLength: sealed.length - 16 });
    d.setAuthTag(sealed.subarray(sealed.length - 16));
    const keyPkcs8 = Buffer.concat([d.update(sealed.subarray(0, sealed.length - 16)), d.final()]);
    return { ca: { certPem, keyPkcs8 } };
  } catch {
    return {
      ca: null,
      why: `${keyFile} does not open under this keyring for ${certFile} (damaged or replaced)`,
    };
  }
}
