import { randomBytes, timingSafeEqual } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { BlockList, isIP, type Socket } from "node:net";
import { networkInterfaces } from "node:os";
import { join } from "node:path";
import { safeText } from "../catalog/text.js";
import { acceptedFromOther } from "../identity/otherUser.js";
import { shellWord } from "../util/shellWord.js";
import { readSmallFile, SmallFileError } from "../util/smallFile.js";

/**
 * Who may speak to the HTTP front: the listen address and its loopback rule, the bearer token,
 * and the Host/Origin checks that refuse DNS rebinding. Everything here answers before any byte
 * of the body is read.
 */

export interface ListenAddress {
  /** as given, without brackets (an IPv6 literal is bare) */
  host: string;
  port: number;
  loopback: boolean;
}

/** Parses `HOST:PORT` (`[::1]:PORT` for IPv6); a problem is returned as one sentence. */
export function parseListenAddress(text: string): ListenAddress | string {
  const m = /^(?:\[([0-9A-Fa-f:.]+)\]|([^:[\]]+)):([0-9]{1,5})$/.exec(text.trim());
  // the value is not repeated: a word given in the wrong place may be a secret
  if (!m) return "must be HOST:PORT, e.g. 127.0.0.1:8765 or [::1]:8765";
  const host = (m[1] ?? m[2])!;
  const port = Number(m[3]);
  // each after the flag or the key's name, as the sentence's verb: "--listen has …"
  // `:08080` was read as 8080 where every other number portcullis reads (a revision, a record's
  // SEQ, console --port) is refused so: written otherwise than the port it is, it may be a typo
  if (/^0[0-9]/.test(m[3]!)) return "has a port written with a leading zero; write the port without it";
  if (port > 65535) return `has the port ${port}, out of range (0-65535)`;
  if (host !== "localhost" && isIP(host) === 0)
    return "has a host that is not an IP address or localhost (a name could resolve elsewhere)";
  return { host, port, loopback: isLoopback(host) };
}

/**
 * 127.0.0.0/8, ::1 and the IPv4-mapped forms of the first, in any spelling an address parser
 * reads (`0::1`, `::ffff:7f00:1`, `0:0:0:0:0:ffff:127.0.0.1`), and the name localhost. By node's
 * own address parsing (BlockList), not by comparing text: a spelling the text compare missed was
 * refused as not loopback (`--listen [0::1]:PORT --no-auth`).
 */
export function isLoopback(host: string): boolean {
  const h = host.toLowerCase();
  if (h === "localhost") return true;
  const family = isIP(h);
  if (family === 0) return false;
  try {
    return LOOPBACK.check(h, family === 4 ? "ipv4" : "ipv6");
  } catch {
    return false; // an address BlockList cannot read (a zone id) is no loopback one
  }
}

const LOOPBACK = new BlockList();
LOOPBACK.addSubnet("127.0.0.0", 8, "ipv4");
LOOPBACK.addAddress("::1", "ipv6");

/**
 * Whether `address` (a socket's remote address, as node reports it) is one of this machine's: a
 * loopback address, or an address of one of its interfaces now. A local process that dials the
 * machine's own LAN address arrives from that address, and is as much this machine's as one on
 * 127.0.0.1 (its socket is in this kernel's tables). A packet from elsewhere claiming such a
 * source is dropped by the kernel, and even if one came, no local socket would be its other end.
 */
export function isThisMachine(address: string): boolean {
  if (isLoopback(address)) return true;
  const plain = (a: string) => {
    const h = a.split("%")[0]!.toLowerCase();
    return h.startsWith("::ffff:") && isIP(h.slice(7)) === 4 ? h.slice(7) : h;
  };
  const wanted = plain(address);
  for (const list of Object.values(networkInterfaces()))
    for (const a of list ?? []) if (plain(a.address) === wanted) return true;
  return false;
}

