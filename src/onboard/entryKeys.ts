// The keys each host reads in a server entry, and the ones an entry holds that look like a mistyped
// one of them. A host ignores a key it does not know: `"arg": ["server.js"]` for `"args"` starts
// the server without its arguments, and an `"envs"` without its environment. Wrap would write the
// mistake into the gateway's command line and file the server under a label as if it were meant,
// so it refuses such an entry, naming the key and the one it most likely meant
// (src/onboard/wrap.ts). An HTTP entry, which wrap leaves for the user to guard by hand, is held
// to the keys its host reads in one (`"urll"`, `"header"`), and any entry to the values of
// "type" its host reads (`"htpp"`). A key near none of the host's (`"timeout"`, `"disabled"`,
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

/**
 * The keys each host reads in an HTTP entry (one with a "url", or a "type" other than "stdio"):
 * a key of one of these mistyped (`"urll"`, `"header"`) has the host connect without it (no
 * headers: the server refuses the calls, or takes them as no one's) or not at all, and doctor's
 * entry to guard the server would be written from the mistake. An HTTP entry is checked against
 * these (a key near "args" in it is no loss: the host reads no args there), a stdio entry against
 * every key of its host (KNOWN).
 */
const JSON_HTTP = ["type", "url", "headers"];
const HTTP_KNOWN: Record<string, readonly string[]> = {
  "claude-code": [...JSON_HTTP, "headersHelper", "oauth"],
  "claude-desktop": JSON_HTTP,
  cursor: [...JSON_HTTP, "auth"],
  vscode: JSON_HTTP,
  codex: KNOWN.codex!.filter((k) => !["command", "args", "env", "env_vars", "cwd"].includes(k)),
};

/**
 * The values of "type" each host reads (Codex reads no "type"): a value two edits from one of
 * them (`"htpp"`, `"stdoi"`) is that one mistyped, and the host refuses or misreads the entry.
 * Claude Code also takes "ws". A value near none (another client's) is left as it is.
 */
const JSON_TYPES = ["stdio", "http", "sse"];
const TYPES: Record<string, readonly string[]> = {
  "claude-code": [...JSON_TYPES, "ws"],
  "claude-desktop": JSON_TYPES,
  cursor: JSON_TYPES,
  vscode: JSON_TYPES,
  codex: [],
};

/** A file given by path, of no host by name: any key one of the JSON hosts reads. */
const ANY_JSON = [
  ...new Set(
    Object.entries(KNOWN)
      .filter(([h]) => h !== "codex")
      .flatMap(([, keys]) => keys),
  ),
];

/** The JSON hosts' keys of an HTTP entry, for a file given by path. */
const ANY_JSON_HTTP = [
  ...new Set(
    Object.entries(HTTP_KNOWN)
      .filter(([h]) => h !== "codex")
      .flatMap(([, keys]) => keys),
  ),
];

/** The keys `host` reads in a server entry. */
export function knownEntryKeys(host: HostFile): readonly string[] {
  return KNOWN[host.host] ?? (host.format === "toml" ? KNOWN.codex! : ANY_JSON);
}

/** The keys `host` reads in an HTTP entry. */
function knownHttpKeys(host: HostFile): readonly string[] {
  return HTTP_KNOWN[host.host] ?? (host.format === "toml" ? HTTP_KNOWN.codex! : ANY_JSON_HTTP);
}

/** The values of "type" `host` reads. */
function knownTypes(host: HostFile): readonly string[] {
  return TYPES[host.host] ?? (host.format === "toml" ? TYPES.codex! : JSON_TYPES);
}

/** Which keys an entry is held to: an HTTP entry's, or every key of its host. */
export type EntryKind = "stdio" | "http";

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

/**
 * Names people write in an HTTP entry for a key further than two edits from it: other clients'
 * names for the URL (Gemini CLI's `httpUrl`, Windsurf's `serverUrl`) and the headers (Codex's
 * `http_headers` in a JSON host, the JSON hosts' `headers` in Codex's TOML), and `transport` for
 * `type`. Each counts only where its host reads the key it stands for.
 */
const OTHER_HTTP_NAMES: Record<string, string> = {
  endpoint: "url",
  httpUrl: "url",
  serverUrl: "url",
  server_url: "url",
  baseUrl: "url",
  base_url: "url",
  httpHeaders: "headers",
  http_headers: "headers",
  headers: "http_headers",
  transport: "type",
};

/** The key another name stands for (`cmd` → `command`), or undefined. */
export function otherNameFor(key: string): string | undefined {
  return Object.hasOwn(OTHER_NAMES, key) ? OTHER_NAMES[key] : undefined;
}

/** The key an unknown one most likely stands for among `known`, or null. */
function meantKey(key: string, known: readonly string[], kind: EntryKind): string | null {
  const other = otherNameFor(key);
  if (other !== undefined && known.includes(other)) return other;
  const http = kind === "http" && Object.hasOwn(OTHER_HTTP_NAMES, key) ? OTHER_HTTP_NAMES[key] : undefined;
  if (http !== undefined && known.includes(http)) return http;
  return nearestName(key, known);
}

