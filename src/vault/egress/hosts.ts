import { isIP } from "node:net";

/**
 * Declared destinations: "host" or "host:port" (IPv6 in brackets), as written in
 * `credentials.*.hosts` and in `vault set --host`, compared with a request's destination by value
 * (hostValue), never by resolving a name. A host without a port means the default ports of HTTPS
 * and HTTP (443, 80) and no other.
 */

export interface Destination {
  /** the host by value (hostValue): a lower-case name, dotted IPv4, compressed IPv6 without brackets */
  host: string;
  port: number;
}

/**
 * A declared destination as written in `credentials.*.hosts` or `vault set --host`, written in
 * the form requests are matched in (hostValue: a name in lower case without its trailing dot, an
 * address as the address it denotes, `127.1` as `127.0.0.1`, `[::FFFF:127.0.0.1]` as
 * `127.0.0.1`), or why it can never match: not HOST or HOST:PORT, a name that is no DNS name, a
 * name ending in a number that is no IPv4 address (`1.2.3.999`: a URL parser refuses it), a port
 * outside 1–65535. Checked where it is written, so that a secret is never stored for a
 * destination no request can have.
 */
export function declaredHost(text: string): { host: string } | { problem: string; instead?: string } {
  const m = /^(?:\[([0-9A-Fa-f:.]+)\]|([^:[\]]+))(?::(\d{1,5}))?$/.exec(text);
  if (!m) {
    const instead = hostOfUrl(text);
    return instead === null
      ? { problem: "is not HOST or HOST:PORT" }
      : { problem: "is not HOST or HOST:PORT but a URL; write its host without the scheme", instead };
  }
  const name = m[2];
  if (name !== undefined && (!NAME.test(name) || name.length > 254))
    return { problem: "is not a DNS name or an IP address" };
  if (m[3] !== undefined) {
    // `:0443` was 443, where a reader (or a tool reading 0-prefixed numbers as octal) may take it
    // for another port: refused as --listen's and console --port's are
    if (/^0[0-9]/.test(m[3]))
      return { problem: "has a port written with a leading zero; write the port without it" };
    const port = Number(m[3]);
    if (port < 1 || port > 65535) return { problem: "has a port outside 1-65535" };
  }
  const value = hostValue(m[1] !== undefined ? `[${m[1]}]` : name!);
  if (value === null)
    return { problem: m[1] !== undefined ? "is not an IPv6 address" : "is not a DNS name or an IP address" };
  const host = value.includes(":") ? `[${value}]` : value;
  return { host: m[3] !== undefined ? `${host}:${Number(m[3])}` : host };
}

/**
 * What to declare for a URL written where a host goes (`https://api.example.com/v1` is
 * `api.example.com`; `https://api.example.com:8443` is `api.example.com:8443`), or null when the
 * text is no http(s)/ws(s) URL with a valid host. Only the host and a port other than the
 * scheme's default are taken: those default ports (443, 80) are what a host declared without a
 * port already means. A path, query or userinfo is never repeated (it may hold a token).
 */
function hostOfUrl(text: string): string | null {
  if (!/^(https?|wss?):\/\//i.test(text)) return null;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return null;
  }
  const d = declaredHost(url.port === "" ? url.hostname : `${url.hostname}:${url.port}`);
  return "host" in d ? d.host : null;
}

/**
 * The first declared host (in declaredHost's form) that repeats an earlier one, by both indexes,
 * or null. Written twice (`a.example` and `A.example.`: one host by value), it was kept twice,
 * and listed so; refused where it is written, as a key written twice in portcullis.json and a
 * header named twice (in any letter case) are, so the list says once what it allows.
 */
export function repeatedHost(hosts: readonly string[]): { at: number; first: number } | null {
  const seen = new Map<string, number>();
  for (const [at, host] of hosts.entries()) {
    const first = seen.get(host);
    if (first !== undefined) return { at, first };
    seen.set(host, at);
  }
  return null;
}

export function parseDeclared(declared: string): { host: string; port: number | null } {
  const v6 = /^\[([^\]]+)\](?::(\d+))?$/.exec(declared);
  if (v6) return { host: v6[1]!.toLowerCase(), port: v6[2] ? Number(v6[2]) : null };
  const at = declared.lastIndexOf(":");
  if (at < 0) return { host: declared.toLowerCase(), port: null };
  return { host: declared.slice(0, at).toLowerCase(), port: Number(declared.slice(at + 1)) };
}

