import { lstatSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { quotedName, safeText } from "../catalog/text.js";
import { parseListenAddress } from "../transport/httpAccess.js";
import { fileProblem } from "../util/errno.js";
import { setOwn } from "../util/setOwn.js";
import { notUtf8Words, readSmallFile, SmallFileError } from "../util/smallFile.js";
import { type CredentialSpec, parseCredentials, scopesByEnv } from "../vault/credentials.js";
import type { ToolsConfig } from "../vault/toolScopes.js";
import { jsonSyntaxProblem } from "./jsonSyntax.js";
import { LAUNCH_ONLY_KEYS, parseHeaders, type RemoteConfig, remoteUrlProblem } from "./remote.js";
import { keyPath, refuseUnknownKeys } from "./unknownKeys.js";

export type OnChange = "report" | "restart" | "disconnect";
/**
 * What a catalog change that expands a tool's authority ends: `run` (default) every grant of the
 * agent run, so the next call asks again; `tool` only the changed tool's grant coverage.
 */
export type OnExpand = "run" | "tool";
export const ON_EXPAND: readonly OnExpand[] = ["run", "tool"];
export type ApprovalMode = "session" | "per-call" | "none";
/** How a call's arguments are recorded in the (sealed) audit log. */
export type AuditArguments = "digest" | "clear";
export const AUDIT_ARGUMENTS: readonly AuditArguments[] = ["digest", "clear"];
export const ON_CHANGE: readonly OnChange[] = ["report", "restart", "disconnect"];
export const APPROVAL_MODES: readonly ApprovalMode[] = ["session", "per-call", "none"];

export interface ServerConfig {
  label: string;
  command: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
  /** environment variable name → credential scope name */
  credentials: Record<string, string>;
  /** how each credential reaches the server (the vault's release rules) */
  credentialSpecs: CredentialSpec[];
  /** `tools.<name>.credentials`: the scopes each tool uses (src/vault/toolScopes.ts); absent: all */
  tools?: ToolsConfig;
  /** where this server is in its file (`servers.<label>` or `mcpServers.<label>`), for messages */
  configKey?: string;
  identity: { include: string[] };
  onChange: OnChange;
  /** absent: "run" */
  onExpand?: OnExpand;
  approval: {
    default: ApprovalMode;
    tools: Record<string, ApprovalMode>;
    /**
     * resources/read, resources/subscribe, prompts/get, completion/complete: always recorded;
     * with "session" or "per-call", also approved by a human per method and target (absent: "none")
     */
    resources?: ApprovalMode;
  };
  /** `digest` (default): arguments as a SHA-256 only; `clear`: also the arguments, secret-named values redacted */
  audit: { arguments: AuditArguments };
  /** the largest JSON-RPC message (bytes, one line) relayed either way; unset: the relay's default (64 MiB) */
  maxMessageBytes?: number;
  /** `HOST:PORT`: serve this server over Streamable HTTP there (`run --listen`) instead of stdio */
  listen?: string;
  /** the bearer token's file for `listen` (absolute; default: one generated in the state directory) */
  listenTokenFile?: string;
  /**
   * The egress proxy: "record" tunnels destinations no credential declares and records them;
   * "declared-only" refuses them (HTTP 403). Absent: "record", and the proxy runs only when a
   * credential is delivered over HTTP.
   */
  egress?: EgressMode;
  /** the file this came from, or null for a command-line server */
  configFile: string | null;
  /** a server reached over Streamable HTTP instead of launched (then `command` is "") */
  remote?: RemoteConfig;
}

/**
 * A server label: it names the server in status, the audit log and approval reviews, so it is
 * plain (no control characters or anything else a terminal would act on) and short. One rule for
 * portcullis.json keys and `run --label`.
 */
export const LABEL_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
/** The longest label LABEL_PATTERN takes (for what makes one: wrap's labelFor and its suggestions). */
export const LABEL_MAX_LENGTH = 64;
export const LABEL_RULE =
  "letters, digits, '.', '_', '-', starting with a letter or digit; at most 64 characters";

export type EgressMode = "record" | "declared-only";
export const EGRESS_MODES: readonly EgressMode[] = ["record", "declared-only"];

/**
 * A server given on the command line (`run -- COMMAND`, `run --url URL`): no file, and the
 * defaults a configuration entry would get.
 */
export function commandLineServer(label: string, command: string, args: string[]): ServerConfig {
  return {
    label,
    command,
    args,
    cwd: process.cwd(),
    env: {},
    credentials: {},
    credentialSpecs: [],
    identity: { include: [] },
    onChange: "report",
    approval: { default: "session", tools: {} },
    audit: { arguments: "digest" },
    configFile: null,
  };
}

/** A configuration problem: the message names the file and the key. Exit code 2. */
export class ConfigError extends Error {
  override name = "ConfigError";
}

export const CONFIG_FILE = "portcullis.json";

/**
 * portcullis.json found upward from `cwd`, or null. A name that is there is the file, whatever it
 * turns out to be when read: a symbolic link whose target is gone (a config moved away), or one
 * that cannot be looked at, was passed over by existsSync, and the search went on to a
 * portcullis.json above (another project's, the home directory's) and ran its servers.
 */
export function findConfig(cwd: string): string | null {
  let dir = resolve(cwd);
  for (;;) {
    const candidate = join(dir, CONFIG_FILE);
    if (nameIsThere(candidate)) return candidate;
    const parent = dirname(dir);
    if (parent === dir) return null;
    dir = parent;
  }
}

/** Whether a directory entry of that name exists (a link is not followed); unsure is yes. */
function nameIsThere(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    return code !== "ENOENT" && code !== "ENOTDIR";
  }
}

