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
      // only when there is one: every other record's digest stays what it was
      ...(f.writtenNumbers?.length ? { writtenNumbers: f.writtenNumbers } : {}),
    }),
  );
}

/**
 * The exact numbers a record keeps for the part `under` of what the server said (`serverInfo`,
 * `capabilities`): its entries of `writtenNumbers`, sorted (empty for nearly every record).
 */
export function writtenNumbersUnder(f: { writtenNumbers?: unknown }, under: string): string[] {
  const all = Array.isArray(f.writtenNumbers) ? f.writtenNumbers : [];
  const prefix = `${JSON.stringify([under]).slice(0, -1)},`;
  return all.filter((e): e is string => typeof e === "string" && e.startsWith(prefix));
}

/**
 * A remote record's `serverInfo` as JSON text, each number the record keeps exactly
 * (`writtenNumbers`) written with its exact value (`9007199254740993`, `1e400`, `123456789e-330`)
 * rather than as JSON.parse read it: what the server said, for people (`status`, the approval
 * review). Plain JSON text for every other record; null when it has no serverInfo.
 */
export function writtenServerInfo(f: { serverInfo?: unknown; writtenNumbers?: unknown }): string | null {
  if (f.serverInfo === undefined || f.serverInfo === null) return null;
  const exact = new Map<string, string>();
  for (const e of writtenNumbersUnder(f, "serverInfo")) {
    const at = e.lastIndexOf("]=");
    if (at < 0) continue;
    try {
      const path = JSON.parse(e.slice(0, at + 1)) as unknown[];
      exact.set(JSON.stringify(path.slice(1)), e.slice(at + 2).replace(/e0$/, ""));
    } catch {
      // not one of the gateway's entries: shown as read
    }
  }
  return exactJson(f.serverInfo, exact, []);
}

function exactJson(v: unknown, exact: ReadonlyMap<string, string>, path: (string | number)[]): string {
  if ((typeof v === "number" || v === null) && exact.size > 0) {
    // the exact value where JSON.parse read this very number (one beyond the double range reads as
    // Infinity, which the stored record holds as null)
    const written = exact.get(JSON.stringify(path));
    const read = written === undefined ? undefined : Number(written);
    if (written !== undefined && (v === null ? !Number.isFinite(read) : read === v)) return written;
  }
  if (typeof v !== "object" || v === null) return JSON.stringify(v) ?? "null";
  const parts: string[] = [];
  if (Array.isArray(v)) {
    v.forEach((e, i) => {
      parts.push(exactJson(e, exact, [...path, i]));
    });
    return `[${parts.join(",")}]`;
  }
  for (const [k, e] of Object.entries(v)) {
    if (e === undefined) continue;
    parts.push(`${JSON.stringify(k)}:${exactJson(e, exact, [...path, k])}`);
  }
  return `{${parts.join(",")}}`;
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