/**
 * Why a connection to a front without a token (`--no-auth`) is not served, or null when it may
 * be. Loopback is this machine, not this user: with no token, any local user's process could
 * otherwise call the tools with this user's servers and credentials. On Linux a connection is
 * served only when the kernel's socket table (/proc/net/tcp, readable by every user) lists its
 * other end as a live socket of this process's user, so a connection whose other end is listed
 * as another user's is refused, and so is one whose other end is not listed at all: a process
 * that wrote its request and closed its socket before the front accepted the connection leaves
 * no owner to check (its end is listed without one), and its request must not run unchecked. On
 * other systems there is no such table to read: null (docs/security.md says so). Read before any
 * byte of the connection is: the caller closes it unread. The reason names a uid, never more.
 */
export function unauthenticatedPeerProblem(s: Socket): string | null {
  const other = acceptedFromOther(s);
  if (other === null) return null;
  const own = process.getuid?.();
  if ("uid" in other)
    return `the connecting process is another user's (uid ${other.uid}), and --no-auth serves only this user's (uid ${own}) processes`;
  return `the kernel does not list the connecting process's socket as a live one of this user (uid ${own}): it closed already, or /proc/net/tcp cannot be read; --no-auth serves only connections it can tell are this user's`;
}

/**
 * One host as the WHATWG URL parser writes it, the form a client sends in `Host` (fetch() and
 * browsers serialise the URL they were given): an IPv6 address compressed and lowercased in
 * brackets (`[::ffff:127.0.0.1]` is sent as `[::ffff:7f00:1]`, `[0::1]` as `[::1]`), an IPv4
 * address and a name lowercased. Only an address node reads as one (isIP: dotted-decimal IPv4,
 * any IPv6 spelling) is rewritten; a name is compared as written (lowercased), so nothing else
 * the URL parser would turn into this server's name (`127.1`, `0x7f.0.0.1`, `%6cocalhost`) is
 * taken for it. `host` is bare or bracketed; null when it is neither a name nor an address.
 */
export function hostForm(host: string): string | null {
  const bare = host.startsWith("[") && host.endsWith("]") ? host.slice(1, -1) : host;
  const family = isIP(bare);
  if (bare !== host && family !== 6) return null;
  if (family === 0) return host.toLowerCase();
  try {
    return new URL(`http://${family === 6 ? `[${bare}]` : bare}/`).hostname;
  } catch {
    return null;
  }
}

/**
 * The hosts a client may name in `Host` for a server whose sockets are bound to exactly
 * `addresses` (each as node reports a bound socket's: `127.0.0.1`, `::1`, `0.0.0.0`), on `port`,
 * each as `host:port` with the host in the URL parser's form (hostForm) and the port always
 * written (see hostKey). The one rule of both HTTP servers, `run --listen` and the console, so
 * the two cannot differ: a host names an address a socket of this server takes connections
 * for, in every spelling that reaches it (by value: `[0::1]` is `[::1]`; an IPv4 address is
 * also reached as its IPv4-mapped IPv6 address, `[::ffff:127.0.0.1]`, sent as `[::ffff:7f00:1]`,
 * and an IPv4-mapped address as its IPv4 one); `localhost` only when one of those is an address
 * localhost stands for (LOCALHOST_ADDRESSES); never another name. A request naming an address
 * no socket of this server holds was not sent to this server: listening on 127.0.0.1 alone,
 * `[::1]` is refused, and on 127.0.0.5, localhost is. An unspecified address (0.0.0.0, ::)
 * takes connections for every address of this machine's interfaces of the families it serves
 * (:: both, node binds it dual-stack; 0.0.0.0 IPv4 only), and is itself taken as written.
 */
export function hostsOfSockets(addresses: readonly string[], port: number): Set<string> {
  const out = new Set<string>();
  for (const a of addresses.flatMap(servedAddresses)) addSpellings(out, a, port);
  if (LOCALHOST_ADDRESSES.some((a) => out.has(`${a}:${port}`))) addSpellings(out, "localhost", port);
  return out;
}