function isSymbolicLink(path: string): boolean {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}

type Json = Record<string, unknown>;

function isObject(v: unknown): v is Json {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** The keys of a configuration file's top level. */
const TOP_LEVEL_KEYS = ["servers", "mcpServers", "console", "$schema"];

export const SERVER_KEYS: ReadonlySet<string> = new Set([
  "command",
  "args",
  "cwd",
  "env",
  "credentials",
  "identity",
  "onChange",
  "onExpand",
  "approval",
  "audit",
  "maxMessageBytes",
  "listen",
  "listenTokenFile",
  "tools",
  "egress",
  "type",
  "url",
  "headers",
]);

/** Bounds of a message size limit: below 1 KiB not even a handshake fits; above 1 GiB is no limit. */
export const MIN_MESSAGE_BYTES = 1024;
export const MAX_MESSAGE_BYTES = 1024 * 1024 * 1024;

/** Why `n` is not a valid message size limit, or null when it is. */
export function messageBytesProblem(n: unknown): string | null {
  if (typeof n !== "number" || !Number.isInteger(n) || n < MIN_MESSAGE_BYTES || n > MAX_MESSAGE_BYTES) {
    return `must be a whole number of bytes from ${MIN_MESSAGE_BYTES} to ${MAX_MESSAGE_BYTES}`;
  }
  return null;
}

/** The longest a console's passphrase proof may be held for decisions. */
export const MAX_PROOF_WINDOW_S = 24 * 3600;

export function proofWindowProblem(n: unknown): string | null {
  return typeof n === "number" && Number.isInteger(n) && n >= 0 && n <= MAX_PROOF_WINDOW_S
    ? null
    : `must be a whole number of seconds from 0 to ${MAX_PROOF_WINDOW_S}`;
}

/** How a console decision approving one call of a `per-call` tool is proven. */
export type PerCallProof = "window" | "fresh";
export const PER_CALL_PROOF_VALUES: readonly PerCallProof[] = ["window", "fresh"];

export function perCallProofProblem(v: unknown): string | null {
  return typeof v === "string" && (PER_CALL_PROOF_VALUES as readonly string[]).includes(v)
    ? null
    : `must be "window" (a held proof makes it a click) or "fresh" (the passphrase each time)`;
}

export interface ConsoleSection {
  proofWindow?: number;
  perCallProof?: PerCallProof;
}

/**
 * The `console` section: `{"proofWindow": SECONDS, "perCallProof": "window" | "fresh"}` (how long
 * the web console holds a passphrase proof for decisions, 0 = every decision asks; whether
 * approving a call of a `per-call` tool may use that held proof). Absent: {}.
 */
export function parseConsoleSection(file: string, block: unknown): ConsoleSection {
  if (block === undefined) return {};
  if (!isObject(block)) throw new ConfigError(`${file}: console must be an object.`);
  const out: ConsoleSection = {};
  refuseUnknownKeys(block, ["proofWindow", "perCallProof"], "console", (path, what) => {
    throw new ConfigError(`${file}: ${path} ${what}.`);
  });
  for (const [k, v] of Object.entries(block)) {
    if (k === "proofWindow") {
      const problem = proofWindowProblem(v);
      if (problem) throw new ConfigError(`${file}: console.proofWindow ${problem}.`);
      out.proofWindow = v as number;
    } else if (k === "perCallProof") {
      const problem = perCallProofProblem(v);
      if (problem) throw new ConfigError(`${file}: console.perCallProof ${problem}.`);
      out.perCallProof = v as PerCallProof;
    }
  }
  return out;
}

/** Far more than any configuration; a file this large is not one (and is not read into memory). */
const MAX_CONFIG_BYTES = 16 * 1024 * 1024;

/**
 * The file's text. Only a regular file of configuration size is read: opened non-blocking and
 * checked first, so a FIFO in its place (found upward, or given to --config) does not hang the
 * command, and /dev/zero does not crash it out of memory.
 */
function readConfigText(file: string): string {
  try {
    // strict: JSON is UTF-8, and a byte that is not would reach the server as U+FFFD
    return readSmallFile(file, MAX_CONFIG_BYTES, "a configuration file", { strictUtf8: true });
  } catch (e) {
    if (!(e instanceof SmallFileError)) throw e;
    const p = e.problem;
    if ("code" in p && p.code === "ENOENT" && isSymbolicLink(file))
      throw new ConfigError(
        `${file}: cannot be read: it is a symbolic link whose target does not exist (ENOENT).`,
      );
    if ("code" in p) throw new ConfigError(`${file}: cannot be read: ${fileProblem(p.code)}.`);
    if ("special" in p) throw new ConfigError(`${file}: is not a regular file (a FIFO, socket or device).`);
    if ("notUtf8" in p) throw new ConfigError(`${file}: is not UTF-8 text: ${notUtf8Words(p.notUtf8)}.`);
    throw new ConfigError(`${file}: is ${p.size} bytes, far more than a configuration file.`);
  }
}

/**
 * The JSON document of a portcullis.json, as `loadConfigFile` and the console (which reads only
 * its section) both read it: a byte order mark skipped, a key written twice refused.
 */
export function readConfigDocument(file: string): unknown {
  let text = readConfigText(file);
  // A byte order mark, as some Windows editors save UTF-8: JSON.parse refuses it with an
  // "Unexpected token" naming a character the user cannot see. RFC 8259 lets a reader ignore it.
  if (text.startsWith("\uFEFF")) text = text.slice(1);
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    // not V8's message, which quotes the text around the error (a token in `env` among it)
    throw new ConfigError(`${file}: not valid JSON (${jsonSyntaxProblem(text, e)}).`);
  }
  refuseDuplicateKeys(file, text);
  return doc;
}

