// doctor: a credential sent as an HTTP header whose value is written in a host file, in clear. The
// host reads it from there (its own "headers" for a server it reaches by URL) or hands it to
// `portcullis run --url … --header 'Name: value'` in the entry's args: either way the value sits
// in a file every process of the user can read, where the vault would keep it (a header from the
// vault is put in at each request, docs/configuration.md "headers"). Judged by the rule `run --url
// --header` warns by and a URL's query parameter is refused by (isSecretQueryParameter: a
// secret-like name, a name ending in `key`, or a value that looks generated), so doctor and the
// gateway it advises on agree; the value is never printed, nor compared with anything.
import { quotedName } from "../catalog/text.js";
import { CONFIG_FILE, type ServerConfig } from "../config/config.js";
import { keyPath } from "../config/unknownKeys.js";
import { quotedCommand } from "../store/stateDir.js";
import { isSecretQueryParameter } from "../util/redact/urlQueries.js";
import { shellWord } from "../util/shellWord.js";
import { hostFillsIn } from "./doctorEnv.js";
import { entryRun } from "./doctorLabels.js";
import type { Entry } from "./document.js";
import type { HostFile } from "./hosts.js";

export interface HeaderFinding {
  ok: false;
  what: string;
  next: string;
}

/**
 * The entry's headers that carry a credential written out in the host file. `stateDir`: the one
 * doctor reads, whose vault the advice's `vault set` must reach (named when not the default, as
 * every next step names it).
 */
export function headerFindings(
  host: HostFile,
  key: string,
  entry: Entry,
  stateDir?: string,
): HeaderFinding[] {
  const entryName = `${host.file}: server ${quotedName(key)}`;
  const out: HeaderFinding[] = [];
  const headers = entry.headers;
  if (typeof headers === "object" && headers !== null && !Array.isArray(headers))
    for (const [name, value] of Object.entries(headers))
      if (typeof value === "string" && inClear(name, value))
        out.push(
          finding(
            entryName,
            name,
            value,
            entry.url,
            `its "headers"`,
            `delete ${quotedName(name)} from its "headers"`,
            stateDir,
          ),
        );
  const run = entryRun(entry);
  if (run.kind === "url")
    for (const header of run.headers) {
      const colon = header.indexOf(":");
      if (colon < 0) continue; // no value to hold a credential (run refuses it when it starts)
      const name = header.slice(0, colon).trim();
      const value = header.slice(colon + 1).trim();
      if (inClear(name, value))
        out.push(
          finding(
            entryName,
            name,
            value,
            run.url,
            `a --header of the portcullis run in its "args"`,
            null,
            stateDir,
          ),
        );
    }
  return out;
}

/**
 * The names of the entry's own "headers" that hold a credential written out (inClear; only the
 * names are said, never a value): what wrap, which leaves an HTTP entry alone, says it keeps.
 */
export function headersInClear(entry: Entry): string[] {
  const headers = entry.headers;
  if (typeof headers !== "object" || headers === null || Array.isArray(headers)) return [];
  return Object.entries(headers)
    .filter(([name, value]) => typeof value === "string" && inClear(name, value))
    .map(([name]) => name);
}

/**
 * The headers of a portcullis.json server reached by "url" whose value is written out, in clear,
 * taken for a credential (inClear): the file the advice for a host file's header
 * sends the user to, where the vault form ({"secret", "format"}) keeps the value out of it. A
 * value there is sent as written (`${VAR}` is no placeholder in portcullis.json), but one that
 * looks like one holds no credential, as in a host file.
 */
export function configHeaderFindings(file: string, server: ServerConfig, stateDir?: string): HeaderFinding[] {
  const out: HeaderFinding[] = [];
  for (const h of server.remote?.headers ?? []) {
    if (!("value" in h) || !inClear(h.name, h.value)) continue;
    const at = keyPath(keyPath(keyPath("servers", server.label), "headers"), h.name);
    const secret = { secret: "NAME", format: formatOf(h.value) };
    out.push({
      ok: false,
      what: `${file}: ${at} holds a credential written in clear: every process of this user can read it there`,
      next: `store the value in the vault (${quotedCommand(`vault set NAME --deliver http --host ${hostOf(server.remote?.url)}`, stateDir)}), then write ${JSON.stringify(secret)} in its place; the value has been in a file, so rotate it`,
    });
  }
  return out;
}

/** The vault form's "format" for a header value: the scheme's word kept (Bearer, Basic, Token). */
function formatOf(value: string): string {
  const words = value.trim().split(" ", 2);
  const scheme = words.length === 2 && words[1] !== "" ? words[0] : undefined;
  return scheme !== undefined && /^(bearer|basic|token|apikey)$/i.test(scheme) ? `${scheme} {}` : "{}";
}

/**
 * A header taken for a credential (its name says so: Authorization, X-Api-Key, a …-Token, a
 * …-Key; or its value looks generated, under whatever name: `X-Auth-Ref: 9f2c…`), with a value
 * written out: not one the host fills in from its environment when it starts the entry (`${VAR}`,
 * `${env:VAR}`, `Bearer ${TOKEN}`: the credential is not in the file then).
 */
function inClear(name: string, value: string): boolean {
  return value.trim() !== "" && isSecretQueryParameter(name, value) && !hostFillsIn(value);
}

function finding(
  entryName: string,
  name: string,
  value: string,
  url: unknown,
  where: string,
  /** what to take out of the host's own "headers"; null: the header is a --header of the run in "args" */
  remove: string | null,
  stateDir: string | undefined,
): HeaderFinding {
  // the authentication scheme's word (Bearer, Basic, Token) is no secret: kept in the format
  const format = formatOf(value);
  const host = hostOf(url);
  const secret = { secret: "NAME", format };
  const store = `store the value in the vault (${quotedCommand(`vault set NAME --deliver http --host ${host}`, stateDir)})`;
  // the vault's form on run's command line: only the secret's name is in the file then
  const flag = `--header-secret ${shellWord(`${name}: ${format}=NAME`)}`;
  const next =
    remove === null
      ? `${store}, then replace that --header in its "args" by ${flag}; the value has been in a file, so rotate it`
      : // the entry's URL is not printed: a host file's URL may carry a token in its query
        `${store}, have the entry run ${quotedCommand(`run --url URL ${flag}`, stateDir)}, URL its "url" (or describe the server in ${CONFIG_FILE} with "url" and "headers": {${JSON.stringify(name)}: ${JSON.stringify(secret)}} and run that label; docs/onboarding.md, "After wrap"); then ${remove}; the value has been in a file, so rotate it`;
  return {
    ok: false,
    what: `${entryName} sends the header ${quotedName(name)} with its value written in ${where}, in clear: every process of this user can read it there`,
    next,
  };
}

/**
 * The `--header-secret` that would send `name` from the vault secret NAME as its value is sent
 * now (the scheme's word kept): what wrap advises for a header it leaves in clear.
 */
export function headerSecretFlag(name: string, entry: Entry): string {
  const headers = entry.headers as Record<string, unknown>;
  const value = headers?.[name];
  return `--header-secret ${shellWord(`${name}: ${formatOf(typeof value === "string" ? value : "")}=NAME`)}`;
}

/** The host (and port) of the server's URL, as `vault set --host` takes it; HOST when not known. */
function hostOf(url: unknown): string {
  if (typeof url !== "string") return "HOST";
  try {
    return new URL(url).host || "HOST";
  } catch {
    return "HOST";
  }
}
