import { statSync } from "node:fs";
import { basename, parse, resolve } from "node:path";
import { displayName, firstOf } from "../catalog/text.js";
import { CONFIG_FILE, ConfigError, findConfig, loadConfigFile, resolveServer } from "../config/config.js";
import { fileProblem } from "../util/errno.js";
import { setOwn } from "../util/setOwn.js";
import { type Entry, OnboardError, readHostText, readServers } from "./document.js";
import { foundHostFiles, HOSTS, type HostFile, hostFileFromPath, hostFiles } from "./hosts.js";
import { expandHostVariables } from "./hostVariables.js";

/** How the drill starts the gateway for a label. */
export type DrillLaunch =
  /** a server of portcullis.json: `run --config FILE LABEL`, from the file's directory */
  | { config: string }
  /**
   * a host entry: `run -- COMMAND…`, in the entry's cwd with its env; `note`: where it starts
   * when that is not the folder the drill runs in for the reason a host has (Claude Desktop), and
   * `buildCwd`, where --rebuild runs then (the drill's folder: the project, not where it starts)
   */
  | { command: string[]; cwd: string; env: Record<string, string>; note?: string; buildCwd?: string };

export interface DrillServer {
  label: string;
  /** the file the entry was taken from */
  file: string;
  /** the other files that define the label too (not used) */
  others: string[];
  launch: DrillLaunch;
}

/** A place the label is defined: the file, and how to read the launch from it when chosen. */
interface Candidate {
  file: string;
  launch: () => DrillLaunch;
}

/**
 * The server LABEL for the drill, resolved before anything is asked or started. Without `file`,
 * every place it is defined is looked at: portcullis.json (found upward from `cwd`), then the
 * host files found from `cwd` in the order `wrap` and `doctor` list them; the first is used and
 * the others are reported. With `file`, only that file (portcullis.json or a host file).
 * Throws ConfigError, one sentence naming the file, when the label is nowhere or cannot be run.
 */
export function findDrillServer(label: string, cwd: string, file?: string): DrillServer {
  const candidates = file === undefined ? everywhere(label, cwd) : inFile(label, cwd, resolve(cwd, file));
  const first = candidates[0];
  if (!first) throw new ConfigError(notFoundAnywhere(cwd));
  return { label, file: first.file, others: candidates.slice(1).map((c) => c.file), launch: first.launch() };
}

function everywhere(label: string, cwd: string): Candidate[] {
  const out: Candidate[] = [];
  const config = findConfig(cwd);
  if (config && loadConfigFile(config).has(label)) out.push(configCandidate(label, cwd, config));
  for (const host of foundHostFiles(cwd)) {
    const c = hostCandidate(label, cwd, host);
    if (c) out.push(c);
  }
  return out;
}

/**
 * The refusal of a label defined nowhere from `cwd`: the labels each file found defines, as `run
 * --config FILE` and `drill --file FILE` list them; when no file was found, the places looked in.
 */
function notFoundAnywhere(cwd: string): string {
  const notRepeated = "the label given is not repeated, in case it is a secret typed in the wrong place";
  const config = findConfig(cwd);
  const found: [file: string, labels: string[]][] = [
    ...(config ? [[config, [...loadConfigFile(config).keys()]] as [string, string[]]] : []),
    ...foundHostFiles(cwd).map((h): [string, string[]] => [h.file, Object.keys(serversOf(h))]),
  ];
  if (found.length === 0) {
    // once each: with cwd the home directory, its .cursor/mcp.json is the project's and the user's
    const looked = [...new Set(HOSTS.flatMap((h) => hostFiles(h, cwd)).map((h) => h.file))];
    return `no server by that label (${notRepeated}): no ${CONFIG_FILE} in ${resolve(cwd)} or above, and no host configuration found (looked in ${looked.join(", ")}); give --file PATH, or define the server in one of them.`;
  }
  const known = found.map(([file, labels]) =>
    labels.length ? `${firstOf(labels, 12, displayName)} in ${file}` : `none in ${file}`,
  );
  return `no server by that label (${notRepeated}); known: ${known.join("; ")}.`;
}

function inFile(label: string, cwd: string, file: string): Candidate[] {
  // Said as every file named on the command line is (src/util/errno.ts): what is wrong, what to
  // do, the system's code; a directory that may not be searched is not "does not exist".
  try {
    statSync(file);
  } catch (e) {
    throw new ConfigError(
      `--file ${file}: cannot read it: ${fileProblem((e as NodeJS.ErrnoException).code)}.`,
    );
  }
  if (basename(file) === CONFIG_FILE) return [configCandidate(label, cwd, file)];
  const host = hostFileAt(file, cwd);
  const c = hostCandidate(label, cwd, host);
  if (!c) {
    const keys = Object.keys(serversOf(host));
    throw new ConfigError(
      `${file}: no server by that label (the label given is not repeated, in case it is a secret typed in the wrong place)${keys.length ? `; it has ${firstOf(keys, 12, displayName)}` : ""}.`,
    );
  }
  return [c];
}