/**
 * The top level of a configuration document: an object of the known keys, its console section
 * valid. Both `loadConfigFile` and the console (which reads no server entry) check this much: a
 * section name mistyped at the top (`"consol"`) would otherwise leave the console on its default.
 */
export function checkTopLevel(file: string, doc: unknown): asserts doc is Record<string, unknown> {
  if (!isObject(doc)) throw new ConfigError(`${file}: the top level must be an object with a "servers" key.`);
  refuseUnknownKeys(doc, TOP_LEVEL_KEYS, "", (path, what) => {
    throw new ConfigError(`${file}: ${path} ${what}.`);
  });
  // Only `portcullis console` uses it, but every command that loads the file checks it: a typo
  // there must not pass `run` silently and surface the day the console is opened.
  parseConsoleSection(file, doc.console);
}

/** Reads and validates a configuration file; every problem names the file and the key. */
export function loadConfigFile(file: string): Map<string, ServerConfig> {
  const doc = readConfigDocument(file);
  checkTopLevel(file, doc);
  if ("servers" in doc && "mcpServers" in doc) {
    throw new ConfigError(`${file}: has both "servers" and "mcpServers"; keep one (they are aliases).`);
  }
  // a file with neither (`{}`, only "console") was told that "mcpServers" must be an object,
  // naming the alias of a key the user never wrote rather than the key the file lacks
  if (!("servers" in doc) && !("mcpServers" in doc))
    throw new ConfigError(
      `${file}: has no "servers" (or its alias "mcpServers"): give the servers to run, by label, as {"servers": {"LABEL": {"command": …}}}.`,
    );
  const key = "servers" in doc ? "servers" : "mcpServers";
  const servers = doc[key];
  if (!isObject(servers)) throw new ConfigError(`${file}: "${key}" must be an object of server labels.`);
  const base = dirname(file);
  const out = new Map<string, ServerConfig>();
  for (const [label, raw] of Object.entries(servers)) {
    out.set(label, parseServer(file, keyPath(key, label), label, raw, base));
  }
  return out;
}

