/**
 * A server's `credentials` as configured: environment variable → secret, in two forms.
 *   "ENV": "scope"                                   → delivered in the environment at spawn
 *   "ENV": {"secret": "scope", "deliver": "env"|"http", "hosts": ["host:port", …]}
 * The secret name is the credential scope that grants, reviews and audit records name.
 */
import { quotedName } from "../catalog/text.js";
import { keyPath, refuseUnknownKeys } from "../config/unknownKeys.js";
import { declaredHost, repeatedHost } from "./egress/hosts.js";

export type Delivery = "env" | "http";

export interface CredentialSpec {
  env: string;
  secret: string;
  deliver: Delivery;
  /** declared destinations for http delivery (host or host:port, lower-cased) */
  hosts: string[];
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const SCOPE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** Parses `credentials`; `fail(key, what)` throws a ConfigError naming the file and the key. */
export function parseCredentials(raw: unknown, fail: (key: string, what: string) => never): CredentialSpec[] {
  if (raw === undefined) return [];
  if (typeof raw !== "object" || raw === null || Array.isArray(raw))
    return fail("credentials", "must be an object of environment variable → secret name");
  const out: CredentialSpec[] = [];
  for (const [env, v] of Object.entries(raw as Record<string, unknown>)) {
    const at = keyPath("credentials", env);
    if (!ENV_NAME.test(env)) fail(at, "is not an environment variable name");
    // copied into the server's environment by plain assignment, where it would vanish
    if (env === "__proto__") fail(at, "cannot be passed on as an environment variable");
    if (typeof v === "string") {
      if (!SCOPE.test(v)) fail(at, "must name a secret (letters, digits, '.', '_', '-')");
      out.push({ env, secret: v, deliver: "env", hosts: [] });
      continue;
    }
    if (typeof v !== "object" || v === null || Array.isArray(v))
      fail(at, 'must be a secret name or an object {"secret", "deliver", "hosts"}');
    const o = v as Record<string, unknown>;
    refuseUnknownKeys(o, ["secret", "deliver", "hosts"], at, fail);
    if (typeof o.secret !== "string" || !SCOPE.test(o.secret))
      fail(`${at}.secret`, "must name a secret (letters, digits, '.', '_', '-')");
    const deliver = o.deliver ?? "http";
    if (deliver !== "env" && deliver !== "http") fail(`${at}.deliver`, 'must be "http" or "env"');
    // Environment delivery hands the value to the server at spawn, and from then on the server
    // sends it wherever it likes: a host list beside it would be read by the user as a limit that
    // nothing enforces. Refused, never ignored in silence.
    if (deliver === "env" && o.hosts !== undefined)
      fail(
        `${at}.hosts`,
        'does not apply to deliver "env": the server holds the value from its start and may send it anywhere; remove hosts, or deliver "http" to have the value sent only to those hosts',
      );
    let hosts: string[] = [];
    if (o.hosts !== undefined) {
      if (!Array.isArray(o.hosts) || o.hosts.some((h) => typeof h !== "string"))
        fail(`${at}.hosts`, 'must be an array of "host" or "host:port" strings');
      hosts = (o.hosts as string[]).map((h, i) => {
        const d = declaredHost(h);
        if ("host" in d) return d.host;
        const instead = d.instead === undefined ? "" : `: ${quotedName(d.instead)}`;
        return fail(`${at}.hosts[${i}]`, `${quotedName(h)} ${d.problem}${instead}`);
      });
      const twice = repeatedHost(hosts);
      if (twice)
        fail(
          `${at}.hosts[${twice.at}]`,
          `${quotedName((o.hosts as string[])[twice.at]!)} is the same host as hosts[${twice.first}] (hosts are compared by value, as requests are: letter case, a trailing dot and how an address is written make no difference); keep one`,
        );
    }
    if (deliver === "http" && hosts.length === 0)
      fail(`${at}.hosts`, 'must name at least one host for deliver "http" (where the secret may be sent)');
    out.push({ env, secret: o.secret as string, deliver: deliver as Delivery, hosts });
  }
  return out;
}

/** environment variable → scope, the shape approvals and grants use. */
export function scopesByEnv(specs: readonly CredentialSpec[]): Record<string, string> {
  return Object.fromEntries(specs.map((s) => [s.env, s.secret]));
}
