import { safeText } from "../catalog/text.js";
import { commandLineServer, type ServerConfig } from "../config/config.js";
import { remoteUrlProblem } from "../config/remote.js";
import { quotedCommand } from "../store/stateDir.js";
import { RemoteSupervisor } from "../supervisor/remote.js";
import { headerScopes, parseHeaderFlag, parseHeaderSecretFlag } from "../supervisor/remoteHeaders.js";
import type { Logger } from "../util/log.js";
import { isSecretQueryParameter } from "../util/redact/urlQueries.js";
import { isSecretName } from "../util/redact.js";
import { shellWord } from "../util/shellWord.js";
import { askHolder } from "../vault/holder.js";
import type { ReleasedValues } from "../vault/scrub.js";
import { UsageError } from "./errors.js";

/** `run --url URL`: a server entry with nothing to launch. */
export function urlServer(url: string, label: string | undefined): ServerConfig {
  return { ...commandLineServer(label ?? labelOf(url), "", []), remote: { url, headers: [] } };
}

function labelOf(url: string): string {
  let host = "remote";
  try {
    host = new URL(url).hostname;
  } catch {
    /* refused with its reason by applyRemoteFlags */
  }
  const cleaned = host.replace(/[^A-Za-z0-9._-]/g, "-").replace(/^[^A-Za-z0-9]+/, "");
  return (cleaned || "remote").slice(0, 64);
}

/**
 * `--header` and `--header-secret` flags join the configured headers; the URL is checked (http:// to a host that is
 * not loopback only with --allow-insecure); header secrets become credential scopes, so a
 * locked vault refuses calls at step 6 (`vault_locked`) as for any other credential.
 */
export function applyRemoteFlags(
  server: ServerConfig,
  headerFlags: string[],
  headerSecretFlags: string[],
  allowInsecure: boolean,
): void {
  const remote = server.remote!;
  const where = server.configFile ? `${server.configFile}: url of "${server.label}"` : "run: --url";
  const problem = remoteUrlProblem(remote.url, allowInsecure);
  if (problem) throw new UsageError(`${where} ${problem}.`);
  // a flag replaces a header of the file by name; two flags naming one header (names are
  // case-insensitive), --header or --header-secret, leave which was meant to a guess: refused,
  // naming it, never its value
  const given = new Map<string, string>();
  const flags = [
    ...headerFlags.map((text) => ({ flag: "--header", h: parseHeaderFlag(text) })),
    ...headerSecretFlags.map((text) => ({ flag: "--header-secret", h: parseHeaderSecretFlag(text) })),
  ];
  for (const { flag, h } of flags) {
    if (typeof h === "string") throw new UsageError(h);
    const before = given.get(h.name.toLowerCase());
    if (before !== undefined)
      throw new UsageError(
        `run: ${flag} ${JSON.stringify(h.name)} names the header of an earlier ${before} (header names are case-insensitive); give it once.`,
      );
    given.set(h.name.toLowerCase(), `${flag} ${JSON.stringify(h.name)}`);
    remote.headers = remote.headers.filter((x) => x.name.toLowerCase() !== h.name.toLowerCase()).concat(h);
  }
  server.credentials = { ...server.credentials, ...headerScopes(remote.headers) };
}

/**
 * Says, as a warning of the gateway's (on stderr, where the host keeps its log), each `--header`
 * (applyRemoteFlags has taken them) whose value is taken for a credential (credentialOnCommandLine).
 */
export function sayCredentialHeaders(server: ServerConfig, headerFlags: string[], stateDir: string): void {
  for (const text of headerFlags) {
    const h = parseHeaderFlag(text);
    if (typeof h === "string" || !("value" in h)) continue;
    const warning = credentialOnCommandLine(h.name, h.value, server.remote!.url, stateDir);
    if (warning) process.stderr.write(`portcullis[${safeText(server.label)}]: warning: ${warning}\n`);
  }
}