function configCandidate(label: string, cwd: string, file: string): Candidate {
  // resolveServer checks the label and the server's cwd, and names the file when they are wrong
  return {
    file,
    launch: () => {
      const server = resolveServer(label, cwd, file);
      const secrets = [
        ...server.credentialSpecs.map((c) => `credentials.${c.env}`),
        ...(server.remote?.headers ?? []).filter((h) => "secret" in h).map((h) => `headers.${h.name}`),
      ];
      // The drill's vault is its throwaway state directory's, empty, and the user's secrets are
      // never copied into it: `run` would refuse to start, and advise a `vault set` that changes
      // nothing (it stores into the real vault).
      if (secrets.length > 0)
        throw new ConfigError(
          `${file}: ${server.configKey ?? `servers.${label}`} takes secrets from the vault (${secrets.join(", ")}); the drill runs in a throwaway state directory whose vault is empty, and never copies your secrets into it, so this entry cannot start there: drill a copy of the entry under another label, without them.`,
        );
      return { config: server.configFile! };
    },
  };
}

/**
 * A host file given by path: the host it belongs to when it is one of the places a host reads
 * (so that its tables and its variables are the host's), else as guessed from its name.
 */
function hostFileAt(file: string, cwd: string): HostFile {
  const known = HOSTS.flatMap((h) => hostFiles(h, cwd)).find((h) => h.file === file);
  if (known) return known;
  const json = (host: string): HostFile => ({ host, file, format: "jsonc", tables: [["mcpServers"]] });
  if (/[\\/]\.cursor[\\/]mcp\.json$/.test(file)) return json("cursor");
  if (basename(file) === ".mcp.json") return json("claude-code");
  // Claude Desktop's name, elsewhere than where this machine's Desktop reads it (a copy, another OS)
  if (basename(file) === "claude_desktop_config.json") return json("claude-desktop");
  return hostFileFromPath(file);
}

function serversOf(host: HostFile): Record<string, Entry> {
  try {
    return readServers(host, readHostText(host.file));
  } catch (e) {
    // its sentences are written for wrap ("nothing was written"); the drill writes nothing either
    if (e instanceof OnboardError) throw new ConfigError(e.message.replace(/; nothing was written\.$/, "."));
    throw e;
  }
}

function hostCandidate(label: string, cwd: string, host: HostFile): Candidate | null {
  const entry = serversOf(host)[label];
  if (!entry) return null;
  return { file: host.file, launch: () => hostLaunch(label, cwd, host, entry) };
}

function hostLaunch(label: string, cwd: string, host: HostFile, raw: Entry): DrillLaunch {
  if (typeof raw.command !== "string")
    throw new ConfigError(
      `${host.file}: server "${label}" has no command (${raw.url !== undefined ? "it is reached by URL" : 'no "command" key'}); the drill launches a local server, so give it one that has a command.`,
    );
  const entry = expandHostVariables(host, label, raw, cwd);
  const written = [String(entry.command), ...(Array.isArray(entry.args) ? entry.args.map(String) : [])];
  const command = unwrapped(written);
  if (command !== null && command.length === 0)
    throw new ConfigError(
      `${host.file}: server "${label}" starts portcullis without a command after '--' (run --url, or a ${CONFIG_FILE} label); the drill launches a local server command, so drill the ${CONFIG_FILE} label or an entry with a command.`,
    );
  // Claude Desktop documents no directory it starts servers in ("/" on macOS) and has been
  // reported to ignore an entry's "cwd": a server it starts finds no file by a relative path. The
  // drill starts such an entry from the filesystem's root too (doctor reports the entry), so what
  // fails under Desktop fails here, rather than passing from the project's folder.
  const desktop = host.host === "claude-desktop" && typeof entry.cwd !== "string";
  const dir =
    typeof entry.cwd === "string" ? resolve(cwd, entry.cwd) : desktop ? parse(resolve(cwd)).root : cwd;
  if (!isDirectory(dir))
    throw new ConfigError(`${host.file}: server "${label}" cwd ${dir} is not a directory that exists.`);
  const env: Record<string, string> = {};
  if (typeof entry.env === "object" && entry.env !== null)
    for (const [k, v] of Object.entries(entry.env)) setOwn(env, k, String(v));
  const note = desktop
    ? `started in ${dir}, as Claude Desktop may start it (it documents no directory, and may ignore "cwd")`
    : undefined;
  return {
    command: command ?? written,
    cwd: dir,
    env,
    ...(note !== undefined ? { note, buildCwd: cwd } : {}),
  };
}

function isDirectory(dir: string): boolean {
  try {
    return statSync(dir).isDirectory();
  } catch {
    return false;
  }
}

/**
 * The server command inside an entry that already starts portcullis, or null when the entry is
 * not one. Only portcullis's own shapes count, as wrap writes them (`NODE …/cli/main.cjs run
 * [options] -- COMMAND…`) or a human does (`portcullis run [options] -- COMMAND…`): the command is
 * what follows run's `--`. Any other entry, `npm run start -- --verbose` among them, is the
 * server's own command line. An empty array: portcullis run without `--`.
 */
export function unwrapped(command: string[]): string[] | null {
  const [program, first, second] = command;
  const viaNode = first !== undefined && /[\\/]cli[\\/]main\.c?js$/.test(first) && second === "run";
  const viaBin = /^portcullis(\.cmd|\.exe)?$/.test(basename(program ?? "")) && first === "run";
  if (!viaNode && !viaBin) return null;
  const runArgs = command.slice(viaNode ? 3 : 2);
  // run itself takes its first '--' as the separator (its options take no value starting with '-')
  const sep = runArgs.indexOf("--");
  return sep === -1 ? [] : runArgs.slice(sep + 1);
}
