/**
 * Whether a URL a server asks the human to open (a URL-mode elicitation) could lead to a page on
 * this machine, where the gateway's own approval elicitations send the human (the console, at
 * 127.0.0.1 or localhost). Such a URL is said to be the server's (serverWords.ts): a page of the
 * server's there that asks for the passphrase, or a passkey, would otherwise read as the console.
 *
 * Deny first: the answer is "yes" whenever there is doubt, since saying so only puts "(from the
 * server, not from portcullis)" in front of a message that is the server's anyway. The URL is read
 * by the WHATWG URL parser (its hostname is the one truth: `2130706433`, `0x7f.1`, `0177.0.0.1`,
 * `127.1`, `%31%32%37.0.0.1`, fullwidth digits, `LOCALHOST.`, `[0:0:0:0:0:0:0:1]` and
 * `[::ffff:127.0.0.1]` all come out as the address or name they spell), and a URL it cannot read,
 * or one other parsers may read another way, is taken as local.
 *
 * Names are judged by what they say, never by resolving them: the name's owner (possibly the
 * server) answers its DNS and can give the gateway a public address and the human's browser,
 * a second later, 127.0.0.1 (a zero TTL), so a lookup would prove nothing; and the elicitation is
 * relayed in order with the server's other messages, which a lookup would hold up.
 */
import { BlockList, isIP } from "node:net";
import { hostname as machineName, networkInterfaces } from "node:os";
import { domainToUnicode } from "node:url";
import { readSmallFile } from "../util/smallFile.js";

export function pageOnThisMachine(url: string): boolean {
  // A backslash, a blank or a control character: WHATWG and RFC 3986 readers disagree on where
  // the host is (`http://evil.test\@127.0.0.1/` is evil.test to one, 127.0.0.1 to another)
  if (/[\\\s\p{Cc}]/u.test(url)) return true;
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    // no URL to the parser (a zone id `[fe80::1%25lo]`, `127.0.0.1:5555/approve` without a
    // scheme): a lenient client may still open it, and nobody can say where
    return true;
  }
  // `file:`, `about:`, a custom scheme: a page here, or nothing to say where it is
  if (u.protocol !== "http:" && u.protocol !== "https:") return true;
  // `http://127.0.0.1@evil.test/` reads as 127.0.0.1 to a human; `http://x@127.0.0.1/` is it
  if (u.username !== "" || u.password !== "") return true;
  return hostOnThisMachine(u.hostname);
}

/** A WHATWG hostname (an IPv6 address in brackets, a name in lower case and punycode). */
export function hostOnThisMachine(hostname: string): boolean {
  const bracketed = hostname.startsWith("[") && hostname.endsWith("]");
  const host = withoutTrailingDots(bracketed ? hostname.slice(1, -1) : hostname);
  if (host === "") return true;
  if (isIP(host) !== 0) return addressOnThisMachine(host);
  // no DNS name is longer (and the label walk below is quadratic in a label's length)
  if (host.length > 253 || host.split(".").some((l) => l.length > 63)) return true;
  return nameOnThisMachine(host);
}

/**
 * Local addresses: 127.0.0.0/8 (loopback), 0.0.0.0/8 (0.0.0.0 reaches this machine on Linux and
 * macOS), ::1, ::, the IPv4-compatible forms of those (`[::127.0.0.1]`); node's BlockList matches
 * an IPv4-mapped address (`::ffff:7f00:1`) against the IPv4 rules. Then the addresses of this
 * machine's interfaces now (its LAN address reaches it as well as 127.0.0.1 does).
 */
const LOCAL = new BlockList();
LOCAL.addSubnet("127.0.0.0", 8, "ipv4");
LOCAL.addSubnet("0.0.0.0", 8, "ipv4");
LOCAL.addSubnet("::", 104, "ipv6"); // ::, ::1 and ::0.x.y.z
LOCAL.addSubnet("::7f00:0", 104, "ipv6"); // ::127.x.y.z

export function addressOnThisMachine(address: string): boolean {
  const bare = address.split("%")[0]!.toLowerCase();
  const family = isIP(bare);
  if (family === 0) return false;
  try {
    if (LOCAL.check(bare, family === 4 ? "ipv4" : "ipv6")) return true;
  } catch {
    return true; // an address node cannot weigh: deny first
  }
  const mapped = bare.startsWith("::ffff:") && isIP(bare.slice(7)) === 4 ? bare.slice(7) : bare;
  for (const list of Object.values(networkInterfaces()))
    for (const a of list ?? []) if (a.address.split("%")[0]!.toLowerCase() === mapped) return true;
  return false;
}

/**
 * Names that resolve to 127.0.0.1 for anyone, with no address in them: public "localhost"
 * domains (every subdomain too). Names that carry the address (nip.io, sslip.io, traefik.me,
 * xip.io: `127.0.0.1.nip.io`, `127-0-0-1.sslip.io`, `app-7f000001.nip.io`, `--1.sslip.io`) are
 * caught by reading the address out of them, whatever the domain (embeddedAddress).
 */
const LOOPBACK_DOMAINS = [
  "localtest.me",
  "lvh.me",
  "vcap.me",
  "local.gd",
  "lacolhost.com",
  "fuf.me",
  "localho.st",
  "lcl.host",
  "traefik.me",
  "localhost.direct",
];

