// The keys each host reads in a server entry, and the ones an entry holds that look like a mistyped
// one of them. A host ignores a key it does not know: `"arg": ["server.js"]` for `"args"` starts
// the server without its arguments, and an `"envs"` without its environment. Wrap would write the
// mistake into the gateway's command line and file the server under a label as if it were meant,
// so it refuses such an entry, naming the key and the one it most likely meant
// (src/onboard/wrap.ts). A key near none of the host's (`"timeout"`, `"disabled"`,
// `"autoApprove"`, VS Code's `"gallery"` and `"version"`, a key a host adds after these lists were
// written) is left as it is: refusing it would keep a working entry from being wrapped for a key
// that changes nothing of what runs, and these lists cannot keep up with every host's releases.
import { quotedName } from "../catalog/text.js";
import { nearestName } from "../util/nearest.js";
import { looksGenerated, redactText } from "../util/redact.js";
import type { Entry } from "./document.js";
import type { HostFile } from "./hosts.js";

/**
 * The keys of a server entry, per host, as the hosts document them (both kinds, stdio and HTTP:
 * an entry of either is read by the same host). `cwd` is taken in every one: the drill and doctor
 * read it, and an entry that names it is run from it by the hosts that do.
 */
const JSON_COMMON = ["command", "args", "env", "cwd", "type", "url", "headers"];
const KNOWN: Record<string, readonly string[]> = {
  "claude-code": [...JSON_COMMON, "headersHelper", "oauth"],
  "claude-desktop": JSON_COMMON,
  cursor: [...JSON_COMMON, "envFile", "auth"],
  vscode: [...JSON_COMMON, "envFile", "dev", "sandboxEnabled", "sandbox"],
  codex: [
    "command",
    "args",
    "env",
    "env_vars",
    "cwd",
    "url",
    "bearer_token_env_var",
    "bearer_token",
    "http_headers",
    "env_http_headers",
    "startup_timeout_sec",
    "startup_timeout_ms",
    "tool_timeout_sec",
    "enabled",
    "required",
    "enabled_tools",
    "disabled_tools",
    "scopes",
    "oauth",
    "oauth_resource",
    "tools",
    "default_tools_approval_mode",
    "supports_parallel_tool_calls",
  ],
};

/** A file given by path, of no host by name: any key one of the JSON hosts reads. */
const ANY_JSON = [
  ...new Set(
    Object.entries(KNOWN)
      .filter(([h]) => h !== "codex")
      .flatMap(([, keys]) => keys),
  ),
];

/** The keys `host` reads in a server entry. */
export function knownEntryKeys(host: HostFile): readonly string[] {
  return KNOWN[host.host] ?? (host.format === "toml" ? KNOWN.codex! : ANY_JSON);
}

/**
 * Names people write for a key that are further than two edits from it (`cmd` for `command`):
 * the key each stands for, when the host reads that key.
 */
const OTHER_NAMES: Record<string, string> = {
  cmd: "command",
  exec: "command",
  executable: "command",
  program: "command",
  argv: "args",
  arguments: "args",
  environment: "env",
  envs: "env",
  env_vars: "env",
  workdir: "cwd",
  working_directory: "cwd",
  workingDirectory: "cwd",
  dir: "cwd",
  directory: "cwd",
};

/** The key another name stands for (`cmd` → `command`), or undefined. */
export function otherNameFor(key: string): string | undefined {
  return Object.hasOwn(OTHER_NAMES, key) ? OTHER_NAMES[key] : undefined;
}

/** The key an unknown one most likely stands for among `known`, or null. */
function meantKey(key: string, known: readonly string[]): string | null {
  const other = otherNameFor(key);
  if (other !== undefined && known.includes(other)) return other;
  return nearestName(key, known);
}

export interface UnknownKey {
  /** the key as written */
  shown: string;
  /** the key it most likely stands for */
  meant: string;
}

/**
 * The keys of a server entry that look like a mistyped key its host reads (within two edits of
 * one, or a name people write for one: `cmd`, `argv`, `envs` …) while the entry lacks that key,
 * in the entry's order: the host passes over them, and the server starts without what they meant.
 * Other unknown keys are not reported (see the header). A key that reads as a secret pasted in the
 * wrong place is no typo of a key name, and is never repeated.
 */
export function unknownEntryKeys(host: HostFile, e: Entry): UnknownKey[] {
  const known = knownEntryKeys(host);
  const out: UnknownKey[] = [];
  for (const k of Object.keys(e)) {
    if (known.includes(k) || redactText(k) !== k || looksGenerated(k)) continue;
    const meant = meantKey(k, known);
    // a key the entry has already ("cmd" beside "command"): the host reads that one, nothing lost
    if (meant !== null && !Object.hasOwn(e, meant)) out.push({ shown: k, meant });
  }
  return out;
}

/** The keys as a sentence names them: `"arg" (did you mean "args"?)`, joined. */
export function unknownKeysText(keys: UnknownKey[]): string {
  return keys.map((k) => `${quotedName(k.shown)} (did you mean ${quotedName(k.meant)}?)`).join(", ");
}

/** The host's name as a sentence says it: the host, or "its host" for a file given by path. */
export function hostWord(host: HostFile): string {
  const names: Record<string, string> = {
    "claude-code": "Claude Code",
    "claude-desktop": "Claude Desktop",
    cursor: "Cursor",
    vscode: "VS Code",
    codex: "Codex",
  };
  return names[host.host] ?? "its host";
}

/**
 * Why wrap refuses an entry that holds a mistyped key (unknownEntryKeys), naming the file, the
 * server key and each such key with the one it most likely meant; null when it holds none.
 */
export function unknownKeysWhy(host: HostFile, key: string, e: Entry): string | null {
  const unknown = unknownEntryKeys(host, e);
  if (unknown.length === 0) return null;
  const one = unknown.length === 1;
  const fix = `rename ${one ? "it" : "them"} as suggested`;
  return `${host.file}: server ${quotedName(key)} has ${unknownKeysText(unknown)}, ${one ? "a key" : "keys"} ${hostWord(host)} does not read in a server entry: the host starts the server without ${one ? "it" : "them"}, and wrap would put that mistake behind portcullis; ${fix}, then run wrap again`;
}
