import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseDeclared } from "./hosts.js";

/**
 * What a server's environment gets so that its HTTP(S) goes through the egress proxy and trusts
 * the local CA, without losing the user's own settings:
 * - HTTP_PROXY/HTTPS_PROXY (both cases) → the proxy;
 * - NO_PROXY/no_proxy: the user's entries kept, except those that would send a declared host
 *   around the proxy (a declared host always goes through it, or it would get the placeholder);
 * - NODE_EXTRA_CA_CERTS: a file with the user's own NODE_EXTRA_CA_CERTS certificates and the local CA;
 * - SSL_CERT_FILE (OpenSSL: Python, curl …) and REQUESTS_CA_BUNDLE (Python requests): a file with
 *   the user's bundle (their SSL_CERT_FILE / REQUESTS_CA_BUNDLE, else the system bundle) and the
 *   local CA;
 * - NODE_OPTIONS: the user's, then `--import <preload>` (Node's global fetch ignores proxy variables).
 * These are portcullis's plumbing, added at each spawn: they are not part of the environment the
 * execution record digests (the proxy's port changes with every gateway).
 */

export const SYSTEM_BUNDLE = "/etc/ssl/certs/ca-certificates.crt";

export function preloadPath(): string {
  return fileURLToPath(new URL("./preload.js", import.meta.url));
}

function readPem(path: string | undefined): string {
  if (!path) return "";
  try {
    const text = readFileSync(path, "utf8");
    return text.endsWith("\n") ? text : `${text}\n`;
  } catch {
    return "";
  }
}

/** NO_PROXY entries that would match one of the declared host names. */
function coversDeclared(entry: string, hosts: string[]): boolean {
  const e = entry.trim().toLowerCase().replace(/:\d+$/, "");
  if (e === "") return false;
  if (e === "*") return true;
  const bare = e.replace(/^\*?\./, "");
  return hosts.some((h) => h === bare || h.endsWith(`.${bare}`));
}

export interface EgressEnvOptions {
  /** the environment the server would get (the user's, with the config's env) */
  base: Record<string, string>;
  proxyUrl: string;
  /** the local CA certificate (PEM), or null when there is none yet */
  caPem: string | null;
  /** where to write the bundles (removed by `cleanup`) */
  dir: string;
  declaredHosts: readonly string[];
}

export function egressEnv(o: EgressEnvOptions): { env: Record<string, string>; cleanup(): void } {
  const env: Record<string, string> = {};
  for (const k of ["HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"]) env[k] = o.proxyUrl;
  const hosts = o.declaredHosts.map((h) => parseDeclared(h).host);
  const userNoProxy = o.base.NO_PROXY ?? o.base.no_proxy ?? "";
  const kept = userNoProxy.split(",").filter((e) => e.trim() !== "" && !coversDeclared(e, hosts));
  env.NO_PROXY = kept.join(",");
  env.no_proxy = env.NO_PROXY;
  if (o.caPem) {
    mkdirSync(o.dir, { recursive: true, mode: 0o700 });
    const nodeExtra = join(o.dir, "node-extra-ca.pem");
    writeFileSync(nodeExtra, `${readPem(o.base.NODE_EXTRA_CA_CERTS)}${o.caPem}`, { mode: 0o644 });
    env.NODE_EXTRA_CA_CERTS = nodeExtra;
    const systemBase = readPem(o.base.SSL_CERT_FILE) || readPem(SYSTEM_BUNDLE);
    const sslBundle = join(o.dir, "ca-bundle.pem");
    writeFileSync(sslBundle, `${systemBase}${o.caPem}`, { mode: 0o644 });
    env.SSL_CERT_FILE = sslBundle;
    if (o.base.REQUESTS_CA_BUNDLE && existsSync(o.base.REQUESTS_CA_BUNDLE)) {
      const requests = join(o.dir, "requests-ca-bundle.pem");
      writeFileSync(requests, `${readPem(o.base.REQUESTS_CA_BUNDLE)}${o.caPem}`, { mode: 0o644 });
      env.REQUESTS_CA_BUNDLE = requests;
    } else env.REQUESTS_CA_BUNDLE = sslBundle;
  }
  const preload = `--import=${pathToFileURL(preloadPath()).href}`;
  env.NODE_OPTIONS = o.base.NODE_OPTIONS ? `${o.base.NODE_OPTIONS} ${preload}` : preload;
  return {
    env,
    cleanup: () => {
      try {
        rmSync(o.dir, { recursive: true, force: true });
      } catch {
        /* best effort */
      }
    },
  };
}