/**
 * A key written twice in one object (two servers under one label, `command` twice in an entry):
 * JSON.parse keeps the last and drops the first without a word, so the server that runs is not
 * the one the user may be reading. Refused, naming the object and both lines. `text` is JSON that
 * JSON.parse accepted, so a plain scan of its tokens finds the keys; it keeps its own stack (no
 * recursion: JSON.parse reads a document nested however deep) and loads no JSON package (the
 * gateway loads this module before anything else).
 */
function refuseDuplicateKeys(file: string, text: string): void {
  type Frame = {
    at: string;
    keys: Map<string, number> | null;
    key: string;
    index: number;
    expectKey: boolean;
  };
  const stack: Frame[] = [];
  let line = 1;
  const childAt = (): string => {
    const top = stack[stack.length - 1];
    if (!top) return "";
    if (top.keys) return keyPath(top.at, top.key);
    return `${top.at}[${top.index}]`;
  };
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    const top = stack[stack.length - 1];
    if (c === "\n") line++;
    else if (c === "{" || c === "[") {
      const keys = c === "{" ? new Map<string, number>() : null;
      stack.push({ at: childAt(), keys, key: "", index: 0, expectKey: c === "{" });
    } else if (c === "}" || c === "]") stack.pop();
    else if (c === "," && top) {
      if (top.keys) top.expectKey = true;
      else top.index++;
    } else if (c === ":" && top) top.expectKey = false;
    else if (c === '"') {
      let end = i + 1;
      while (text[end] !== '"') end += text[end] === "\\" ? 2 : 1;
      if (top?.keys && top.expectKey) {
        const key = JSON.parse(text.slice(i, end + 1)) as string;
        const first = top.keys.get(key);
        if (first !== undefined)
          throw new ConfigError(
            `${file}: ${top.at || "the top level"} has the key ${quotedName(key)} twice (lines ${first} and ${line}); only the last would be read, so remove one.`,
          );
        top.keys.set(key, line);
        top.key = key;
      }
      i = end;
    }
  }
}

const NUL_REFUSED = "contains a NUL byte, which cannot be passed to a program";