/**
 * A host by what it denotes, the one form both sides of a match are compared in, or null when
 * it is neither a DNS name nor an IP address (it then matches nothing):
 * - a DNS name: lower case, its one trailing dot dropped (`API.example.com.` is the fully
 *   qualified spelling of api.example.com, which a URL keeps); `a.example..` is no name;
 * - an IPv4 address in any notation the WHATWG URL parser reads as one, which is what a host
 *   whose last label is a number is (`127.1`, `2130706433`, `0x7f.0.0.1`, `0177.0.0.1`,
 *   `127.0.0.1.`): dotted decimal; such a host that is no address (`1.2.3.999`) is null;
 * - an IPv6 address, bracketed or bare, in any spelling: the URL parser's compressed form
 *   without brackets (`0:0:0:0:0:0:0:1` is `::1`); an IPv4-mapped one (`::ffff:127.0.0.1`,
 *   `::ffff:7f00:1`) is that IPv4 address, which a connection to it reaches. A zone id is null.
 * The three never meet: a name's last label is no number and it has no colon, an IPv4 address
 * ends in one, an IPv6 address has colons. So a name never matches an address, whatever it
 * resolves to (no DNS is asked: its owner answers it and may answer differently a second later).
 * The proxy connects to this form of a destination, so the address a value is released for is
 * the address connected to, whatever a resolver would make of the spelling.
 */
export function hostValue(host: string): string | null {
  let h = host.toLowerCase();
  const bracketed = h.startsWith("[") && h.endsWith("]");
  if (bracketed || h.includes(":")) return ipv6Value(bracketed ? h.slice(1, -1) : h);
  if (h.endsWith(".")) h = h.slice(0, -1);
  // (NAME allows a trailing dot: a second one is no name)
  if (h.length > 253 || h.endsWith(".") || !NAME.test(h)) return null;
  return endsInNumber(h) ? ipv4Value(h) : h;
}

/** The WHATWG URL parser's test: a host whose last label is a number is an IPv4 address or nothing. */
function endsInNumber(name: string): boolean {
  const last = name.slice(name.lastIndexOf(".") + 1);
  return /^[0-9][0-9]*$/.test(last) || /^0x[0-9a-f]*$/.test(last);
}

/** Dotted decimal, by the URL parser's own reading of IPv4 numbers (the one clients use). */
function ipv4Value(name: string): string | null {
  try {
    const h = new URL(`http://${name}/`).hostname;
    return isIP(h) === 4 ? h : null;
  } catch {
    return null;
  }
}

