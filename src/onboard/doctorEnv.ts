// doctor: a credential written in a host entry's "env", in clear, that the vault knows nothing of.
// The host file is readable by every process of the user, the agent included: the very thing the
// vault is there to prevent. doctorLabels.ts reports a variable the vault holds (or a label takes
// from it); this is the rest, the usual case before the first `vault set`. Judged by the
// variable's NAME (isSecretName, the redaction's own list); the value is only looked at for what
// says it is no credential at all (empty, a `${…}` the host fills in, a boolean word), and is never
// printed nor compared.
import { quotedName } from "../catalog/text.js";
import { CONFIG_FILE } from "../config/config.js";
import { isSecretName } from "../util/redact/names.js";

export interface EnvFinding {
  ok: false;
  what: string;
  next: string;
}

/** How the entry runs its server, as far as the advice goes. */
export type EnvRun = { kind: "label"; label: string; file: string | undefined } | { kind: "other" };

/** The finding for one variable of an entry's "env", or null when it holds no credential in clear. */
export function clearCredentialFinding(
  hostFile: string,
  key: string,
  variable: string,
  value: unknown,
  run: EnvRun,
): EnvFinding | null {
  if (typeof value !== "string" || !credentialInClear(variable, value)) return null;
  const entryName = `${hostFile}: server ${quotedName(key)}`;
  const store = `store the value in the vault ('portcullis vault set NAME --deliver env')`;
  const mapping = `${JSON.stringify(variable)}: "NAME"`;
  const then = `then delete ${quotedName(variable)} from the entry's "env" in ${hostFile}; the value has been in a file, so rotate it`;
  return {
    ok: false,
    what: `${entryName} sets ${quotedName(variable)} in its "env", in clear: every process of this user can read it there, the agent included`,
    next:
      run.kind === "label"
        ? `${store}, add ${mapping} to the "credentials" of ${quotedName(run.label)} in ${run.file ?? `its ${CONFIG_FILE}`}, ${then}`
        : `${store}, describe the server in ${CONFIG_FILE} with "credentials": {${mapping}} and have the entry run that label (docs/onboarding.md, "After wrap"), ${then}`,
  };
}

/**
 * A variable whose name says it carries a credential (`GITHUB_TOKEN`, `DB_PASSWORD`, `API_KEY`)
 * with a value written out. Not one whose name's last word says it holds where or how a
 * credential is found rather than the credential (`TOKEN_FILE`, `AUTH_URL`, `AUTH_MODE`), nor a
 * switch (`USE_AUTH=true`), nor a value the host fills in from its environment (`${TOKEN}`).
 */
export function credentialInClear(name: string, value: string): boolean {
  const v = value.trim();
  if (v === "" || hostFillsIn(v) || SWITCH_WORDS.has(v.toLowerCase())) return false;
  if (!isSecretName(name)) return false;
  return !NOT_THE_CREDENTIAL.has(lastWord(name));
}

/**
 * The last word of a name, lower-cased: after its last separator or camelCase boundary
 * (`TOKEN_FILE`, `tokenFile`: "file"). A loop, not a regular expression: a name may be long.
 */
function lastWord(name: string): string {
  const alnum = (c: string | undefined) => c !== undefined && /[A-Za-z0-9]/.test(c);
  let end = name.length;
  while (end > 0 && !alnum(name[end - 1])) end--;
  let start = end;
  while (start > 0 && alnum(name[start - 1])) {
    start--;
    if (/[A-Z]/.test(name[start]!) && /[a-z0-9]/.test(name[start - 1] ?? "")) break;
  }
  return name.slice(start, end).toLowerCase();
}

/** Whether `value` holds a `${…}` the host expands (no regular expression: a value may be long). */
export function hostFillsIn(value: string): boolean {
  const at = value.indexOf("${");
  return at >= 0 && value.indexOf("}", at + 2) > at + 2;
}

/** A name's last word that makes its value where or how a credential is found, not the credential. */
const NOT_THE_CREDENTIAL = new Set([
  "file",
  "path",
  "dir",
  "url",
  "uri",
  "endpoint",
  "host",
  "port",
  "user",
  "username",
  "name",
  "id",
  "type",
  "mode",
  "method",
  "provider",
  "scheme",
  "header",
  "enabled",
  "disabled",
  "required",
  "timeout",
  "ttl",
  "expiry",
  "env",
  "var",
]);

/** Values that switch something on or off, which no credential is. */
const SWITCH_WORDS = new Set([
  "true",
  "false",
  "yes",
  "no",
  "on",
  "off",
  "enabled",
  "disabled",
  "none",
  "null",
]);