export interface UnknownKey {
  /** the key as written (for a value: the value of "type" as written) */
  shown: string;
  /** the key it most likely stands for (for a value: the value) */
  meant: string;
  /** set when it is the value of "type" that is mistyped, not a key */
  value?: "type";
}

/**
 * The keys of a server entry that look like a mistyped key its host reads (within two edits of
 * one, or a name people write for one: `cmd`, `argv`, `envs` …) while the entry lacks that key,
 * in the entry's order: the host passes over them, and the server starts without what they meant.
 * Other unknown keys are not reported (see the header). A key that reads as a secret pasted in the
 * wrong place is no typo of a key name, and is never repeated.
 */
export function unknownEntryKeys(host: HostFile, e: Entry, given: EntryKind = "stdio"): UnknownKey[] {
  const known = knownEntryKeys(host);
  const type = typeTypo(host, e);
  const kind = entryKindMeant(host, e, given);
  // an HTTP entry's key is judged by the keys the host reads in one (a key of its host it does
  // not read there, "command" say, is no typo of a key name and is not named)
  const candidates = kind === "http" ? knownHttpKeys(host) : known;
  const out: UnknownKey[] = [];
  for (const k of Object.keys(e)) {
    if (known.includes(k) || redactText(k) !== k || looksGenerated(k)) continue;
    const meant = meantKey(k, candidates, kind);
    // a key the entry has already ("cmd" beside "command"): the host reads that one, nothing lost
    if (meant !== null && !Object.hasOwn(e, meant)) out.push({ shown: k, meant });
  }
  if (type !== null) out.push(type);
  return out;
}

/**
 * "type": "htpp": not a key the host passes over but a value it refuses or misreads, two edits
 * from one it reads; null when the entry's "type" is one, near none, or absent.
 */
function typeTypo(host: HostFile, e: Entry): UnknownKey | null {
  const types = knownTypes(host);
  if (typeof e.type !== "string" || types.length === 0 || types.includes(e.type)) return null;
  const t = e.type;
  const meant = redactText(t) === t && !looksGenerated(t) ? nearestName(t, types) : null;
  return meant === null ? null : { shown: t, meant, value: "type" };
}

/**
 * The kind an entry is meant as: the one its mistyped "type" stands for ("stdoi" is a stdio
 * entry, though the host and notStdio take it for no stdio one), else `given`.
 */
export function entryKindMeant(host: HostFile, e: Entry, given: EntryKind): EntryKind {
  const type = typeTypo(host, e);
  return type === null ? given : type.meant === "stdio" ? "stdio" : "http";
}

/** The keys as a sentence names them: `"arg" (did you mean "args"?)`, `"type": "htpp" (did you mean "http"?)`, joined. */
export function unknownKeysText(keys: UnknownKey[]): string {
  return keys
    .map(
      (k) =>
        `${k.value !== undefined ? `"${k.value}": ` : ""}${quotedName(k.shown)} (did you mean ${quotedName(k.meant)}?)`,
    )
    .join(", ");
}

/**
 * What the host does with an entry holding `keys` (unknownEntryKeys), as a clause: a key it
 * passes over (the server starts, or is connected to, without it), or a "type" it does not know.
 */
export function unknownKeysEffect(
  host: HostFile,
  keys: UnknownKey[],
  kind: EntryKind,
  /** `which Claude Code does not read …` (doctor's sentence) rather than `a key Claude Code …` */
  which = false,
): string {
  const one = keys.length === 1;
  const values = keys.filter((k) => k.value !== undefined).length;
  if (values === 0)
    return `${which ? "which" : one ? "a key" : "keys"} ${hostWord(host)} does not read in ${kind === "http" ? "an HTTP" : "a"} server entry: the host ${kind === "http" ? "connects to" : "starts"} the server without ${one ? "it" : "them"}`;
  const what =
    values === keys.length ? `a "type" ${hostWord(host)} does not know` : `${hostWord(host)} reads neither`;
  return `${what}: the host does not run the server as the entry means`;
}

/** The rename each key asks for, as a next step: `rename "arg" to "args"`, `change "type" to "http"`. */
export function unknownKeysFix(keys: UnknownKey[]): string {
  return keys
    .map((k) =>
      k.value !== undefined
        ? `change "${k.value}" to ${quotedName(k.meant)}`
        : `rename ${quotedName(k.shown)} to ${quotedName(k.meant)}`,
    )
    .join(", ");
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
export function unknownKeysWhy(
  host: HostFile,
  key: string,
  e: Entry,
  given: EntryKind = "stdio",
): string | null {
  const unknown = unknownEntryKeys(host, e, given);
  const kind = entryKindMeant(host, e, given);
  if (unknown.length === 0) return null;
  const one = unknown.length === 1;
  const fix = `${unknown.some((k) => k.value !== undefined) ? "correct" : "rename"} ${one ? "it" : "them"} as suggested`;
  // an HTTP entry is not wrapped but guarded by hand: the entry doctor gives for it would carry the mistake
  const carried =
    kind === "http"
      ? "the entry that guards it with portcullis would be written from that mistake"
      : "wrap would put that mistake behind portcullis";
  return `${host.file}: server ${quotedName(key)} has ${unknownKeysText(unknown)}, ${unknownKeysEffect(host, unknown, kind)}, and ${carried}; ${fix}, then run wrap again`;
}
