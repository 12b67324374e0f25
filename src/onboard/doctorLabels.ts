import { basename, isAbsolute, resolve } from "node:path";
import { quotedName } from "../catalog/text.js";
import { UsageError } from "../cli/errors.js";
import { headerSecretProblem } from "../cli/headerSecrets.js";
import { type RunArgs, readRunArgs } from "../cli/runOptions.js";
import { secretsProblem } from "../cli/secretsStored.js";
import {
  CONFIG_FILE,
  ConfigError,
  commandLineServer,
  findConfig,
  loadConfigFile,
  type ServerConfig,
} from "../config/config.js";
import { EMPTY_STATE_DIR, quotedCommand } from "../store/stateDir.js";
import { type HeaderSpec, parseHeaderSecretFlag } from "../supervisor/remoteHeaders.js";
import { LISTEN_ONLY_FLAGS } from "../transport/httpAccess.js";
import { shellWord } from "../util/shellWord.js";
import type { SecretPolicy } from "../vault/secrets.js";
import { clearArgFindings, clearCredentialFinding } from "./doctorEnv.js";
import type { Entry } from "./document.js";
import type { HostFile } from "./hosts.js";
import { labelFor } from "./wrap.js";

/** What doctor says (the shape of doctor.ts's Finding, without the store's cause). */
interface LabelFinding {
  ok: boolean;
  what: string;
  next: string;
}

/**
 * The arguments after `run` of an entry that runs portcullis (`NODE …/cli/main.cjs run …` as wrap
 * writes it, `…/cli/main.js` as earlier builds did, or `portcullis run …`); null for any other
 * entry, and for one whose args are not all strings (which wrap refuses and the host cannot pass
 * either).
 */
function runArguments(entry: Entry): string[] | null {
  if (typeof entry.command !== "string") return null;
  const args = Array.isArray(entry.args) ? entry.args : [];
  if (!args.every((a): a is string => typeof a === "string")) return null;
  const viaNode =
    typeof args[0] === "string" && /[\\/]cli[\\/]main\.c?js$/.test(args[0]) && args[1] === "run";
  const viaBin = /^portcullis(\.cmd|\.exe)?$/.test(basename(entry.command)) && args[0] === "run";
  if (!viaNode && !viaBin) return null;
  return args.slice(viaNode ? 2 : 1);
}

/**
 * How an entry runs its server, as the gateway the host starts would read its `run` arguments
 * (with run's own parsing, src/cli/runOptions.ts): a portcullis.json `label` (with its
 * `--config`), a `command` after '--', a `url`, or `refused` with run's sentence (the gateway
 * exits 2 at every start). `bare` for an entry that does not run portcullis.
 */
export type EntryRun = (
  | { kind: "label"; label: string; config: string | undefined; stateDir: string | undefined }
  | { kind: "command"; label: string | undefined; stateDir: string | undefined }
  | {
      kind: "url";
      stateDir: string | undefined;
      url: string;
      headers: string[];
      /** its --header-secret flags as written */
      headerSecrets: string[];
    }
) & {
  /** its --listen and --listen-token-file as written (the file relative to where the host starts it), and whether --no-auth is given */
  listen: string | undefined;
  listenTokenFile: string | undefined;
  noAuth: boolean;
  /** the HTTP front's options as given (LISTEN_ONLY_FLAGS), which run refuses without an address */
  listenOnly: Pick<RunArgs["values"], (typeof LISTEN_ONLY_FLAGS)[number]>;
};

type EntryRunOrNot = EntryRun | { kind: "help" } | { kind: "refused"; why: string } | { kind: "bare" };

export function entryRun(entry: Entry): EntryRunOrNot {
  const args = runArguments(entry);
  if (args === null) return { kind: "bare" };
  let read: RunArgs | "help";
  try {
    read = readRunArgs(args);
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    return { kind: "refused", why: e.message.replace(/^run: /, "").replace(/\.$/, "") };
  }
  if (read === "help") return { kind: "help" };
  // run reads the flag later, when it opens the state: refused all the same, at every start
  if (read.values["state-dir"] === "") return { kind: "refused", why: EMPTY_STATE_DIR.replace(/\.$/, "") };
  const listen = {
    listen: read.values.listen,
    listenTokenFile: read.values["listen-token-file"],
    noAuth: read.values["no-auth"] === true,
    listenOnly: Object.fromEntries(LISTEN_ONLY_FLAGS.map((f) => [f, read.values[f]])),
  };
  if (read.server.kind === "label")
    return {
      kind: "label",
      label: read.server.label,
      config: read.values.config,
      stateDir: read.values["state-dir"],
      ...listen,
    };
  const stateDir = read.values["state-dir"];
  if (read.server.kind === "command")
    return { kind: "command", label: read.values.label, stateDir, ...listen };
  return {
    kind: "url",
    stateDir,
    url: read.server.url,
    headers: read.values.header ?? [],
    headerSecrets: read.values["header-secret"] ?? [],
    ...listen,
  };
}