function parseServer(file: string, at: string, label: string, raw: unknown, base: string): ServerConfig {
  const fail = (k: string, what: string): never => {
    // a key shown in brackets (keyPath: not an identifier) follows the path without a dot
    throw new ConfigError(`${file}: ${at}${k && !k.startsWith("[") ? `.${k}` : k} ${what}.`);
  };
  if (!isObject(raw)) return fail("", "must be an object");
  if (!LABEL_PATTERN.test(label)) {
    fail("", `is not a valid label (${LABEL_RULE})`);
  }
  refuseUnknownKeys(raw, [...SERVER_KEYS], "", fail);
  let remote: RemoteConfig | undefined;
  if (raw.url !== undefined) {
    if (raw.command !== undefined)
      fail("url", 'and "command" are both set; a server is either launched (command) or reached (url)');
    for (const k of LAUNCH_ONLY_KEYS)
      if (raw[k] !== undefined)
        fail(k, 'does not apply to a server reached by "url" (nothing of it is launched or watched)');
    if (raw.type !== undefined && raw.type !== "http" && raw.type !== "streamable-http")
      // both are accepted: the sentence names both, or a pasted "streamable-http" reads as refused
      fail("type", 'must be "http" or "streamable-http" for a server reached by "url"');
    // http:// to a remote host is refused here unless --allow-insecure is given to run, which checks again
    if (typeof raw.url !== "string") fail("url", "must be a string");
    const problem = remoteUrlProblem(raw.url as string, true);
    if (problem) fail("url", problem);
    remote = { url: raw.url as string, headers: parseHeaders(raw.headers, fail) };
  } else {
    if (raw.headers !== undefined) fail("headers", 'applies only to a server reached by "url"');
    if (raw.type !== undefined && raw.type !== "stdio")
      fail("type", 'must be "stdio" (portcullis launches the server itself)');
    if (typeof raw.command !== "string" || raw.command.length === 0)
      fail("command", 'must be a non-empty string (or give "url" for a server reached over HTTP)');
    if ((raw.command as string).includes("\0")) fail("command", NUL_REFUSED);
  }
  const strings = (k: string): string[] => {
    const v = raw[k];
    if (v === undefined) return [];
    if (!Array.isArray(v) || v.some((x) => typeof x !== "string"))
      return fail(k, "must be an array of strings");
    const nul = (v as string[]).findIndex((x) => x.includes("\0"));
    if (nul !== -1) fail(`${k}[${nul}]`, NUL_REFUSED);
    return v as string[];
  };
  const dict = (k: string): Record<string, string> => {
    const v = raw[k];
    if (v === undefined) return {};
    if (!isObject(v)) return fail(k, "must be an object of strings");
    for (const [name, value] of Object.entries(v)) {
      if (typeof value !== "string") fail(keyPath(k, name), "must be a string");
      // The environment is copied with plain assignments on its way to the server, where this
      // name would set an object's prototype and vanish: refused rather than silently dropped.
      if (name === "__proto__") fail(keyPath(k, name), "cannot be passed on as an environment variable");
      // An environment entry is NAME=VALUE in a NUL-terminated string: a name with "=" would be
      // read as another variable (`"A=B": "x"` sets A to "B=x"), an empty one is no variable, and
      // a NUL byte cannot be passed at all (the launch failed with an internal error).
      if (name === "" || name.includes("=") || name.includes("\0"))
        fail(
          k,
          `has the name ${quotedName(name)}, which is not an environment variable name (empty, or with "=" or a NUL byte)`,
        );
      if ((value as string).includes("\0")) fail(keyPath(k, name), NUL_REFUSED);
    }
    return v as Record<string, string>;
  };
  const args = strings("args");
  if (raw.cwd !== undefined && typeof raw.cwd !== "string") fail("cwd", "must be a string");
  const env = dict("env");
  const credentialSpecs = parseCredentials(raw.credentials, fail);
  const credentials = scopesByEnv(credentialSpecs);
  const tools = parseTools(raw.tools, credentialSpecs, remote !== undefined, fail);
  let include: string[] = [];
  if (raw.identity !== undefined) {
    if (!isObject(raw.identity)) fail("identity", "must be an object");
    const id = raw.identity as Json;
    refuseUnknownKeys(id, ["include"], "identity", fail);
    if (id.include !== undefined) {
      if (!Array.isArray(id.include) || id.include.some((x) => typeof x !== "string")) {
        fail("identity.include", "must be an array of glob strings");
      }
      include = id.include as string[];
    }
  }
  let onChange: OnChange = "report";
  if (raw.onChange !== undefined) {
    if (!ON_CHANGE.includes(raw.onChange as OnChange))
      fail("onChange", `must be one of ${ON_CHANGE.join(", ")}`);
    onChange = raw.onChange as OnChange;
  }
  let onExpand: OnExpand = "run";
  if (raw.onExpand !== undefined) {
    if (!ON_EXPAND.includes(raw.onExpand as OnExpand))
      fail("onExpand", `must be one of ${ON_EXPAND.join(", ")}`);
    onExpand = raw.onExpand as OnExpand;
  }
  const approval: ServerConfig["approval"] = { default: "session", tools: {} };
  if (raw.approval !== undefined) {
    if (!isObject(raw.approval)) fail("approval", "must be an object");
    const ap = raw.approval as Json;
    refuseUnknownKeys(ap, ["default", "tools", "resources"], "approval", fail);
    if (ap.resources !== undefined) {
      if (!APPROVAL_MODES.includes(ap.resources as ApprovalMode)) {
        fail("approval.resources", `must be one of ${APPROVAL_MODES.join(", ")}`);
      }
      approval.resources = ap.resources as ApprovalMode;
    }
    if (ap.default !== undefined) {
      if (!APPROVAL_MODES.includes(ap.default as ApprovalMode)) {
        fail("approval.default", `must be one of ${APPROVAL_MODES.join(", ")}`);
      }
      approval.default = ap.default as ApprovalMode;
    }
    if (ap.tools !== undefined) {
      if (!isObject(ap.tools)) fail("approval.tools", "must be an object of tool name → mode");
      for (const [tool, mode] of Object.entries(ap.tools as Json)) {
        if (!APPROVAL_MODES.includes(mode as ApprovalMode)) {
          fail(keyPath("approval.tools", tool), `must be one of ${APPROVAL_MODES.join(", ")}`);
        }
        setOwn(approval.tools, tool, mode as ApprovalMode);
      }
    }
  }
  const audit: ServerConfig["audit"] = { arguments: "digest" };
  if (raw.audit !== undefined) {
    if (!isObject(raw.audit)) fail("audit", "must be an object");
    const au = raw.audit as Json;
    refuseUnknownKeys(au, ["arguments"], "audit", fail);
    if (au.arguments !== undefined) {
      if (!AUDIT_ARGUMENTS.includes(au.arguments as AuditArguments)) {
        fail("audit.arguments", `must be one of ${AUDIT_ARGUMENTS.join(", ")}`);
      }
      audit.arguments = au.arguments as AuditArguments;
    }
  }
  let maxMessageBytes: number | undefined;
  if (raw.maxMessageBytes !== undefined) {
    const problem = messageBytesProblem(raw.maxMessageBytes);
    if (problem) fail("maxMessageBytes", problem);
    maxMessageBytes = raw.maxMessageBytes as number;
  }
  let listen: string | undefined;
  if (raw.listen !== undefined) {
    if (typeof raw.listen !== "string") fail("listen", 'must be a string "HOST:PORT"');
    const addr = parseListenAddress(raw.listen as string);
    if (typeof addr === "string") fail("listen", addr);
    listen = raw.listen as string;
  }
  let listenTokenFile: string | undefined;
  if (raw.listenTokenFile !== undefined) {
    if (typeof raw.listenTokenFile !== "string" || raw.listenTokenFile === "")
      fail("listenTokenFile", "must be a file path (a string)");
    listenTokenFile = resolve(base, raw.listenTokenFile as string);
  }
  let egress: EgressMode | undefined;
  if (raw.egress !== undefined) {
    if (!EGRESS_MODES.includes(raw.egress as EgressMode))
      fail("egress", `must be one of ${EGRESS_MODES.map((m) => JSON.stringify(m)).join(", ")}`);
    egress = raw.egress as EgressMode;
  }
  return {
    label,
    command: remote ? "" : (raw.command as string),
    args,
    cwd: resolve(base, (raw.cwd as string | undefined) ?? "."),
    env,
    credentials,
    credentialSpecs,
    ...(tools ? { tools } : {}),
    configKey: at,
    identity: { include },
    onChange,
    onExpand,
    approval,
    audit,
    ...(maxMessageBytes !== undefined ? { maxMessageBytes } : {}),
    ...(listen !== undefined ? { listen } : {}),
    ...(listenTokenFile !== undefined ? { listenTokenFile } : {}),
    ...(egress !== undefined ? { egress } : {}),
    configFile: file,
    ...(remote ? { remote } : {}),
  };
}

