// Upstreams on loopback for the egress tests: plain HTTP and HTTPS (a test CA made here with
// @peculiar/x509, which the gateway is told to trust through the user's own NODE_EXTRA_CA_CERTS),
// each recording what it received (and on /echo answering with the Authorization it got); and one
// that accepts connections and never answers.
// @peculiar/x509 resolves its parts through tsyringe, which needs a Reflect metadata polyfill
// loaded first (reflect-metadata 0.2.2).
import "reflect-metadata";
import { webcrypto } from "node:crypto";
import { writeFileSync } from "node:fs";
import * as http from "node:http";
import * as https from "node:https";
import { createServer as createNetServer, type Server as NetServer, type Socket } from "node:net";
import { join } from "node:path";
import * as x509 from "@peculiar/x509";

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

export interface Received {
  path: string;
  authorization: string | undefined;
  /** the `key` query parameter, decoded */
  key: string | null;
  seq: number | null;
  /** the `from` query parameter (the pid of the fixture's timer), when there is one */
  from?: number;
}

export interface Upstream {
  url: string;
  port: number;
  received: Received[];
  close(): Promise<void>;
}

function recorder(received: Received[]) {
  return (req: http.IncomingMessage, res: http.ServerResponse) => {
    const u = new URL(req.url ?? "/", "http://x");
    const seq = u.searchParams.get("seq");
    const from = u.searchParams.get("from");
    received.push({
      path: u.pathname,
      authorization: req.headers.authorization,
      key: u.searchParams.get("key"),
      seq: seq === null ? null : Number(seq),
      ...(from === null ? {} : { from: Number(from) }),
    });
    res.writeHead(200, { "content-type": "text/plain" });
    // /echo answers with the Authorization it got: a server that hands it back to its client
    res.end(
      u.pathname === "/echo" ? `upstream echo ${req.headers.authorization}` : `upstream ok ${u.pathname}`,
    );
  };
}

function listening(
  server: http.Server | NetServer,
  scheme: string,
  received: Received[],
  sockets: Set<Socket>,
): Promise<Upstream> {
  server.on("connection", (s: Socket) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as { port: number }).port;
      resolve({
        url: `${scheme}://127.0.0.1:${port}`,
        port,
        received,
        close: () =>
          new Promise((r) => {
            for (const s of sockets) s.destroy();
            server.close(() => r());
          }),
      });
    });
  });
}

export function httpUpstream(): Promise<Upstream> {
  const received: Received[] = [];
  return listening(http.createServer(recorder(received)), "http", received, new Set());
}

/**
 * A CA of "the user's" (not portcullis's), written to `dir`/user-ca.pem, and an HTTPS upstream it
 * signed for 127.0.0.1; `handler`, when given, answers instead of the recorder (which still records).
 */
export async function httpsUpstream(
  dir: string,
  handler?: http.RequestListener,
): Promise<Upstream & { caFile: string }> {
  const crypto = webcrypto;
  const alg = { name: "ECDSA", namedCurve: "P-256", hash: "SHA-256" };
  const caKeys = (await crypto.subtle.generateKey(alg, true, ["sign", "verify"])) as webcrypto.CryptoKeyPair;
  const ca = await x509.X509CertificateGenerator.createSelfSigned({
    name: "CN=egress test user CA",
    keys: caKeys,
    signingAlgorithm: alg,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign, true),
    ],
  });
  const keys = (await crypto.subtle.generateKey(alg, true, ["sign", "verify"])) as webcrypto.CryptoKeyPair;
  const leaf = await x509.X509CertificateGenerator.create({
    subject: "CN=127.0.0.1",
    issuer: ca.subject,
    publicKey: keys.publicKey,
    signingKey: caKeys.privateKey,
    signingAlgorithm: alg,
    extensions: [
      new x509.SubjectAlternativeNameExtension([{ type: "ip", value: "127.0.0.1" }]),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
    ],
  });
  const keyDer = Buffer.from(await crypto.subtle.exportKey("pkcs8", keys.privateKey));
  const keyPem = `-----BEGIN PRIVATE KEY-----\n${keyDer.toString("base64").replace(/.{1,64}/g, "$&\n")}-----END PRIVATE KEY-----\n`;
  const caFile = join(dir, "user-ca.pem");
  writeFileSync(caFile, ca.toString("pem"));
  const received: Received[] = [];
  const record = recorder(received);
  const server = https.createServer({ cert: leaf.toString("pem"), key: keyPem }, (req, res) => {
    if (!handler) return record(req, res);
    record(req, { writeHead: () => {}, end: () => {} } as unknown as http.ServerResponse);
    handler(req, res);
  });
  return { ...(await listening(server, "https", received, new Set())), caFile };
}

/** Accepts connections and never says a word. */
export function silentUpstream(): Promise<Upstream> {
  return listening(
    createNetServer(() => {}),
    "http",
    [],
    new Set(),
  );
}