function nameOnThisMachine(name: string): boolean {
  const labels = name.split(".");
  // localhost, any *.localhost (RFC 6761), any name with a localhost label
  // (`localhost.example.net` reads as localhost to a human), a look-alike of it in punycode
  if (
    labels.some(
      (l) =>
        l === "localhost" || l.startsWith("localhost-") || l.endsWith("-localhost") || readsAsLocalhost(l),
    )
  )
    return true;
  if (LOOPBACK_DOMAINS.some((d) => name === d || name.endsWith(`.${d}`))) return true;
  if (embeddedAddress(labels)) return true;
  const machine = withoutTrailingDots(machineName().toLowerCase());
  if (machine !== "" && (name === machine || name === `${machine}.local`)) return true;
  return hostsFileLocalNames().has(name);
}

/**
 * Whether a punycode label (`xn--lcalhost-nbh`) reads as localhost where a client shows it as
 * Unicode (`lоcalhost`, a Cyrillic о): its marks dropped, each character taken for any letter of
 * "localhost" it passes for (after the URL parser's own mapping: a lunate sigma ϲ, which passes
 * for c, arrives as σ, which passes for o), the name found anywhere in it.
 */
function readsAsLocalhost(label: string): boolean {
  if (!label.startsWith("xn--")) return false;
  const shown = [...domainToUnicode(label).normalize("NFKD").toLowerCase().replace(/\p{M}/gu, "")];
  const can = (c: string, letter: string) =>
    c === letter || (LOCALHOST_LOOKALIKE.get(c) ?? "").includes(letter);
  for (let i = 0; i + LOCALHOST.length <= shown.length; i++)
    if ([...LOCALHOST].every((letter, j) => can(shown[i + j]!, letter))) return true;
  return false;
}

const LOCALHOST = "localhost";
/** Characters that pass for letters of "localhost" (lower case, after NFKD), and which. */
const LOCALHOST_LOOKALIKE = new Map<string, string>([
  ..."ӏɩǀℓ|1іι".split("").map((c) => [c, "l"] as const),
  ..."оοօ0ᴏ".split("").map((c) => [c, "o"] as const),
  ["σ", "oc"],
  ..."сϲᴄς".split("").map((c) => [c, "c"] as const),
  ..."аαɑ".split("").map((c) => [c, "a"] as const),
  ..."һℎ".split("").map((c) => [c, "h"] as const),
  ..."ѕꜱ5".split("").map((c) => [c, "s"] as const),
  ..."тτᴛ".split("").map((c) => [c, "t"] as const),
]);

/**
 * Whether a name carries a local address the way wildcard-DNS services read one out of it (and
 * a human reads it as that address): four decimal labels in a row (`x.127.0.0.1.nip.io`), four
 * decimal parts joined by dashes within a label (`app-127-0-0-1.sslip.io`), eight hex digits
 * as a label or a dash-separated part (`7f000001.nip.io`, `app-7f000001.nip.io`), an IPv6
 * address with dashes for colons (`--1.sslip.io`), or a label the URL parser would read as an
 * IPv4 number on its own (`2130706433.example.net`, `0x7f000001.example.net`).
 */
function embeddedAddress(labels: string[]): boolean {
  const decimal = (s: string | undefined) => s !== undefined && /^\d{1,3}$/.test(s) && Number(s) <= 255;
  const local = (a: string) => isIP(a) !== 0 && addressOnThisMachine(a);
  for (let i = 0; i + 4 <= labels.length; i++) {
    const four = labels.slice(i, i + 4);
    if (four.every(decimal) && local(four.map(Number).join("."))) return true;
  }
  for (const label of labels) {
    const parts = label.split("-");
    for (let i = 0; i + 4 <= parts.length; i++) {
      const four = parts.slice(i, i + 4);
      if (four.every(decimal) && local(four.map(Number).join("."))) return true;
    }
    for (const part of parts)
      if (/^[0-9a-f]{8}$/.test(part)) {
        const n = Number.parseInt(part, 16);
        if (local([n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join("."))) return true;
      }
    // IPv6 with dashes: every suffix that starts at the label's start, at a dash, or after one
    for (let i = 0; i < label.length; i++)
      if (i === 0 || label[i] === "-" || label[i - 1] === "-") {
        const v6 = label.slice(i).replace(/-/g, ":");
        if (isIP(v6) === 6 && addressOnThisMachine(v6)) return true;
      }
    if (/^(?:0x[0-9a-f][0-9a-f]*|\d\d*)$/.test(label)) {
      try {
        const h = new URL(`http://${label}/`).hostname;
        if (isIP(h) === 4 && addressOnThisMachine(h)) return true;
      } catch {
        /* not a number the parser takes */
      }
    }
  }
  return false;
}

/** The hosts file is read up to this size: one of a machine is a few KB. */
const MAX_HOSTS_BYTES = 256 * 1024;

/**
 * The names /etc/hosts gives a local address (`localhost.localdomain`, `ip6-localhost`, the
 * machine's name at 127.0.1.1 on Debian): what the resolver answers without asking DNS. Read at
 * each decision (an elicitation is rare, the file small); none when it cannot be read.
 */
function hostsFileLocalNames(): Set<string> {
  const out = new Set<string>();
  let text: string;
  try {
    text = readSmallFile("/etc/hosts", MAX_HOSTS_BYTES, "a hosts file");
  } catch {
    return out;
  }
  for (const line of text.split("\n")) {
    const [address, ...names] = line.replace(/#.*/, "").trim().split(/\s\s*/);
    if (address === undefined || names.length === 0 || !addressOnThisMachine(address)) continue;
    for (const n of names) out.add(withoutTrailingDots(n.toLowerCase()));
  }
  return out;
}

/** A name without its trailing dots (`localhost.` is localhost), without a regex's backtracking. */
function withoutTrailingDots(name: string): string {
  let end = name.length;
  while (end > 0 && name[end - 1] === ".") end--;
  return name.slice(0, end);
}
