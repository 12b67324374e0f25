// doctor: a credential written in a host entry's "env" (or its "args"), in clear, that the vault
// knows nothing of.
// The host file is readable by every process of the user, the agent included: the very thing the
// vault is there to prevent. doctorLabels.ts reports a variable the vault holds (or a label takes
// from it); this is the rest, the usual case before the first `vault set`. Judged by the
// variable's NAME (isSecretName, the redaction's own list); the value is only looked at for what
// says it is no credential at all (empty, a `${…}` the host fills in, a boolean word), and is never
// printed nor compared.
import { quotedName } from "../catalog/text.js";
import { CONFIG_FILE } from "../config/config.js";
import { quotedCommand } from "../store/stateDir.js";
import { isSecretName } from "../util/redact/names.js";

export interface EnvFinding {
  ok: false;
  what: string;
  next: string;
}

/**
 * How the entry runs its server, as far as the advice goes: a label (`mapped` when its
 * "credentials" already take the variable from the vault, as `scope`, which the vault does not
 * hold yet), or anything else.
 */
export type EnvRun =
  | { kind: "label"; label: string; file: string | undefined }
  | { kind: "mapped"; label: string; file: string; scope: string; deliverFlags: string }
  | { kind: "other" };

/** The finding for one variable of an entry's "env", or null when it holds no credential in clear. */
export function clearCredentialFinding(
  hostFile: string,
  key: string,
  variable: string,
  value: unknown,
  run: EnvRun,
  /** the entry's own state directory (its --state-dir), named in the commands given */
  stateDir?: string,
): EnvFinding | null {
  if (typeof value !== "string") return null;
  // a variable the label takes from the vault is a credential by the configuration's word
  if (run.kind === "mapped" ? !writtenOut(value) : !credentialInClear(variable, value)) return null;
  const entryName = `${hostFile}: server ${quotedName(key)}`;
  const store = `store the value in the vault (${quotedCommand("vault set NAME --deliver env", stateDir)})`;
  const mapping = `${JSON.stringify(variable)}: "NAME"`;
  const then = `then delete ${quotedName(variable)} from the entry's "env" in ${hostFile}; the value has been in a file, so rotate it`;
  const what = `${entryName} sets ${quotedName(variable)} in its "env", in clear: every process of this user can read it there, the agent included`;
  if (run.kind === "mapped")
    return {
      ok: false,
      what: `${what}; the label ${quotedName(run.label)} (${run.file}) takes it from the vault as ${quotedName(run.scope)}, which the vault does not hold yet`,
      next: `store the value in the vault under that name (${quotedCommand(`vault set ${run.scope} ${run.deliverFlags}`, stateDir)}), ${then}`,
    };
  return {
    ok: false,
    what,
    next:
      run.kind === "label"
        ? `${store}, add ${mapping} to the "credentials" of ${quotedName(run.label)} in ${run.file ?? `its ${CONFIG_FILE}`}, ${then}`
        : `${store}, describe the server in ${CONFIG_FILE} with "credentials": {${mapping}} and have the entry run that label (docs/onboarding.md, "After wrap"), ${then}`,
  };
}

/**
 * The findings for an entry's "args": a credential written on the server's command line, after a
 * long flag whose name says it carries one (`--api-key VALUE`, `--token=VALUE`). Worse than
 * "env": the host file shows it to every process of the user, and the process list to every
 * process on the machine while the server runs. A finding makes doctor fail, so this is narrower
 * than the redaction (which hides whatever might be one, at no cost): the flag must be a plain
 * lower-case long flag (what is printed; a word starting with "-" that is no such flag, a random
 * key among them, is never named), its name judged as a variable's (credentialInClear) less the
 * quantities and means a flag's name may also say (`--max-tokens`, `--token-limit`,
 * `--password-stdin`, `--secret-arn`), and its value must look like a credential rather than a
 * path, a URL, a number, a command or a word (credentialLike). One finding per flag; the value is
 * never printed.
 */
