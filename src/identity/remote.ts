import type { PeerCertificate } from "node:tls";
import { canonicalString, sha256Hex, sha256Tag } from "../util/canonical.js";
import type { ExecutionRecord, RemoteFacts } from "./types.js";

/**
 * The execution record of a server reached over Streamable HTTP. No process of ours runs it,
 * so the static fields a launched server fills are empty; what identifies it is what it shows
 * over the wire (RemoteFacts), digested the same way: `identityDigest` covers the URL, the
 * certificate chain, serverInfo, protocol version, capabilities, header names and the
 * configuration, never the epoch, the session or the time.
 */
export function remoteRecord(
  base: { serverLabel: string; configDigest: string; epoch: string; startedAt: string },
  facts: RemoteFacts,
): ExecutionRecord {
  return {
    serverLabel: base.serverLabel,
    epoch: base.epoch,
    launchCommand: [],
    executable: null,
    runtime: null,
    entry: null,
    wrappers: [],
    lockfile: null,
    dependencyTree: null,
    identityInputs: null,
    workingDirectory: "",
    envDigest: sha256Tag(canonicalString(facts.headerNames)),
    configDigest: base.configDigest,
    identityDigest: remoteIdentityDigest(base.serverLabel, base.configDigest, facts),
    processes: [],
    processId: 0,
    startedAt: base.startedAt,
    remote: facts,
  };
}

export function remoteIdentityDigest(serverLabel: string, configDigest: string, f: RemoteFacts): string {
  return sha256Tag(
    canonicalString({
      serverLabel,
      configDigest,
      url: f.url,
      certificateChainSha256: f.certificateChainSha256,
      serverInfo: f.serverInfo,
      protocolVersion: f.protocolVersion,
      capabilities: f.capabilities,
      headerNames: f.headerNames,
    }),
  );
}

/**
 * "sha256:…" over the DER bytes of the peer's chain, leaf first, each certificate once (a
 * self-signed root points at itself). What the server presented, whether or not a local CA
 * trusts it: node has verified the chain before this is asked.
 */
export function chainDigest(leaf: PeerCertificate | null | undefined): {
  digest: string;
  certificate: RemoteFacts["certificate"];
} | null {
  if (!leaf?.raw) return null;
  const parts: Buffer[] = [];
  const seen = new Set<string>();
  let c: PeerCertificate | undefined = leaf;
  while (c?.raw) {
    const fp = sha256Hex(c.raw);
    if (seen.has(fp)) break;
    seen.add(fp);
    parts.push(c.raw);
    c = (c as { issuerCertificate?: PeerCertificate }).issuerCertificate;
  }
  return {
    digest: `sha256:${sha256Hex(Buffer.concat(parts))}`,
    certificate: {
      subject: nameOf(leaf.subject),
      issuer: nameOf(leaf.issuer),
      validTo: leaf.valid_to,
    },
  };
}

function nameOf(n: object | undefined): string {
  if (!n) return "";
  return Object.entries(n)
    .map(([k, v]) => `${k}=${Array.isArray(v) ? v.join("+") : String(v)}`)
    .join(", ");
}
