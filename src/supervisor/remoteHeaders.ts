/**
 * The headers portcullis adds to every request to a remote server: fixed values (`--header
 * 'Name: value'`, config `"Name": "value"`) or values released by the vault holder at each use
 * (config `"Name": {"secret": S, "format": "Bearer {}"}`). Values are never logged, recorded or
 * shown: only names are.
 */
export type HeaderSpec =
  | { name: string; value: string }
  | {
      name: string;
      secret: string;
      format: string;
      /** given by `run --header-secret` rather than the file: what run's refusals name */
      fromFlag?: true;
    };

/** Header names a user must not set: portcullis owns them (the session, the protocol, framing). */
const RESERVED = new Set([
  "mcp-session-id",
  "mcp-protocol-version",
  "content-type",
  "content-length",
  "accept",
  "host",
  "connection",
  "transfer-encoding",
  "last-event-id",
]);

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** Why `name` cannot be a header portcullis adds, or null. */
export function headerNameProblem(name: string): string | null {
  if (!TOKEN.test(name)) return "is not a valid HTTP header name";
  if (RESERVED.has(name.toLowerCase())) return "is set by portcullis itself and cannot be configured";
  return null;
}

/** Why `value` cannot be sent as a header value, or null (never quotes the value). */
export function headerValueProblem(value: string): string | null {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
  if (/[\u0000-\u0008\u000a-\u001f\u007f]/.test(value)) return "contains a control character";
  // node refuses to send a header value with a character past U+00FF (ERR_INVALID_CHAR) only when
  // a request is made: accepted here, every request to the server failed, each ending its epoch,
  // until supervision gave up saying the server had dropped its sessions
  if (/[\u0100-\uffff]/.test(value))
    return "contains a character past U+00FF, which HTTP headers cannot carry";
  return null;
}

/** `--header 'Name: value'`: the name and value, or a problem naming the flag (never the value). */
export function parseHeaderFlag(text: string): HeaderSpec | string {
  const colon = text.indexOf(":");
  if (colon <= 0) return "run: --header must look like 'Name: value'.";
  const name = text.slice(0, colon).trim();
  const value = text.slice(colon + 1).trim();
  const n = headerNameProblem(name);
  if (n) return `run: --header ${JSON.stringify(name)} ${n}.`;
  const v = headerValueProblem(value);
  if (v) return `run: the value of --header ${JSON.stringify(name)} ${v}.`;
  return { name, value };
}

/** A vault secret's name, as `vault set` takes it (and config `headers.X.secret`). */
const SECRET_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/**
 * `--header-secret 'Name=SECRET'` or `--header-secret 'Name: FORMAT=SECRET'`: the command-line
 * form of config `"Name": {"secret": SECRET, "format": FORMAT}` (FORMAT "{}" when not given), or
 * a problem naming the flag. Split at the last '=': a secret's name holds no '=', so a FORMAT
 * may ('token={}'); the header's name ends at the first ':', as with --header. Only the secret's
 * NAME is on the command line: its value is released by the vault holder at each request.
 */
export function parseHeaderSecretFlag(text: string): HeaderSpec | string {
  const shape = "run: --header-secret must look like 'Name=SECRET' or 'Name: Bearer {}=SECRET'";
  const eq = text.lastIndexOf("=");
  if (eq <= 0) return `${shape}.`;
  const secret = text.slice(eq + 1).trim();
  const left = text.slice(0, eq);
  const colon = left.indexOf(":");
  const name = (colon === -1 ? left : left.slice(0, colon)).trim();
  const format = colon === -1 ? "{}" : left.slice(colon + 1).trim();
  const n = headerNameProblem(name);
  if (n) return `run: --header-secret ${JSON.stringify(name)} ${n}.`;
  if (!SECRET_NAME.test(secret))
    return `${shape}: after the last '=' goes the name of a vault secret (letters, digits, '.', '_', '-').`;
  if (format.split("{}").length !== 2)
    return `run: the format of --header-secret ${JSON.stringify(name)} must have exactly one "{}" where the secret goes ('${name}: Bearer {}=${secret}').`;
  const v = headerValueProblem(format);
  if (v) return `run: the format of --header-secret ${JSON.stringify(name)} ${v}.`;
  return { name, secret, format, fromFlag: true };
}

/** The scopes (secret names) the headers need from the vault, by a key the guard's step 6 reads. */
export function headerScopes(headers: readonly HeaderSpec[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const h of headers) if ("secret" in h) out[`header ${h.name}`] = h.secret;
  return out;
}

/** How a header secret is asked of the vault holder: its value, or why it cannot be had. */
export type SecretLookup = (
  scope: string,
) => Promise<{ value: string } | { locked: true } | { missing: string }>;

/** A header whose secret cannot be released now: its scope, and why (null: the vault is locked). */
export interface WithheldHeader {
  withheld: string;
  missing: string | null;
}

/**
 * The headers of one request, or the one that cannot be sent. Wrapped rather than a bare record:
 * header names are the user's, and one named `withheld` must not read as a withheld secret (its
 * value would then be quoted in the log line and the refusal).
 */
export type ResolvedHeaders = { headers: Record<string, string> } | WithheldHeader;

/** The configured headers of one request: fixed values as they are, vault values released now. */
export async function resolveHeaders(
  headers: readonly HeaderSpec[],
  secret: SecretLookup,
): Promise<ResolvedHeaders> {
  const out: Record<string, string> = {};
  for (const h of headers) {
    if ("value" in h) out[h.name] = h.value;
    else {
      const v = await secret(h.secret);
      if ("locked" in v) return { withheld: h.secret, missing: null };
      if ("missing" in v) return { withheld: h.secret, missing: v.missing };
      // node would quote a value it refuses in its error message: checked here, never quoted
      const problem = headerValueProblem(v.value);
      if (problem)
        return { withheld: h.secret, missing: `its value ${problem}, so it cannot be sent as a header` };
      out[h.name] = h.format.replace("{}", v.value);
    }
  }
  return { headers: out };
}