/**
 * What `localhost` stands for, in hostForm's form: 127.0.0.1 and ::1, as browsers resolve it
 * themselves (RFC 6761, never asking DNS) and the machine's hosts file gives it.
 */
const LOCALHOST_ADDRESSES = ["127.0.0.1", "[::1]"];

/** The addresses a socket bound to `bound` takes connections for (see hostsOfSockets). */
function servedAddresses(bound: string): string[] {
  const unspecified = bound === "0.0.0.0" ? 4 : bound === "::" ? 6 : 0;
  if (unspecified === 0) return [bound];
  const out = [bound];
  for (const list of Object.values(networkInterfaces()))
    for (const a of list ?? [])
      if (unspecified === 6 || isIP(a.address) === 4) out.push(a.address.split("%")[0]!);
  return out;
}

/** Whether a `Host` header names one of `hosts` (hostsOfSockets), compared by value. */
export function hostNamesOneOf(hostHeader: string | undefined, hosts: ReadonlySet<string>): boolean {
  const host = hostHeader ? hostKey(hostHeader) : null;
  return host !== null && hosts.has(host);
}

/** `h` (a name, or an address bare) into `out` as `host:port`, in each form a client sends for it. */
function addSpellings(out: Set<string>, h: string, port: number): void {
  const form = hostForm(isIP(h) === 6 ? `[${h}]` : h);
  if (form === null) return;
  out.add(`${form}:${port}`);
  if (isIP(h) === 4) out.add(`${hostForm(`[::ffff:${h}]`)}:${port}`);
  const v4 = mappedIPv4(form);
  if (v4 !== null) out.add(`${v4}:${port}`);
}

/** The front's URL as a client given it sends it (hostForm: `[::ffff:7f00:1]` for `[::ffff:127.0.0.1]`). */
export function listeningUrl(host: string, port: number): string {
  return `http://${hostForm(isIP(host) === 6 ? `[${host}]` : host) ?? host}:${port}/mcp`;
}

/**
 * The IPv4 address an IPv4-mapped IPv6 address in hostForm's form (`[::ffff:7f00:5]`) stands for
 * (`127.0.0.5`: a socket bound to the one takes connections to the other), else null. The URL
 * parser reads the 32 bits as one IPv4 number (`0x7f000005`) and writes them dotted.
 */
function mappedIPv4(form: string): string | null {
  const m = /^\[::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})\]$/.exec(form);
  return m ? new URL(`http://0x${m[1]!.padStart(4, "0")}${m[2]!.padStart(4, "0")}/`).hostname : null;
}

/** http's port when a `Host` or an origin names none */
const HTTP_DEFAULT_PORT = 80;

/**
 * A `Host` header as `host:port`, the host in the URL parser's form (hostForm: an address in any
 * spelling node reads, compared by value), the port written even when the header leaves it out:
 * clients omit the default port (`Host: 127.0.0.1` for port 80), as the URL parser does for an
 * origin. Null when it is not `host`, `host:port`, `[v6]` or `[v6]:port`.
 */
export function hostKey(header: string): string | null {
  const m = /^(\[[0-9A-Fa-f:.]+\]|[^:[\]]+)(?::([0-9]{1,5}))?$/.exec(header);
  if (!m) return null;
  const port = m[2] === undefined ? HTTP_DEFAULT_PORT : Number(m[2]);
  const host = hostForm(m[1]!);
  return port > 65535 || host === null ? null : `${host}:${port}`;
}

/**
 * The origins a browser page served from one of `hosts` sends, each exactly as browsers write
 * it (the ASCII serialization of RFC 6454: `http://host` with the port only when it is not 80,
 * the host lowercased, an IPv6 address compressed in brackets), as the URL parser writes an origin.
 */
export function allowedOrigins(hosts: Set<string>): Set<string> {
  const out = new Set<string>();
  for (const host of hosts) {
    try {
      out.add(new URL(`http://${host}`).origin);
    } catch {
      // an interface address the URL parser will not take (a zone id): no browser names it
    }
  }
  return out;
}

