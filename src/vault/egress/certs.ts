// @peculiar/x509 resolves its parts through tsyringe, which needs a Reflect metadata polyfill
// loaded first (reflect-metadata 0.2.2).
import "reflect-metadata";
import { webcrypto } from "node:crypto";
import { isIP } from "node:net";
import * as x509 from "@peculiar/x509";

/**
 * Certificates for the egress proxy, made with @peculiar/x509 (node:crypto cannot issue X.509):
 * the local CA of a state directory, and the short-lived per-host leaves the vault holder mints
 * from it. ECDSA P-256 throughout.
 */

const crypto = webcrypto;
x509.cryptoProvider.set(crypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);
type KeyPair = webcrypto.CryptoKeyPair;

const EC = { name: "ECDSA", namedCurve: "P-256" } as const;
const SIGN = { name: "ECDSA", hash: "SHA-256" } as const;

/** A local CA lives ten years: it never leaves the machine, and only the holder can sign with it. */
export const CA_VALID_DAYS = 3650;
/** A leaf lives a day; the holder mints a new one when less than an hour is left. */
export const LEAF_VALID_MS = 24 * 3600_000;

export interface CaMaterial {
  certPem: string;
  /** PKCS#8 DER of the CA's private key */
  keyPkcs8: Buffer;
}

export interface LeafMaterial {
  certPem: string;
  keyPem: string;
  notAfter: Date;
}

export async function createCa(commonName: string): Promise<CaMaterial> {
  const keys = (await crypto.subtle.generateKey(EC, true, ["sign", "verify"])) as KeyPair;
  const now = Date.now();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    name: `CN=${commonName}`,
    keys,
    signingAlgorithm: SIGN,
    notBefore: new Date(now - 3600_000),
    notAfter: new Date(now + CA_VALID_DAYS * 86400_000),
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  const keyPkcs8 = Buffer.from(await crypto.subtle.exportKey("pkcs8", keys.privateKey));
  return { certPem: cert.toString("pem"), keyPkcs8 };
}

/** A TLS server certificate for one host name or IP address, signed by the CA. */
export async function mintLeaf(ca: CaMaterial, host: string): Promise<LeafMaterial> {
  const caCert = new x509.X509Certificate(ca.certPem);
  const caKey = await crypto.subtle.importKey("pkcs8", ca.keyPkcs8, EC, false, ["sign"]);
  const keys = (await crypto.subtle.generateKey(EC, true, ["sign", "verify"])) as KeyPair;
  const bare = host.replace(/^\[|\]$/g, "");
  const san = isIP(bare) ? { type: "ip" as const, value: bare } : { type: "dns" as const, value: bare };
  const now = Date.now();
  const notAfter = new Date(now + LEAF_VALID_MS);
  const cert = await x509.X509CertificateGenerator.create({
    subject: `CN=${isIP(bare) ? "portcullis egress" : bare}`,
    issuer: caCert.subject,
    publicKey: keys.publicKey,
    signingKey: caKey,
    signingAlgorithm: SIGN,
    notBefore: new Date(now - 300_000),
    notAfter,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      new x509.SubjectAlternativeNameExtension([san]),
      await x509.AuthorityKeyIdentifierExtension.create(caCert, false),
    ],
  });
  const keyDer = Buffer.from(await crypto.subtle.exportKey("pkcs8", keys.privateKey));
  const keyPem = `-----BEGIN PRIVATE KEY-----\n${keyDer
    .toString("base64")
    .replace(/.{1,64}/g, "$&\n")}-----END PRIVATE KEY-----\n`;
  return { certPem: cert.toString("pem"), keyPem, notAfter };
}