/**
 * The warning for a `--header` whose value is taken for a credential, by the rule a URL's query
 * parameter is refused by (a secret-like name, a name ending in `key`, or a value that looks
 * generated), or none. The value is scrubbed from all the server says and redacted from every
 * record, but it is on the gateway's command line all the same: `ps` shows it to every user of the
 * machine while the gateway runs, and the host's configuration keeps it. Said, not refused:
 * `--header 'Name: value'` is the documented way to send a fixed header. Names the header and the
 * URL's host, never the value.
 */
function credentialOnCommandLine(name: string, value: string, url: string, stateDir: string): string | null {
  if (!isSecretQueryParameter(name, value)) return null;
  // the host as `vault set --host` must name it for this URL: its port too, when not the default
  const store = quotedCommand(`vault set NAME --host ${shellWord(new URL(url).host)}`, stateDir);
  return `--header ${JSON.stringify(name)} looks like a credential, and its value is on this gateway's command line, where every user of this machine can read it (ps) while it runs, and in the configuration that starts it; store it in the vault (${safeText(store)}) and send it with --header-secret '${name}=NAME' (or '${name}: Bearer {}=NAME') instead`;
}

/** The link to a remote server; header secrets are asked of the vault holder at each request. */
export function remoteLink(
  server: ServerConfig,
  remote: NonNullable<ServerConfig["remote"]>,
  stateDir: string,
  configDigest: string,
  log: Logger,
  released?: ReleasedValues,
  /** how long initialize may go unanswered: the hold timeout, the longest a call waits for an epoch */
  initializeTimeoutMs?: number,
  /** the first wait before the server is tried again, and the longest (tests shorten it) */
  backoff?: { initialMs: number; maxMs: number },
): RemoteSupervisor {
  const url = new URL(remote.url);
  const port = url.port || (url.protocol === "https:" ? "443" : "80");
  const authority = `${url.hostname.toLowerCase()}:${port}`;
  // A fixed header's value (`--header 'X-Api-Key: …'`, a plain string in the file) is a
  // credential the server is given as much as a vault one: scrubbed from all it says, from the
  // gateway's lines and from what the client receives, as a released value is. One under a plain
  // name and shorter than 8 characters (`X-Tenant: acme`) is not taken for one: scrubbing a short
  // common word from every answer would mangle them.
  for (const h of remote.headers)
    if ("value" in h && (isSecretName(h.name) || h.value.length >= 8))
      released?.add(`header ${h.name}`, h.value);
  return new RemoteSupervisor({
    label: server.label,
    url,
    headers: remote.headers,
    configDigest,
    log,
    stateDir,
    maxMessageBytes: server.maxMessageBytes,
    initializeTimeoutMs,
    backoff,
    ...(released ? { released } : {}),
    // The value lives in this process only for the request that carries it.
    // The holder releases an HTTP-delivered secret only for a host its stored policy names (the
    // same rule as the egress proxy's); the value lives here only for the request that carries it.
    secret: async (scope) => {
      let r = await askHolder(stateDir, { op: "release-http", scope, host: authority });
      // a secret stored for the environment may go anywhere this user's processes may send it
      if (r?.ok === false && r.error === "not_http_delivered")
        r = await askHolder(stateDir, { op: "release", scope });
      if (r === null) return { locked: true }; // no holder answers
      if (r.ok === true && typeof r.value === "string") {
        // a server that echoes its own token back never shows it to the client
        released?.add(scope, r.value);
        return { value: r.value };
      }
      return {
        missing:
          r.error === "credential_missing"
            ? `no secret by that name in the vault (${quotedCommand(`vault set ${scope} --host ${shellWord(url.host)}`, stateDir)} stores it)`
            : `the vault stores it for other destinations than ${url.host}, or not for HTTP delivery (${quotedCommand(`vault set ${scope} --host ${shellWord(url.host)}`, stateDir)} stores it again for that host)`,
      };
    },
  });
}
