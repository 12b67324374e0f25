import { basename, sep } from "node:path";
import { ConfigError } from "../config/config.js";
import { homeDirectory } from "../util/xdg.js";
import type { Entry } from "./document.js";
import type { HostFile } from "./hosts.js";

/**
 * The `${…}` variables a host expands in a server entry before it launches the server, expanded
 * the same way for the drill, which launches the entry itself. The project directory stands for
 * the folder the host has open.
 *
 * - VS Code (`.vscode/mcp.json`) and Cursor (`.cursor/mcp.json`, `~/.cursor/mcp.json`):
 *   `${workspaceFolder}`, `${workspaceFolderBasename}`, `${userHome}`, `${env:NAME}` (an unset
 *   NAME is empty), `${pathSeparator}` and `${/}`. Anything else (`${input:…}`, which VS Code
 *   asks the user for, `${command:…}`, `${config:…}`) only the editor can supply.
 * - Claude Code (`.mcp.json`, `~/.claude.json`): `${NAME}` and `${NAME:-default}` from the
 *   environment; an unset NAME without a default is an error there too.
 * - Claude Desktop and Codex expand nothing: their entries are taken as written.
 */
type Expand = (name: string) => string | null;

/** The fields a host expands: the command, its arguments, the environment's values, the cwd. */
const FIELDS = ["command", "args", "env", "cwd"] as const;

function editorVariables(project: string, env: NodeJS.ProcessEnv): Expand {
  // the one rule for the user's home (xdg.ts): an empty or relative HOME is passed over
  const home = homeDirectory(env);
  const fixed: Record<string, string> = {
    workspaceFolder: project,
    workspaceFolderBasename: basename(project),
    userHome: home,
    pathSeparator: sep,
    "/": sep,
  };
  return (name) => {
    if (Object.hasOwn(fixed, name)) return fixed[name]!;
    if (name.startsWith("env:")) return env[name.slice(4)] ?? "";
    return null;
  };
}

function shellVariables(env: NodeJS.ProcessEnv): Expand {
  return (name) => {
    const m = /^([A-Za-z_][A-Za-z0-9_]*)(?::-(.*))?$/s.exec(name);
    if (!m) return null;
    const value = env[m[1]!];
    if (value !== undefined) return value;
    return m[2] ?? null;
  };
}

function expanderFor(host: HostFile, project: string, env: NodeJS.ProcessEnv): Expand | null {
  switch (host.host) {
    case "vscode":
    case "cursor":
      return editorVariables(project, env);
    case "claude-code":
      return shellVariables(env);
    default:
      return null;
  }
}

/** Why a host cannot have its variable expanded here, for the sentence naming file and key. */
function unexpandable(host: HostFile, key: string, where: string, variable: string): ConfigError {
  const why =
    host.host === "claude-code"
      ? "it names an environment variable that is not set, and gives no default (:-default)"
      : /^input:/.test(variable.slice(2, -1))
        ? `${host.host} asks the user for its value when it starts the server`
        : `only ${host.host} itself can supply it`;
  return new ConfigError(
    `${host.file}: server "${key}" ${where} uses ${variable}, which the drill cannot expand (${why}); write the value in, or give the drill a portcullis.json entry for it.`,
  );
}

/**
 * The entry as the host launches it: every `${…}` in command, args, env and cwd expanded from the
 * project directory and the environment. Throws ConfigError naming the file, the key and the
 * variable when one cannot be expanded.
 */
export function expandHostVariables(
  host: HostFile,
  key: string,
  entry: Entry,
  project: string,
  env: NodeJS.ProcessEnv = process.env,
): Entry {
  const expand = expanderFor(host, project, env);
  if (!expand) return entry;
  const one = (value: unknown, where: string): unknown =>
    typeof value !== "string"
      ? value
      : value.replace(/\$\{([^}]*)\}/g, (variable, name: string) => {
          const v = expand(name);
          if (v === null) throw unexpandable(host, key, where, variable);
          return v;
        });
  const out: Entry = { ...entry };
  for (const field of FIELDS) {
    if (!Object.hasOwn(entry, field)) continue;
    const value = entry[field];
    if (Array.isArray(value)) out[field] = value.map((v, i) => one(v, `${field}[${i}]`));
    else if (typeof value === "object" && value !== null)
      out[field] = Object.fromEntries(Object.entries(value).map(([k, v]) => [k, one(v, `${field}.${k}`)]));
    else out[field] = one(value, field);
  }
  return out;
}
