/**
 * Declared destinations: "host" or "host:port" (lower-cased, IPv6 in brackets), as written in
 * `credentials.*.hosts` and in `vault set --host`. A host without a port means the default ports
 * of HTTPS and HTTP (443, 80) and no other.
 */

export interface Destination {
  /** lower-case name or address, IPv6 without brackets */
  host: string;
  port: number;
}

/**
 * A declared destination as written in `credentials.*.hosts` or `vault set --host`, normalised
 * as requests are matched (lower case, a name's trailing dot dropped), or why it can never match:
 * not HOST or HOST:PORT, a name that is no DNS name, a port outside 1–65535. Checked where it is
 * written, so that a secret is never stored for a destination no request can have.
 */
export function declaredHost(text: string): { host: string } | { problem: string } {
  const m = /^(?:\[([0-9A-Fa-f:.]+)\]|([^:[\]]+))(?::(\d{1,5}))?$/.exec(text);
  if (!m) return { problem: "is not HOST or HOST:PORT" };
  const name = m[2];
  if (name !== undefined && (!NAME.test(name) || name.length > 254))
    return { problem: "is not a DNS name or an IP address" };
  if (m[1] !== undefined && !V6.test(m[1])) return { problem: "is not an IPv6 address" };
  if (m[3] !== undefined) {
    const port = Number(m[3]);
    if (port < 1 || port > 65535) return { problem: "has a port outside 1-65535" };
  }
  const host = m[1] !== undefined ? `[${m[1].toLowerCase()}]` : name!.toLowerCase().replace(/\.$/, "");
  return { host: m[3] !== undefined ? `${host}:${Number(m[3])}` : host };
}

export function parseDeclared(declared: string): { host: string; port: number | null } {
  const v6 = /^\[([^\]]+)\](?::(\d+))?$/.exec(declared);
  if (v6) return { host: v6[1]!.toLowerCase(), port: v6[2] ? Number(v6[2]) : null };
  const at = declared.lastIndexOf(":");
  if (at < 0) return { host: declared.toLowerCase(), port: null };
  return { host: declared.slice(0, at).toLowerCase(), port: Number(declared.slice(at + 1)) };
}

/**
 * A host as hosts are compared: lower case, an IPv6 address without its brackets, and a name's
 * one trailing dot dropped (`api.example.com.` is the fully qualified spelling of the same host,
 * which a URL keeps: the WHATWG parser's hostname). Nothing else is changed: `a.example..` still
 * names no declared host. Applied to both sides, the declared host and the destination, so a
 * policy stored or written either way matches a request named either way.
 */
export function comparableHost(host: string): string {
  const h = host.toLowerCase().replace(/^\[(.*)\]$/, "$1");
  return h.endsWith(".") ? h.slice(0, -1) : h;
}

export function hostMatches(declared: readonly string[], dest: Destination): boolean {
  const host = comparableHost(dest.host);
  return declared.some((d) => {
    const p = parseDeclared(d);
    return (
      comparableHost(p.host) === host &&
      (p.port === null ? dest.port === 443 || dest.port === 80 : p.port === dest.port)
    );
  });
}

/** Whether a host name (any port) is declared: what the holder mints a leaf certificate for. */
export function hostDeclared(declared: readonly string[], host: string): boolean {
  const h = host.toLowerCase();
  return declared.some((d) => parseDeclared(d).host === h);
}

/** "host:port" for records and the holder ("[v6]:port" for IPv6). */
export function destinationText(dest: Destination): string {
  return dest.host.includes(":") ? `[${dest.host}]:${dest.port}` : `${dest.host}:${dest.port}`;
}

const NAME = /^[a-z0-9]([a-z0-9-]{0,62})?(\.[a-z0-9]([a-z0-9-]{0,62})?)*\.?$/i;
const V6 = /^[0-9a-f:.]+$/i;

/**
 * A proxy request's target "host:port" (CONNECT's authority form), or null when the host is not
 * a DNS name or an IP address, or the port is not 1–65535.
 */
export function parseAuthority(text: string): Destination | null {
  const m = /^(?:\[([^\]]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(text);
  if (!m) return null;
  const port = Number(m[3]);
  if (!Number.isInteger(port) || port < 1 || port > 65535) return null;
  const host = (m[1] ?? m[2] ?? "").toLowerCase();
  if (m[1] !== undefined ? !V6.test(host) : !NAME.test(host) || host.length > 253) return null;
  return { host: host.replace(/\.$/, ""), port };
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