/**
 * `tools`: per-tool settings, `{"<tool>": {"credentials": ["scope", …]}}`. A tool name the server
 * does not list (yet) is fine: tools come and go. A scope that is not one of the server's
 * `credentials` is an error: a typo there would silently take a credential away or, worse, make
 * a review name a scope that nothing delivers. A server reached by "url" takes no per-tool scopes:
 * the secrets of its "headers" go with every request to it, whatever the tool, so a tool given
 * `[]` was recorded and reviewed as using no credential while the header went with its call, and
 * worked only while the vault was unlocked.
 */
function parseTools(
  raw: unknown,
  specs: readonly CredentialSpec[],
  reachedByUrl: boolean,
  fail: (key: string, what: string) => never,
): ToolsConfig | undefined {
  if (raw === undefined) return undefined;
  if (!isObject(raw)) return fail("tools", "must be an object of tool name → settings");
  const known = new Set(specs.map((s) => s.secret));
  const out: ToolsConfig = {};
  for (const [tool, settings] of Object.entries(raw)) {
    const at = keyPath("tools", tool);
    if (!isObject(settings)) fail(at, 'must be an object such as {"credentials": ["scope"]}');
    const t = settings as Json;
    refuseUnknownKeys(t, ["credentials"], at, fail);
    if (t.credentials === undefined) {
      setOwn(out, tool, {});
      continue;
    }
    if (reachedByUrl)
      fail(
        `${at}.credentials`,
        'does not apply to a server reached by "url": the secrets of its "headers" go with every request to it, so every tool uses them; remove it',
      );
    if (!Array.isArray(t.credentials) || t.credentials.some((x) => typeof x !== "string"))
      fail(`${at}.credentials`, "must be an array of credential scope names");
    const scopes = t.credentials as string[];
    scopes.forEach((scope, i) => {
      if (!known.has(scope)) {
        const names = [...known].sort();
        fail(
          `${at}.credentials[${i}]`,
          `names ${quotedName(scope)}, which is not one of this server's credentials (${names.length ? names.join(", ") : "it declares none"})`,
        );
      }
    });
    setOwn<ToolsConfig[string]>(out, tool, { credentials: [...new Set(scopes)] });
  }
  return out;
}