/**
 * The state directory an entry that runs portcullis names with --state-dir (as wrap writes it,
 * absolute), or undefined: none given, a relative one, or an entry run refuses or that does not
 * run portcullis.
 */
export function entryStateDir(entry: Entry): string | undefined {
  const run = entryRun(entry);
  const dir = run.kind === "label" || run.kind === "command" || run.kind === "url" ? run.stateDir : undefined;
  return dir !== undefined && isAbsolute(dir) ? resolve(dir) : undefined;
}

/**
 * The state directory the commands doctor prints for an entry name: the entry's own --state-dir;
 * for an entry that does not run portcullis yet, the one doctor reads (where wrap, run from the
 * same terminal, points it); none for an entry that runs portcullis on the default directory.
 */
function adviceDir(entry: Entry, doctorDir: string): string | undefined {
  return entryStateDir(entry) ?? (entryRun(entry).kind === "bare" ? doctorDir : undefined);
}

/**
 * Where doctor takes the host to start an entry's server, which is where `run LABEL` looks for
 * portcullis.json (upward) and resolves a relative `--config`: the entry's `cwd`, else the folder
 * the host has open, taken to be doctor's working directory (as the drill takes it; a host file in
 * the home directory is read from whichever project the host has open, so doctor is run from each).
 * `null` for Claude Desktop: it documents no directory it starts servers in (`/` on macOS, as
 * the MCP documentation says "may be undefined") and has been reported to ignore an entry's
 * `cwd`, so only an absolute `--config` says which file the gateway reads.
 */
export function startDir(host: HostFile, entry: Entry, cwd: string): { dir: string; why: string } | null {
  if (host.host === "claude-desktop") return null;
  if (typeof entry.cwd === "string") return { dir: resolve(cwd, entry.cwd), why: `the entry's "cwd"` };
  return { dir: cwd, why: "the folder doctor runs in, taken for the one the host has open" };
}

/**
 * What is wrong with a host entry that runs portcullis, as the gateway the host starts would find
 * it:
 * - `run` arguments the gateway refuses (an unknown option, a bad value, a LABEL and '-- COMMAND'
 *   together), read with run's own parsing, or `--help` (it prints its help and exits);
 * - for a portcullis.json label: no portcullis.json where it looks, one that cannot be read, or
 *   one without the label; for Claude Desktop, no absolute `--config` (where it starts servers is
 *   not known). Each: the gateway exits 2 at every start, and the host shows a server that does
 *   not connect.
 * And, for every entry with an `env`, whatever it runs: a variable left in clear there that the
 * vault holds (clearEnvFindings).
 */
export function labelFindings(
  host: HostFile,
  key: string,
  entry: Entry,
  cwd: string,
  vault: { stateDir: string; secrets: ReadonlyMap<string, SecretPolicy> | null },
): LabelFinding[] {
  const vaultNames: ReadonlySet<string> = new Set(vault.secrets?.keys() ?? []);
  const run = entryRun(entry);
  const entryName = `${host.file}: server ${quotedName(key)}`;
  const out: LabelFinding[] = [];
  if (run.kind === "refused")
    out.push({
      ok: false,
      what: `${entryName} runs portcullis with arguments 'portcullis run' refuses (${run.why}): the gateway exits 2 at every start, and the host shows a server that does not connect`,
      next: `fix the "args" of ${quotedName(key)} in ${host.file} as the sentence says ('portcullis run --help' lists run's options), then run doctor again`,
    });
  if (run.kind === "help")
    out.push({
      ok: false,
      what: `${entryName} runs 'portcullis run --help', which prints run's help and exits: the host gets no server`,
      next: `remove "--help" (or "-h") from the "args" of ${quotedName(key)} in ${host.file}`,
    });
  let label: { name: string; file: string; config: ServerConfig; servers: Map<string, ServerConfig> } | null =
    null;
  if (run.kind === "label") {
    const found = labelFile(host, key, entry, cwd, run, out);
    if (found) label = { name: run.label, ...found };
    // the vault's secrets its configuration names, as the gateway checks them at start: only
    // when the entry's vault is the one doctor read (no --state-dir, or the same directory)
    const same =
      run.stateDir === undefined || (isAbsolute(run.stateDir) && resolve(run.stateDir) === vault.stateDir);
    const problem =
      found && vault.secrets !== null && same
        ? secretsProblem(found.config, vault.secrets, vault.stateDir)
        : null;
    if (problem)
      out.push({
        ok: false,
        what: `${entryName} runs the ${CONFIG_FILE} label ${quotedName(run.label)}, which the gateway refuses to start: ${problem.replace(/^run: /, "").replace(/\.$/, "")}`,
        next: `do as the sentence says (${quotedCommand("vault list", vault.stateDir)} shows the vault's secrets and how each may be handed out), then run doctor again`,
      });
  }
  if (run.kind === "url") {
    // its --header-secret flags, as the gateway checks them at start, with the vault doctor read
    const same =
      run.stateDir === undefined || (isAbsolute(run.stateDir) && resolve(run.stateDir) === vault.stateDir);
    const problem =
      vault.secrets !== null && same ? urlHeaderSecretProblem(run, vault.secrets, vault.stateDir) : null;
    if (problem)
      out.push({
        ok: false,
        what: `${entryName} runs portcullis with --url, and the gateway refuses to start: ${problem.replace(/^run: /, "").replace(/\.$/, "")}`,
        next: `do as the sentence says (${quotedCommand("vault list", vault.stateDir)} shows the vault's secrets and how each may be handed out), then run doctor again`,
      });
  }
  const dir = adviceDir(entry, vault.stateDir);
  out.push(...clearEnvFindings(host, key, entry, cwd, vaultNames, run, label, dir));
  out.push(...clearArgFindings(host.file, key, entry.args, dir));
  return out;
}

