import { basename, resolve } from "node:path";
import { parseArgs } from "node:util";
import { quotedName } from "../catalog/text.js";
import { RUN_OPTIONS } from "../cli/runOptions.js";
import { CONFIG_FILE, ConfigError, findConfig, loadConfigFile, type ServerConfig } from "../config/config.js";
import { shellWord } from "../util/shellWord.js";
import type { Entry } from "./document.js";
import type { HostFile } from "./hosts.js";

/** What doctor says (the shape of doctor.ts's Finding, without the store's cause). */
interface LabelFinding {
  ok: boolean;
  what: string;
  next: string;
}

/**
 * The portcullis.json label a host entry runs (`NODE …/cli/main.cjs run [options] LABEL`, main.js in earlier builds, or
 * `portcullis run [options] LABEL`), with its `--config`; null for any other entry, a wrapped
 * `run … -- COMMAND` and `run --url` among them (they read no portcullis.json). The options are
 * read as run reads them, so that an option's value (`--state-dir DIR`) is not taken for the label.
 */
export function labelRun(entry: Entry): { label: string; config: string | undefined } | null {
  if (typeof entry.command !== "string") return null;
  const args = Array.isArray(entry.args) ? entry.args : [];
  if (!args.every((a): a is string => typeof a === "string")) return null;
  const viaNode =
    typeof args[0] === "string" && /[\\/]cli[\\/]main\.c?js$/.test(args[0]) && args[1] === "run";
  const viaBin = /^portcullis(\.cmd|\.exe)?$/.test(basename(entry.command)) && args[0] === "run";
  if (!viaNode && !viaBin) return null;
  const runArgs = args.slice(viaNode ? 2 : 1);
  if (runArgs.includes("--")) return null;
  let parsed: ReturnType<
    typeof parseArgs<{ options: typeof RUN_OPTIONS; allowPositionals: true; strict: false }>
  >;
  try {
    parsed = parseArgs({ args: runArgs, options: RUN_OPTIONS, allowPositionals: true, strict: false });
  } catch {
    return null;
  }
  const { values, positionals } = parsed;
  if (values.url !== undefined || positionals.length !== 1) return null;
  const config = typeof values.config === "string" ? values.config : undefined;
  return { label: positionals[0]!, config };
}

/**
 * The directory a host starts an entry's server in, where `run LABEL` looks for portcullis.json
 * (upward) and resolves a relative `--config`: the entry's `cwd`, else the folder the host has
 * open (doctor's working directory, as the drill takes it), except Claude Desktop, which starts
 * servers from `/` (docs/onboarding.md).
 */
function startDir(host: HostFile, entry: Entry, cwd: string): string {
  const from = host.host === "claude-desktop" ? "/" : cwd;
  return typeof entry.cwd === "string" ? resolve(cwd, entry.cwd) : from;
}

/**
 * What is wrong with a host entry that runs a portcullis.json label, as the gateway the host
 * starts would find it: no portcullis.json where it looks, one that cannot be read, or one
 * without the label (each: the gateway exits 2 at every start, and the host shows a server that
 * does not connect). And, once the label resolves: an environment variable the server's
 * `credentials` take from the vault, which the vault holds, still written in the entry's `env`
 * (the credential moved to the vault but left in clear in the host file). Named by the host
 * file, the entry, the label and the variable's name, never its value.
 */
export function labelFindings(
  host: HostFile,
  key: string,
  entry: Entry,
  cwd: string,
  vaultNames: ReadonlySet<string>,
): LabelFinding[] {
  const run = labelRun(entry);
  if (run === null) return [];
  const dir = startDir(host, entry, cwd);
  const server = `${host.file}: server ${quotedName(key)} runs the ${CONFIG_FILE} label ${quotedName(run.label)}`;
  const file = run.config !== undefined ? resolve(dir, run.config) : findConfig(dir);
  if (file === null)
    return [
      {
        ok: false,
        what: `${server}, but no ${CONFIG_FILE} is found in ${dir} or above (where the host starts it)`,
        next: `describe ${quotedName(run.label)} under "servers" in a ${CONFIG_FILE} in ${dir} or above, or give the entry's run the file's absolute path with --config FILE before the label`,
      },
    ];
  let servers: Map<string, ServerConfig>;
  try {
    servers = loadConfigFile(file);
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    return [
      {
        ok: false,
        what: `${server} of ${file}, which cannot be used: ${e.message.replace(/\.$/, "")}`,
        next: `fix ${file} (the gateway the host starts for ${quotedName(key)} refuses it too), then run doctor again`,
      },
    ];
  }
  const config = servers.get(run.label);
  if (config === undefined) {
    const known = [...servers.keys()];
    return [
      {
        ok: false,
        what: `${server}, which ${file} does not define (${known.length ? `it has ${known.map(quotedName).join(", ")}` : "it defines no server"})`,
        next: `add ${quotedName(run.label)} under "servers" in ${file}, or change the label the entry runs in ${host.file} to one it defines`,
      },
    ];
  }
  const env = typeof entry.env === "object" && entry.env !== null ? Object.keys(entry.env) : [];
  const out: LabelFinding[] = [];
  for (const variable of env) {
    if (!Object.hasOwn(config.credentials, variable)) continue;
    const scope = config.credentials[variable]!;
    if (!vaultNames.has(scope)) continue;
    out.push({
      ok: false,
      what: `${host.file}: server ${quotedName(key)} still sets ${quotedName(variable)} in its "env", in clear, a credential the vault holds as ${quotedName(scope)} (${file}, label ${quotedName(run.label)}, takes it from the vault)`,
      next: `delete ${quotedName(variable)} from the entry's "env" in ${host.file} (the server gets the vault's value); the value has been in a file, so rotate it (${shellWord(`${host.file}.portcullis-backup`)} and the wrap record may hold it too)`,
    });
  }
  return out;
}