function ipv6Value(address: string): string | null {
  if (!V6.test(address) || isIP(address) !== 6) return null;
  let h: string;
  try {
    h = new URL(`http://[${address}]/`).hostname.slice(1, -1);
  } catch {
    return null;
  }
  const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(h);
  if (!mapped) return h;
  const hi = Number.parseInt(mapped[1]!, 16);
  const lo = Number.parseInt(mapped[2]!, 16);
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

/**
 * Whether `dest` is a declared destination: its host the same by value (hostValue) as a declared
 * one's, and its port the declared port, or 443 or 80 for a host declared without one.
 */
export function hostMatches(declared: readonly string[], dest: Destination): boolean {
  const host = hostValue(dest.host);
  if (host === null) return false;
  return declared.some((d) => {
    const p = parseDeclared(d);
    return (
      declaredValue(d, p.host) === host &&
      (p.port === null ? dest.port === 443 || dest.port === 80 : p.port === dest.port)
    );
  });
}

/**
 * A declared host's value. parseDeclared takes the brackets off whatever they hold; what was in
 * brackets is valued as an IPv6 address or nothing, so a stored `[127.0.0.1]` (which no
 * declaration is let through as) matches nothing rather than 127.0.0.1.
 */
function declaredValue(declared: string, host: string): string | null {
  return hostValue(declared.startsWith("[") ? `[${host}]` : host);
}

/** Whether a host name (any port) is declared: what the holder mints a leaf certificate for. */
export function hostDeclared(declared: readonly string[], host: string): boolean {
  const h = hostValue(host);
  return h !== null && declared.some((d) => declaredValue(d, parseDeclared(d).host) === h);
}

/** "host:port" for records and the holder ("[v6]:port" for IPv6). */
export function destinationText(dest: Destination): string {
  return dest.host.includes(":") ? `[${dest.host}]:${dest.port}` : `${dest.host}:${dest.port}`;
}

const NAME = /^[a-z0-9]([a-z0-9-]{0,62})?(\.[a-z0-9]([a-z0-9-]{0,62})?)*\.?$/i;
const V6 = /^[0-9a-f:.]+$/i;

/**
 * A proxy request's target "host:port" (CONNECT's authority form), or null when the host is not
 * a DNS name or an IP address, or the port is not 1–65535. The host is given by value
 * (hostValue): the proxy connects to that address, matches it against the declared hosts and
 * records it. A name that ends in a number but is no IPv4 address (`1.2.3.999`) is kept as
 * written (lower case), to be passed through like any undeclared host: it matches nothing.
 */
export function parseAuthority(text: string): Destination | null {
  const m = /^(?:\[([^\]]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(text);
  if (!m) return null;
  const port = Number(m[3]);
  if (!Number.isInteger(port) || port < 1 || port > 65535) return null;
  const host = (m[1] ?? m[2] ?? "").toLowerCase();
  if (m[1] !== undefined ? !V6.test(host) : !NAME.test(host) || host.length > 253) return null;
  const value = hostValue(m[1] !== undefined ? `[${host}]` : host);
  if (value === null && m[1] !== undefined) return null;
  return { host: value ?? host.replace(/\.$/, ""), port };
}

/**
 * A `Host` value or a URL's authority (`name.`, `name.:port`) without its name's one trailing
 * dot; anything else as it is. The proxy matches, dials, records and mints a leaf for the name
 * without the dot (hostValue), and a TLS client's server name never has one (RFC 6066): the
 * request forwarded names its site the same way, so that an upstream that picks a site by the
 * name as written (a CDN, a virtual host) picks the one the proxy matched, not a site it keeps
 * under the dotted spelling (or none).
 */
export function withoutTrailingDot(authority: string): string {
  const m = /^([^:[\]@/?#]*[^.:[\]@/?#])\.(:\d{1,5})?$/.exec(authority);
  return m ? `${m[1]}${m[2] ?? ""}` : authority;
}

/** An absolute-form target (`http://name.:port/path`) with its authority's trailing dot dropped. */
export function targetWithoutTrailingDot(target: string): string {
  const m = /^(https?:\/\/)([^/?#]*)(.*)$/i.exec(target);
  if (!m) return target;
  const authority = withoutTrailingDot(m[2]!);
  return authority === m[2] ? target : `${m[1]}${authority}${m[3]}`;
}

/**
 * Why a request that is to carry a released value names a host other than its destination, or
 * null when it names only the destination. The proxy connects to `dest`, but the upstream picks
 * the site that answers from the request itself: its `Host` header, or the authority of an
 * absolute-form target (which RFC 9112 §3.2.2 tells a server to prefer). A declared host that
 * fronts many sites (a CDN, a PaaS router, a shared reverse proxy) would hand a request that
 * says `Host: attacker.example` to the attacker's site, credential and all: the value would
 * reach a host nobody declared. So a request with a released value must name `dest` (default
 * port optional) wherever it names a host, at most once.
 */
export function misdirection(
  dest: Destination,
  scheme: "http" | "https",
  target: string,
  names: readonly string[],
  values: readonly string[],
): string | null {
  const namesDest = (authority: string, s: string) => {
    const a = /:\d+$/.test(authority) ? authority : `${authority}:${s === "https:" ? 443 : 80}`;
    const p = parseAuthority(a);
    return p !== null && p.host === dest.host && p.port === dest.port;
  };
  const hosts = values.filter((_, i) => names[i]!.toLowerCase() === "host");
  if (hosts.length > 1) return "more than one Host header";
  if (hosts.length === 1 && !namesDest(hosts[0]!, `${scheme}:`))
    return `a Host header that does not name ${destinationText(dest)}`;
  if (!target.startsWith("/") && target !== "*") {
    let url: URL;
    try {
      url = new URL(target);
    } catch {
      return `a request target that is neither a path nor a URL of ${destinationText(dest)}`;
    }
    if ((url.protocol !== "http:" && url.protocol !== "https:") || !namesDest(url.host, url.protocol))
      return `a request target that does not name ${destinationText(dest)}`;
  }
  return null;
}