/** The server LABEL from the config found upward from cwd (or the explicit file). */
export function resolveServer(label: string, cwd: string, explicitFile?: string): ServerConfig {
  const file = explicitFile ? resolve(cwd, explicitFile) : findConfig(cwd);
  if (!file) {
    throw new ConfigError(
      `no ${CONFIG_FILE} found in ${resolve(cwd)} or above; pass --config FILE or use 'portcullis run -- COMMAND'.`,
    );
  }
  const servers = loadConfigFile(file);
  const server = servers.get(label);
  if (!server) {
    const known = [...servers.keys()];
    throw new ConfigError(
      `${file}: no server by that label (the label given is not repeated, in case it is a secret typed in the wrong place)${known.length ? `; known: ${known.join(", ")}` : ""}.`,
    );
  }
  if (!server.remote) checkCwd(file, server);
  return server;
}

/**
 * The directory a launched server starts in must be there before it is launched: spawn reports a
 * missing cwd as ENOENT, the same code as a missing command, so checked here the refusal names
 * the file and the key rather than blaming the command.
 */
function checkCwd(file: string, server: ServerConfig): void {
  let problem: string | null = null;
  try {
    if (!statSync(server.cwd).isDirectory()) problem = "is not a directory";
  } catch (e) {
    problem = (e as NodeJS.ErrnoException).code === "ENOENT" ? "does not exist" : "cannot be reached";
  }
  if (problem)
    throw new ConfigError(
      `${file}: ${server.configKey ?? `servers.${server.label}`}.cwd: ${safeText(server.cwd)} ${problem}.`,
    );
}