/**
 * The origin a page of the host a `Host` header names sends, exactly as browsers write it (as
 * allowedOrigins does), the host taken by value (hostKey): `Host: LOCALHOST:8788` and
 * `Host: [0::1]:8788` name the pages of `http://localhost:8788` and `http://[::1]:8788`, and a
 * `Host` that leaves the port out names port 80's page, `http://127.0.0.1`. Null for a `Host`
 * hostKey does not read.
 */
export function originOfHost(hostHeader: string | undefined): string | null {
  const key = hostHeader === undefined ? null : hostKey(hostHeader);
  if (key === null) return null;
  try {
    return new URL(`http://${key}`).origin;
  } catch {
    return null;
  }
}

/**
 * `Host` must name one of `hosts` (hostsOfSockets: an address the server's socket takes
 * connections for, or localhost); `Origin`, when present, must be exactly one of `origins`
 * (allowedOrigins: the http origins of the same hosts; a page of another site sends its
 * own origin, and a rebound name still arrives with the attacker's `Host`). `Host` is compared as
 * host plus effective port, so the default port written or left out is the same. `Origin` is
 * compared as written: a browser sends only an origin's serialization, so anything else (user
 * info, a path, a trailing slash, capitals, `127.1`, `%6c`ocalhost, an IPv6 address not
 * compressed, `:80` written out, `null`) comes from something that is not a page of this server,
 * and the URL parser, which would read several of those as this server's origin, is not asked
 * to guess. Returns the refusal, or null.
 */
export function hostOriginProblem(
  hostHeader: string | undefined,
  originHeader: string | undefined,
  hosts: Set<string>,
  origins: Set<string> = allowedOrigins(hosts),
): string | null {
  if (!hostNamesOneOf(hostHeader, hosts)) return `Host "${hostHeader ?? ""}" is not this server`;
  if (originHeader === undefined) return null;
  if (!origins.has(originHeader)) return `Origin "${originHeader}" is not this server`;
  return null;
}

/** Compares a request's `Authorization` header with the token in constant time. */
export function bearerMatches(header: string | undefined, token: string): boolean {
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header ?? "");
  const given = Buffer.from(m ? m[1]! : "", "utf8");
  const want = Buffer.from(token, "utf8");
  // equal lengths for timingSafeEqual; the length check happens after the comparison
  const padded = Buffer.alloc(want.length);
  given.copy(padded, 0, 0, Math.min(given.length, want.length));
  return timingSafeEqual(padded, want) && given.length === want.length;
}

/** Where a generated token of the server `label` lives: `<stateDir>/listen/<label>.token`. */
export function tokenPath(stateDir: string, label: string): string {
  return join(stateDir, "listen", `${label.replace(/[^A-Za-z0-9._-]/g, "-")}.token`);
}

export class TokenFileError extends Error {}

/** A token is one line; a file far larger is not a token file (and is not read into memory). */
const MAX_TOKEN_FILE_BYTES = 64 * 1024;

/**
 * A --listen-token-file's text: only a regular file of token size (readSmallFile), so a FIFO
 * does not hang the gateway's start and /dev/zero does not crash it.
 */
function readTokenFile(file: string, named: string): string {
  try {
    return readSmallFile(file, MAX_TOKEN_FILE_BYTES, "a token file");
  } catch (e) {
    if (e instanceof SmallFileError) throw new TokenFileError(`${named}: ${e.message}`);
    throw e;
  }
}

/**
 * A token file others may read (a file written with the usual umask is 0644) or change: the token
 * is what keeps the machine's other users out of the server (a loopback port is open to every
 * one of them), so it is refused, as the generated one is kept 0600. The mode is the file's, not
 * of a directory on its way (which may be shared, /tmp).
 */