/** The label's portcullis.json, read as the gateway reads it; null with a finding when it cannot be. */
function labelFile(
  host: HostFile,
  key: string,
  entry: Entry,
  cwd: string,
  run: { label: string; config: string | undefined },
  out: LabelFinding[],
): { file: string; config: ServerConfig; servers: Map<string, ServerConfig> } | null {
  const server = `${host.file}: server ${quotedName(key)} runs the ${CONFIG_FILE} label ${quotedName(run.label)}`;
  const start = startDir(host, entry, cwd);
  let file: string | null;
  if (start === null && (run.config === undefined || !isAbsolute(run.config))) {
    // Where Claude Desktop starts the gateway is not known: the file found from here, or from
    // the entry's cwd, is only what doctor can offer for the absolute --config to give.
    const near = typeof entry.cwd === "string" ? resolve(cwd, entry.cwd) : cwd;
    const offered = run.config !== undefined ? resolve(near, run.config) : findConfig(near);
    const given =
      run.config !== undefined ? `a relative --config (${quotedName(run.config)})` : "no --config";
    out.push({
      ok: false,
      what: `${server} with ${given}, but Claude Desktop documents no directory it starts servers in ("/" on macOS) and may ignore an entry's "cwd": where the gateway looks for ${CONFIG_FILE} is not known`,
      next: offered
        ? `give the entry's run the file's absolute path before the label: "--config", ${JSON.stringify(offered)} (in the "args" of ${quotedName(key)} in ${host.file})`
        : `give the entry's run the absolute path of the ${CONFIG_FILE} that describes ${quotedName(run.label)}, before the label: "--config", "/abs/path/${CONFIG_FILE}"`,
    });
    if (!offered) return null;
    file = offered;
  } else if (start === null) {
    file = run.config!;
  } else {
    file = run.config !== undefined ? resolve(start.dir, run.config) : findConfig(start.dir);
    if (file === null) {
      out.push({
        ok: false,
        what: `${server}, but no ${CONFIG_FILE} is found in ${start.dir} or above (${start.why}, where the host starts it)`,
        next: `describe ${quotedName(run.label)} under "servers" in a ${CONFIG_FILE} in ${start.dir} or above, or give the entry's run the file's absolute path with --config FILE before the label`,
      });
      return null;
    }
  }
  let servers: Map<string, ServerConfig>;
  try {
    servers = loadConfigFile(file);
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    out.push({
      ok: false,
      what: `${server} of ${file}, which cannot be used: ${e.message.replace(/\.$/, "")}`,
      next: `fix ${file} (the gateway the host starts for ${quotedName(key)} refuses it too), then run doctor again`,
    });
    return null;
  }
  const config = servers.get(run.label);
  if (config === undefined) {
    const known = [...servers.keys()];
    out.push({
      ok: false,
      what: `${server}, which ${file} does not define (${known.length ? `it has ${known.map(quotedName).join(", ")}` : "it defines no server"})`,
      next: `add ${quotedName(run.label)} under "servers" in ${file}, or change the label the entry runs in ${host.file} to one it defines`,
    });
    return null;
  }
  return { file, config, servers };
}