export function clearArgFindings(
  hostFile: string,
  key: string,
  args: unknown,
  /** the entry's own state directory (its --state-dir), named in the command given */
  stateDir?: string,
): EnvFinding[] {
  if (!Array.isArray(args)) return [];
  const out: EnvFinding[] = [];
  const flags = new Set<string>();
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (typeof arg !== "string") continue;
    const eq = arg.indexOf("=");
    const flag = eq >= 0 ? arg.slice(0, eq) : arg;
    if (!plainLongFlag(flag)) continue;
    const value = eq >= 0 ? arg.slice(eq + 1) : args[i + 1];
    if (typeof value !== "string" || !credentialLike(value)) continue;
    const name = flag.slice(2);
    const words = name.split("-");
    if (words.some((w) => NOT_A_FLAG_CREDENTIAL.has(w)) || !credentialInClear(name, value)) continue;
    if (flags.has(flag)) continue;
    flags.add(flag);
    out.push({
      ok: false,
      what: `${hostFile}: server ${quotedName(key)} passes a credential on its command line, in clear (the value of ${quotedName(flag)} in its "args"): every process of this user can read it in the file, and every process on the machine in the process list while the server runs`,
      next: `store the value in the vault (${quotedCommand("vault set NAME --deliver env", stateDir)}) and have the server read it from its environment instead, given by the "credentials" of its ${CONFIG_FILE} label (if the server can read it there), then delete ${quotedName(flag)} and its value from the entry's "args" in ${hostFile}; the value has been in a file, so rotate it`,
    });
  }
  return out;
}

/** `--lower-case-words` (digits after a letter allowed), at most 40 characters; checked by loop. */
function plainLongFlag(flag: string): boolean {
  if (flag.length < 3 || flag.length > 40 || !flag.startsWith("--")) return false;
  let previous = "-";
  for (let i = 2; i < flag.length; i++) {
    const c = flag[i]!;
    const letter = c >= "a" && c <= "z";
    const digit = c >= "0" && c <= "9";
    if (c === "-" ? previous === "-" : !(letter || (digit && previous !== "-"))) return false;
    previous = c;
  }
  return previous !== "-";
}

/**
 * A value that looks like a credential: 8 to 4,096 characters without spaces, not a path (`/`,
 * `~`, `.`), a variable (`$`), a URL, an ARN or a number, and with a digit or both cases of letters
 * in it (a key, a token, a password of some strength; an all-lower-case word is a mode or a name).
 */
function credentialLike(value: string): boolean {
  if (value.length < 8 || value.length > 4096) return false;
  const first = value[0]!;
  if ("/~.$-".includes(first) || value.includes("://") || value.startsWith("arn:")) return false;
  let digit = false;
  let lower = false;
  let upper = false;
  let other = false;
  for (const c of value) {
    if (c.trim() === "") return false;
    if (c >= "0" && c <= "9") digit = true;
    else if (c >= "a" && c <= "z") lower = true;
    else if (c >= "A" && c <= "Z") upper = true;
    else other = true;
  }
  if (!lower && !upper && !other) return false; // a number
  return digit || (lower && upper);
}

/** Words of a flag's name that make it a quantity or a means, not the credential. */
export const NOT_A_FLAG_CREDENTIAL: ReadonlySet<string> = new Set([
  "max",
  "min",
  "limit",
  "limits",
  "count",
  "budget",
  "size",
  "length",
  "ttl",
  "timeout",
  "version",
  "issuer",
  "audience",
  "store",
  "jar",
  "arn",
  "cmd",
  "command",
  "process",
  "stdin",
  "server",
  "servers",
  "tokenizer",
  "passwordless",
  "sessions",
  "no",
]);

/**
 * A variable whose name says it carries a credential (`GITHUB_TOKEN`, `DB_PASSWORD`, `API_KEY`)
 * with a value written out. Not one whose name's last word says it holds where or how a
 * credential is found rather than the credential (`TOKEN_FILE`, `AUTH_URL`, `AUTH_MODE`), nor a
 * switch (`USE_AUTH=true`), nor a value the host fills in from its environment (`${TOKEN}`).
 */
export function credentialInClear(name: string, value: string): boolean {
  return writtenOut(value) && isSecretName(name) && !NOT_THE_CREDENTIAL.has(lastWord(name));
}

/** A value written out in the file: not blank, not one the host fills in, not a switch word. */
function writtenOut(value: string): boolean {
  const v = value.trim();
  return v !== "" && !hostFillsIn(v) && !SWITCH_WORDS.has(v.toLowerCase());
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

/**
 * Whether `value` holds a `${…}` the host expands (no regular expression: a value may be long),
 * and no default written beside it: `${TOKEN:-ghp_…}` keeps its default in the file.
 */
export function hostFillsIn(value: string): boolean {
  let filled = false;
  for (let at = value.indexOf("${"); at >= 0; at = value.indexOf("${", at + 2)) {
    const end = value.indexOf("}", at + 2);
    if (end < 0) break;
    if (end === at + 2) continue; // "${}" fills nothing in
    const inside = value.slice(at + 2, end);
    const dflt = inside.indexOf(":-");
    if (dflt >= 0 && inside.slice(dflt + 2).trim() !== "") return false;
    filled = true;
  }
  return filled;
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
