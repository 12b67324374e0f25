import { isIP } from "node:net";
import { quotedName } from "../catalog/text.js";
import { type HeaderSpec, headerNameProblem, headerValueProblem } from "../supervisor/remoteHeaders.js";
import { isLoopback } from "../transport/httpAccess.js";
import { isSecretQueryParameter } from "../util/redact.js";
import { keyPath, refuseUnknownKeys } from "./unknownKeys.js";

/**
 * A server reached over Streamable HTTP (`run --url`, config `url`): where it is and which
 * headers go with every request. Its identity is what it shows over the wire, so the keys that
 * describe a launched server (a command, files to digest, a process environment) do not apply.
 */
export interface RemoteConfig {
  url: string;
  headers: HeaderSpec[];
}

/** Keys of a server entry that only mean something for a server portcullis launches. */
export const LAUNCH_ONLY_KEYS = ["args", "cwd", "env", "credentials", "identity", "onChange"] as const;

/**
 * Whether a URL's host (the WHATWG parser's hostname: lower case, an IPv4 address in dotted
 * decimal whatever notation it was written in, an IPv6 one compressed in brackets) is certain to
 * be this machine's loopback: an address isLoopback takes (127.0.0.0/8, ::1, ::ffff:127.x.y.z,
 * the same rule as `--listen --no-auth`), or the name `localhost` exactly. No other name, however
 * local it looks (`localhost.`, `x.localhost`, `127.0.0.1.nip.io`, `localtest.me`): the resolver
 * may send it to DNS, whose answer can change between this check and each connection, so the
 * calls would go in clear to wherever it points then. Names are not resolved here for the same
 * reason: an answer now says nothing of the next one.
 */
function loopbackHost(hostname: string): boolean {
  if (hostname === "localhost") return true;
  const bare = hostname.startsWith("[") && hostname.endsWith("]") ? hostname.slice(1, -1) : hostname;
  return isIP(bare) !== 0 && isLoopback(bare);
}

/**
 * Why `text` cannot be a remote server's URL, or null. `http://` only to a loopback host unless
 * `allowInsecure`: anyone on the path could otherwise read the calls and answer in the server's
 * place, and no certificate would tell the epochs apart.
 */
export function remoteUrlProblem(text: string, allowInsecure: boolean): string | null {
  let u: URL;
  try {
    u = new URL(text);
  } catch {
    return "is not a valid URL";
  }
  if (u.protocol !== "https:" && u.protocol !== "http:")
    return "must be an https:// (or loopback http://) URL";
  // The URL parser reads `:0443` as 443; the port as written is refused with a leading zero, as
  // every number portcullis reads is (--listen, a credential's host)
  const authority = /^[A-Za-z][A-Za-z0-9+.-]*:[/\\]*([^/\\?#]*)/.exec(text.trim())?.[1] ?? "";
  if (/:0[0-9][0-9]*$/.test(authority.slice(authority.lastIndexOf("@") + 1)))
    return "has a port written with a leading zero; write the port without it";
  if (u.username || u.password)
    return "must not carry a user name or password (send credentials with a header instead)";
  // As a user:password: the URL is shown (the "serving" line, status, "cannot reach" messages)
  // and kept in the epoch's record as given, so a credential must not sit in it. The parameter's
  // name is said, never its value.
  const secret = [...u.searchParams].find(([name, value]) => isSecretQueryParameter(name, value));
  if (secret !== undefined)
    return `must not carry a credential in its query (parameter ${quotedName(secret[0])}${
      isSecretQueryParameter(secret[0], "") ? "" : ", whose value looks like a generated key"
    }); send it with a header instead`;
  if (u.hash) return "must not have a #fragment";
  if (u.protocol === "http:" && !loopbackHost(u.hostname) && !allowInsecure)
    return "uses http:// to a host that is not loopback; use https://, or pass --allow-insecure to accept a connection anyone on the path can read and answer";
  return null;
}

/** Config `headers`: {"Name": "value" | {"secret": S, "format": "Bearer {}"}}. */
export function parseHeaders(raw: unknown, fail: (key: string, what: string) => never): HeaderSpec[] {
  if (raw === undefined) return [];
  if (typeof raw !== "object" || raw === null || Array.isArray(raw))
    return fail("headers", 'must be an object of header name → value or {"secret", "format"}');
  const out: HeaderSpec[] = [];
  // HTTP header names are case-insensitive: "A" and "a" are one header, sent twice or one lost
  const seen = new Map<string, string>();
  for (const [name, v] of Object.entries(raw as Record<string, unknown>)) {
    const at = keyPath("headers", name);
    const n = headerNameProblem(name);
    if (n) fail(at, n);
    const same = seen.get(name.toLowerCase());
    if (same !== undefined)
      fail(at, `is the same header as ${quotedName(same)} (header names are case-insensitive); keep one`);
    seen.set(name.toLowerCase(), name);
    if (typeof v === "string") {
      const p = headerValueProblem(v);
      if (p) fail(at, p);
      out.push({ name, value: v });
      continue;
    }
    if (typeof v !== "object" || v === null || Array.isArray(v))
      fail(at, 'must be a string or {"secret": NAME, "format": "… {} …"}');
    const o = v as Record<string, unknown>;
    refuseUnknownKeys(o, ["secret", "format"], at, fail);
    if (typeof o.secret !== "string" || !/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/.test(o.secret))
      fail(`${at}.secret`, "must name a secret (letters, digits, '.', '_', '-')");
    const format = o.format ?? "{}";
    if (typeof format !== "string" || format.split("{}").length !== 2)
      fail(`${at}.format`, 'must be a string with exactly one "{}" where the secret goes');
    const p = headerValueProblem(format as string);
    if (p) fail(`${at}.format`, p);
    out.push({ name, secret: o.secret as string, format: format as string });
  }
  return out;
}