/**
 * A name compared as a person writes it in either place: `github-token` in the vault is
 * `GITHUB_TOKEN` in an environment (case, and '-' or '.' for '_', aside).
 */
const sameName = (name: string): string => name.toLowerCase().replace(/[-.]/g, "_");

/**
 * Variables of the entry's `env` that the vault holds, by NAME alone: doctor never reads,
 * compares or prints a value (the vault's are sealed under the passphrase; docs/onboarding.md
 * says why it does not ask for them). Three cases, each a problem naming the host file, the
 * entry, the variable and the secret's name:
 * - the entry's label takes the variable from the vault (its `credentials`), which holds the
 *   secret: the credential moved to the vault but was left in clear in the host file;
 * - a label of the portcullis.json the entry would be read with takes the variable from the vault,
 *   but the entry does not run that label (`-- COMMAND`, which reads no portcullis.json, or an
 *   entry not behind portcullis): the server gets the host file's value, not the vault's;
 * - the vault holds a secret named as the variable (`GITHUB_TOKEN`, or `github-token`) that
 *   nothing takes from it for this entry: most likely the credential stored and left;
 * - none of these, and the variable's name says it carries a credential: one the vault does not
 *   hold yet (clearCredentialFinding, doctorEnv.ts).
 */
function clearEnvFindings(
  host: HostFile,
  key: string,
  entry: Entry,
  cwd: string,
  vaultNames: ReadonlySet<string>,
  run: EntryRunOrNot,
  label: { name: string; file: string; config: ServerConfig; servers: Map<string, ServerConfig> } | null,
  /** the state directory its commands name (adviceDir) */
  dir: string | undefined,
): LabelFinding[] {
  const values: Record<string, unknown> =
    typeof entry.env === "object" && entry.env !== null && !Array.isArray(entry.env)
      ? (entry.env as Record<string, unknown>)
      : {};
  const env = Object.keys(values);
  if (env.length === 0) return [];
  const entryName = `${host.file}: server ${quotedName(key)}`;
  const rotate = `the value has been in a file, so rotate it (${shellWord(`${host.file}.portcullis-backup`)} and the wrap record may hold it too)`;
  const remove = (variable: string) =>
    `delete ${quotedName(variable)} from the entry's "env" in ${host.file}`;
  const byName = new Map<string, string[]>();
  for (const n of [...vaultNames].sort()) byName.set(sameName(n), [...(byName.get(sameName(n)) ?? []), n]);
  // the labels that could take a variable from the vault: the entry's own file, else the one
  // found where the host starts the entry (or, for Claude Desktop, from here)
  const servers =
    label !== null
      ? { path: label.file, file: label.servers }
      : vaultNames.size > 0
        ? nearbyLabels(host, entry, cwd)
        : null;
  const out: LabelFinding[] = [];
  // the rest: a credential in clear that the vault does not hold (doctorEnv.ts)
  const unknownToVault = (variable: string) => {
    const f = clearCredentialFinding(
      host.file,
      key,
      variable,
      values[variable],
      run.kind === "label" ? { kind: "label", label: run.label, file: label?.file } : { kind: "other" },
      dir,
    );
    if (f) out.push(f);
  };
  for (const variable of env) {
    const own = label !== null && Object.hasOwn(label.config.credentials, variable);
    if (own) {
      const scope = label.config.credentials[variable]!;
      if (vaultNames.has(scope))
        out.push({
          ok: false,
          what: `${entryName} still sets ${quotedName(variable)} in its "env", in clear, a credential the vault holds as ${quotedName(scope)} (${label.file}, label ${quotedName(label.name)}, takes it from the vault)`,
          next: `${remove(variable)} (the server gets the vault's value); ${rotate}`,
        });
      // a scope the vault does not hold: the gateway refuses to start (said apart when doctor
      // reads that vault), and the value sits in the host file all the same
      else {
        // the flags of the delivery the label asks for (HTTP: the hosts it declares)
        const spec = label.config.credentialSpecs.find((c) => c.env === variable);
        const deliverFlags =
          spec?.deliver === "http" ? spec.hosts.map((h) => `--host ${h}`).join(" ") : "--deliver env";
        const f = clearCredentialFinding(
          host.file,
          key,
          variable,
          values[variable],
          { kind: "mapped", label: label.name, file: label.file, scope, deliverFlags },
          dir,
        );
        if (f) out.push(f);
      }
      continue;
    }
    const taking =
      servers === null
        ? []
        : [...servers.file.entries()]
            .filter(
              ([, c]) => Object.hasOwn(c.credentials, variable) && vaultNames.has(c.credentials[variable]!),
            )
            .map(([l, c]) => ({ label: l, scope: c.credentials[variable]! }));
    const named = byName.get(sameName(variable)) ?? [];
    if (taking.length === 0 && named.length === 0) {
      unknownToVault(variable);
      continue;
    }
    const how =
      run.kind === "label"
        ? `, which the label it runs, ${quotedName(run.label)}, does not take from the vault (its "credentials" do not name ${quotedName(variable)})`
        : run.kind === "command"
          ? `, and runs '-- COMMAND', which takes nothing from the vault: the server gets the host file's value`
          : run.kind === "bare"
            ? ", and is not behind portcullis: the server gets the host file's value"
            : "";
    if (taking.length > 0 && servers !== null) {
      // the label of this entry's own server, when one takes it; else the first that does
      const own = run.kind === "command" ? run.label : run.kind === "bare" ? labelFor(key) : undefined;
      const t = taking.find((x) => x.label === own) ?? taking[0]!;
      const runIt = `have the entry run that label (its "args": the CLI, "run", "--state-dir", DIR, ${quotedName(t.label)}; docs/onboarding.md, "After wrap")`;
      const mapIt = `describe it in ${CONFIG_FILE} with "credentials": {${JSON.stringify(variable)}: ${JSON.stringify(t.scope)}} and have the entry run its own label`;
      out.push({
        ok: false,
        what: `${entryName} sets ${quotedName(variable)} in its "env", in clear${how}; the label ${quotedName(t.label)} of ${servers.path} takes it from the vault, which holds it as ${quotedName(t.scope)}`,
        next:
          run.kind === "label"
            ? `add ${quotedName(variable)}: ${quotedName(t.scope)} to the "credentials" of ${quotedName(run.label)} in ${servers.path}, then ${remove(variable)}; ${rotate}`
            : t.label === own
              ? `${runIt}, then ${remove(variable)}; ${rotate}`
              : `if this entry is the server ${quotedName(t.label)} describes, ${runIt}; if it is another, ${mapIt}; then ${remove(variable)}; ${rotate}`,
      });
      continue;
    }
    const secret = named.map(quotedName).join(" and ");
    out.push({
      ok: false,
      what: `${entryName} sets ${quotedName(variable)} in its "env", in clear${how}; the vault holds a secret named ${secret}`,
      next:
        run.kind === "label" && label !== null
          ? `if it is that credential: add ${quotedName(variable)}: ${quotedName(named[0]!)} to the "credentials" of ${quotedName(run.label)} in ${label.file}, then ${remove(variable)}; ${rotate}. If it is another one, give the vault's secret another name`
          : `if it is that credential: describe the server in a ${CONFIG_FILE} with "credentials": {${JSON.stringify(variable)}: ${JSON.stringify(named[0]!)}} and have the entry run its label (docs/onboarding.md, "After wrap"), then ${remove(variable)}; ${rotate}. If it is another one, give the vault's secret another name`,
    });
  }
  return out;
}