function refuseSharedTokenFile(file: string, named: string): void {
  let mode: number;
  try {
    mode = statSync(file).mode & 0o777;
  } catch {
    return; // read a moment ago: gone since, and nothing more to tell
  }
  if ((mode & 0o077) === 0) return;
  throw new TokenFileError(
    `${named}: other users may read or change it (mode ${mode.toString(8).padStart(3, "0")}), and the token is what keeps them out of the server; make it yours alone with chmod 600 ${shellWord(file)}, then start the gateway again`,
  );
}

/**
 * The token on a token file's first line, or a TokenFileError saying why there is none (missing,
 * unreadable, not a regular file, too large, no token of at least 16 characters on its first
 * line). Doctor asks the same question, so it cannot disagree with the gateway; the message never
 * carries the file's text.
 */
export function fileToken(file: string, named: string): string {
  const text = readTokenFile(file, named);
  const token = text.split(/\r?\n/)[0]!.trim();
  if (token.length < 16 || /\s/.test(token))
    throw new TokenFileError(
      `${named}: the first line must be a token of at least 16 characters without spaces`,
    );
  return token;
}

/**
 * Why a server's configured listenTokenFile is refused for lack of `listen` (run without
 * --listen), or null: a token for a front that is not served. Run and doctor both ask this. The
 * file's path is written escaped (safeText): a directory's name may hold a newline or an ESC, and
 * doctor --json carries the sentence as it is made.
 */
export function tokenFileWithoutListen(
  server: { label: string; configFile: string | null; listen?: string; listenTokenFile?: string },
  listenFlag: string | undefined,
): string | null {
  if (server.listenTokenFile === undefined || listenFlag !== undefined || server.listen !== undefined)
    return null;
  return `listenTokenFile of "${server.label}" in ${safeText(String(server.configFile))} needs listen (in the file, or run --listen HOST:PORT)`;
}

/** run's options that shape the HTTP front, which mean nothing without an address to serve it on. */
export const LISTEN_ONLY_FLAGS = [
  "listen-token-file",
  "no-auth",
  "listen-max-sessions",
  "listen-idle-timeout",
] as const;

/**
 * Why run refuses its command line's listen-only options (LISTEN_ONLY_FLAGS) when there is no
 * address to listen on (`listen`: --listen, else the server's configured `listen`), or null. It
 * names the first given, in that list's order. Run and doctor both ask this, so a host entry doctor
 * passes is one the gateway starts.
 */
export function listenFlagWithoutListen(
  values: { readonly [F in (typeof LISTEN_ONLY_FLAGS)[number]]?: unknown },
  listen: string | undefined,
): string | null {
  if (listen !== undefined) return null;
  const given = LISTEN_ONLY_FLAGS.find((f) => values[f] !== undefined);
  return given === undefined ? null : `--${given} needs --listen HOST:PORT`;
}

/**
 * The bearer token: read from `file` when given (first line, at least 16 characters), else the
 * one generated for this label (32 random bytes, hex, 0600), made on first use and kept. `named`:
 * how a problem of the file names it, by the flag or by the configuration key it was given with.
 */
export function loadToken(
  stateDir: string,
  label: string,
  file: string | undefined,
  // the path escaped: run's sentence may be printed, kept or carried on as it is made
  named = `--listen-token-file ${safeText(String(file))}`,
): { token: string; path: string } {
  if (file !== undefined) {
    const token = fileToken(file, named);
    refuseSharedTokenFile(file, named);
    return { token, path: file };
  }
  const path = tokenPath(stateDir, label);
  if (existsSync(path)) {
    if ((statSync(path).mode & 0o077) !== 0) chmodSync(path, 0o600);
    const token = readFileSync(path, "utf8").trim();
    if (token.length >= 16) return { token, path };
  }
  mkdirSync(join(stateDir, "listen"), { recursive: true, mode: 0o700 });
  const token = randomBytes(32).toString("hex");
  writeFileSync(path, `${token}\n`, { mode: 0o600 });
  return { token, path };
}
