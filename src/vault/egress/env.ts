import { existsSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { BlockList, isIP } from "node:net";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { readSmallFile, SmallFileError } from "../../util/smallFile.js";
import { hostValue, parseDeclared } from "./hosts.js";

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

/**
 * The most bytes a CA bundle is read to: the system's holds about 150 certificates in some
 * 220 KB; a file larger than this is no bundle (a disk image, a log named by mistake).
 */
export const MAX_CA_BUNDLE_BYTES = 16 * 1024 * 1024;

/**
 * The certificates of a CA bundle the user's environment names (`variable`: NODE_EXTRA_CA_CERTS,
 * SSL_CERT_FILE, REQUESTS_CA_BUNDLE), "" when it names none or one that cannot be used, with a
 * warning naming the variable. Read by readSmallFile: a FIFO there used to block the gateway's
 * whole event loop for ever before its server started, and /dev/zero grew it past 2 GB; a FIFO,
 * a device or a file over MAX_CA_BUNDLE_BYTES is now refused before anything is read.
 */
export function readCaBundle(
  variable: string,
  path: string | undefined,
  warn?: (line: string) => void,
): string {
  if (!path) return "";
  try {
    const text = readSmallFile(path, MAX_CA_BUNDLE_BYTES, "a certificate bundle");
    return text === "" || text.endsWith("\n") ? text : `${text}\n`;
  } catch (e) {
    const why = e instanceof SmallFileError ? e.message : "it cannot be read";
    warn?.(`${variable} (${path}) is not used: ${why}`);
    return "";
  }
}

/**
 * Whether a NO_PROXY entry may send one of the declared hosts around the proxy, read as the most
 * lenient of the clients that honour it reads it: a name matches as a plain suffix (Python
 * requests: `ample.com` covers `api.example.com`), a trailing dot and a port are ignored,
 * `[::1]`, `::1` and `0:0:0:0:0:0:0:1` are one address, an address in any spelling the declared
 * hosts are compared in (hostValue: `127.1`, `0x7f.0.0.1`, `::ffff:127.0.0.1` are 127.0.0.1: a
 * client may compare the spelling it was given with the entry as written) is that address, and a
 * CIDR block (`10.0.0.0/8`: curl, Go, requests) covers the addresses in it. An entry that might is dropped: a declared host that
 * went around the proxy would get the placeholder, not the credential, and not be recorded.
 */
export function coversDeclared(entry: string, hosts: readonly string[]): boolean {
  const e = entryHost(entry);
  if (e === "") return false;
  if (e === "*") return true;
  const slash = e.lastIndexOf("/");
  // the address an entry denotes, however spelled (null for a name, a block, or no host)
  const address = slash < 0 ? hostValue(e.includes(":") ? `[${e}]` : e) : null;
  return hosts.some((declared) => {
    const h = withoutTrailingDots(declared.toLowerCase());
    const family = isIP(h);
    if (family === 0) return h.endsWith(e);
    if (address !== null && address === hostValue(family === 6 ? `[${h}]` : h)) return true;
    const kind = family === 4 ? "ipv4" : "ipv6";
    const list = new BlockList();
    try {
      if (slash < 0) list.addAddress(e, kind);
      else list.addSubnet(e.slice(0, slash), Number(e.slice(slash + 1)), kind);
    } catch {
      // not an address of that family (a name, another family, a prefix out of range)
      return h.endsWith(e);
    }
    return list.check(h, kind);
  });
}

/**
 * A NO_PROXY entry's host: lower case, without its blanks (requests drops every space of the
 * variable), a `*` and every `.` before it (urllib strips all leading dots), its port, brackets,
 * trailing dots.
 */
function entryHost(entry: string): string {
  let e = entry.toLowerCase().replaceAll(" ", "").replaceAll("\t", "");
  if (e === "*") return e;
  if (e.startsWith("*")) e = e.slice(1);
  let start = 0;
  while (start < e.length && e[start] === ".") start++;
  e = e.slice(start);
  if (e.startsWith("[")) {
    // [v6]:port or [v6]/prefix
    const close = e.indexOf("]");
    const after = close < 0 ? "" : e.slice(close + 1);
    e = (close < 0 ? e.slice(1) : e.slice(1, close)) + (after.startsWith("/") ? after : "");
  } else if (e.indexOf(":") === e.lastIndexOf(":") && e.includes(":")) {
    e = e.slice(0, e.indexOf(":")); // one colon: name:port or v4:port (a bare v6 has several)
  }
  return withoutTrailingDots(e);
}

function withoutTrailingDots(host: string): string {
  let end = host.length;
  while (end > 0 && host[end - 1] === ".") end--;
  return host.slice(0, end);
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
  /** the user's NODE_EXTRA_CA_CERTS certificates when the caller read them already (readCaBundle) */
  extraCa?: string;
  /** told of a CA variable whose file is not used (readCaBundle) */
  warn?: (line: string) => void;
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
    const userExtra = o.extraCa ?? readCaBundle("NODE_EXTRA_CA_CERTS", o.base.NODE_EXTRA_CA_CERTS, o.warn);
    writeFileSync(nodeExtra, `${userExtra}${o.caPem}`, { mode: 0o644 });
    env.NODE_EXTRA_CA_CERTS = nodeExtra;
    const systemBase =
      readCaBundle("SSL_CERT_FILE", o.base.SSL_CERT_FILE, o.warn) ||
      readCaBundle("the system bundle", SYSTEM_BUNDLE);
    const sslBundle = join(o.dir, "ca-bundle.pem");
    writeFileSync(sslBundle, `${systemBase}${o.caPem}`, { mode: 0o644 });
    env.SSL_CERT_FILE = sslBundle;
    if (o.base.REQUESTS_CA_BUNDLE && existsSync(o.base.REQUESTS_CA_BUNDLE)) {
      const requests = join(o.dir, "requests-ca-bundle.pem");
      const user = readCaBundle("REQUESTS_CA_BUNDLE", o.base.REQUESTS_CA_BUNDLE, o.warn);
      writeFileSync(requests, `${user}${o.caPem}`, { mode: 0o644 });
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