/** The labels of the portcullis.json the entry would be read with, or null: none, or one that cannot be read. */
function nearbyLabels(
  host: HostFile,
  entry: Entry,
  cwd: string,
): { path: string; file: Map<string, ServerConfig> } | null {
  const start =
    startDir(host, entry, cwd)?.dir ?? (typeof entry.cwd === "string" ? resolve(cwd, entry.cwd) : cwd);
  const path = findConfig(start);
  if (path === null) return null;
  try {
    return { path, file: loadConfigFile(path) };
  } catch {
    return null; // said where it matters: for an entry that runs one of its labels
  }
}

/**
 * Why the gateway of an entry running `portcullis run --url URL --header-secret …` stops at start
 * for the vault (headerSecretProblem: the secret missing, or stored for other hosts than the
 * URL's), or null. A malformed flag or URL is run's own refusal, said by the "refused" finding.
 */
function urlHeaderSecretProblem(
  run: { url: string; headerSecrets: string[] },
  stored: ReadonlyMap<string, SecretPolicy>,
  stateDir: string,
): string | null {
  const headers: HeaderSpec[] = [];
  for (const text of run.headerSecrets) {
    const h = parseHeaderSecretFlag(text);
    if (typeof h === "string") return null;
    headers.push(h);
  }
  if (headers.length === 0 || !URL.canParse(run.url)) return null;
  const server = { ...commandLineServer("remote", "", []), remote: { url: run.url, headers } };
  return headerSecretProblem(server, stored, stateDir);
}
