import { accessSync, constants, existsSync, statfsSync, statSync } from "node:fs";
import { basename, join } from "node:path";
import { commandLineServer, resolveServer, type ServerConfig } from "../config/config.js";
import type { GatewayOptions } from "../gateway/gateway.js";
import { checkIncludes, IncludeError } from "../identity/include.js";
import { foreignProc, OWN_PROC_FIX } from "../identity/procRead.js";
import { KEYRING_FILE } from "../keyring/file.js";
import { headerSchemaVersion } from "../store/headerVersion.js";
import { NEWEST_SCHEMA_VERSION } from "../store/knownVersion.js";
import { resolveStateDir, STORE_FILE, stateDirPath } from "../store/stateDir.js";
import { EarlyStart } from "../supervisor/earlyStart.js";
import type { LISTEN_ONLY_FLAGS } from "../transport/httpAccess.js";
import { UsageError } from "./errors.js";
import { readRunArgs, remoteOnlyFlag } from "./runOptions.js";
import { SHUTDOWN_SIGNALS } from "./signals.js";

// This module parses the command line and the configuration, and only then loads the gateway
// (./serve.js): `run --help` and usage errors load no store, no package and no gateway.

export const RUN_HELP = `usage: portcullis run [options] -- COMMAND [ARGS...]
       portcullis run [options] --url URL [--header 'Name: value']... [--header-secret 'Name: Bearer {}=SECRET']...
       portcullis run [options] LABEL          (a server from portcullis.json)

Launches and supervises an MCP server, speaking MCP on stdin/stdout in front of it.
Everything human goes to stderr.

options:
  --label L                      server label (default: derived from the command, the --url's host,
                                 or LABEL itself; given with LABEL, that entry runs under L):
                                 letters, digits, '.', '_', '-', at most 64 characters
  --on-change report|restart|disconnect
                                 what to do when the server's files change (default: report)
  --on-expand run|tool           a catalog change that expands a tool's authority ends every
                                 grant of the run (run, default) or only that tool's (tool)
  --approval session|per-call|none
                                 approval mode for every tool (default: session)
  --watch GLOB                   extra identity input (repeatable; like identity.include)
  --url URL                      guard a server reached over Streamable HTTP instead of launching one
  --header 'Name: value'         a header sent with every request to --url (repeatable; never shown)
  --header-secret 'Name[: FORMAT]=SECRET'
                                 a header whose value the vault releases for each request: the
                                 secret SECRET, put where {} is in FORMAT (default {}), e.g.
                                 'Authorization: Bearer {}=remote-token'; stored with vault set
                                 --host (the URL's host) or --deliver env (repeatable)
  --allow-insecure               allow an http:// --url to a host that is not loopback
  --state-dir DIR                state directory (default: $PORTCULLIS_HOME, else
                                 $XDG_STATE_HOME/portcullis, else ~/.local/state/portcullis)
  --config FILE                  the file LABEL is read from (default: portcullis.json found upward)
  --max-message-bytes N          largest JSON-RPC message relayed either way (default 67108864 = 64 MiB);
                                 a larger one is answered with an error carrying its id
  --hold-timeout MS              how long a call waits for a new epoch's catalog (default 15000)
  --approval-timeout MS          how long a call waits for a human decision (default 50000); the
                                 request outlives the call: retrying it after approval proceeds
  --request-ttl MS               how long an approval request stays pending for retries of its
                                 call (default 600000 = 10 minutes)
  --audit-sync full|normal       full (default): each call's intent record is fsynced before the call
                                 is forwarded; normal: it survives the gateway being killed but not
                                 a power loss, for lower latency
  --audit-arguments digest|clear digest (default): calls' arguments are recorded as a SHA-256;
                                 clear: also the arguments themselves (sealed; values under
                                 secret-named keys redacted)
  --listen HOST:PORT             serve over Streamable HTTP at http://HOST:PORT/mcp instead of stdio;
                                 each HTTP session gets its own server process, agent run and
                                 egress proxy
  --listen-token-file FILE       the bearer token clients must send, on the first line of a file
                                 only you may read (chmod 600; default: one generated and kept in
                                 the state directory; 'portcullis status' shows it)
  --no-auth                      no bearer token (only on a loopback address; on Linux only this
                                 user's processes are served, another user's connection is closed)
  --listen-max-sessions N        sessions open at once; more are answered 503 (default 16)
  --listen-idle-timeout MS       a session with nothing open for this long is ended (default 600000)

In your MCP client configuration:
  "command": "portcullis", "args": ["run", "--", "node", "dist/server.js"]`;

/**
 * Loaded only by a gateway whose configuration needs them (`--listen`, `--url`, an egress proxy):
 * the HTTP front, the remote link and the proxy are 15 modules and node's http/https that a stdio
 * gateway in front of a local server never uses (startup time: docs/performance-history.md,
 * "Startup and memory, third pass").
 */
const listenModule = () => import("./listen.js");
const remoteModule = () => import("./runRemote.js");
const serveModule = () => import("./serve.js");
/**
 * The options that load the listen settings: `--listen` and every option those settings check
 * (LISTEN_ONLY_FLAGS, the list run's refusal and doctor share). Written as a record of exactly
 * those keys, so that an option added there and not here fails the build (a type import:
 * httpAccess is not loaded by a stdio gateway).
 */
const LISTEN_FLAG_SET: Record<"listen" | (typeof LISTEN_ONLY_FLAGS)[number], true> = {
  listen: true,
  "listen-token-file": true,
  "no-auth": true,
  "listen-max-sessions": true,
  "listen-idle-timeout": true,
};
const LISTEN_FLAGS = Object.keys(LISTEN_FLAG_SET) as (keyof typeof LISTEN_FLAG_SET)[];

/**
 * What a caller inside the process may replace; nothing here is reachable from the command line
 * or the environment. bench/guard-off-gateway.mjs passes a decision that skips the guard's
 * steps 1–7 (keeping the intent record), to measure what the guard itself costs.
 */
export interface RunInternals {
  decide?: GatewayOptions["decide"];
}

export async function runCommand(args: string[], internals: RunInternals = {}): Promise<number> {
  // the command line alone, read as doctor reads a host entry's (runOptions.ts)
  const read = readRunArgs(args);
  if (read === "help") {
    // on stdout, as every command's help: `run --help | grep listen` found nothing. A host never
    // passes --help, so no MCP client reads it.
    process.stdout.write(`${RUN_HELP}\n`);
    return 0;
  }
  const { values, onChange, onExpand, approval, holdTimeoutMs, approvalTimeoutMs, requestTtlMs } = read;
  const { maxMessageBytes, auditSync, auditArguments } = read;
  let server: ServerConfig;
  if (read.server.kind === "url") {
    server = (await remoteModule()).urlServer(read.server.url, values.label);
  } else if (read.server.kind === "command") {
    const command = read.server.command;
    const label = values.label ?? deriveLabel(command);
    server = commandLineServer(label, command[0]!, command.slice(1));
  } else {
    server = resolveServer(read.server.label, process.cwd(), values.config);
    if (values.label) server.label = values.label;
  }
  if (server.remote) {
    (await remoteModule()).applyRemoteFlags(
      server,
      values.header ?? [],
      values["header-secret"] ?? [],
      values["allow-insecure"] === true,
    );
    if (values.watch?.length || onChange)
      throw new UsageError(
        `run: ${values.watch?.length ? "--watch" : "--on-change"} does not apply to a server reached by URL (portcullis watches no files of it).`,
      );
  } else if (remoteOnlyFlag(values)) {
    throw new UsageError(`run: ${remoteOnlyFlag(values)} applies only with --url.`);
  }
  if (onChange) server.onChange = onChange;
  if (onExpand) server.onExpand = onExpand;
  if (approval) server.approval = { default: approval, tools: {} };
  // Checked here, each with the flag or key that gave it: a pattern that can never match is refused.
  const fromConfig = server.configFile
    ? `identity.include of "${server.label}" in ${server.configFile}`
    : "identity.include";
  server.identity.include = [
    ...checkIncludesOrUsage(server.identity.include, server.cwd, fromConfig),
    ...checkIncludesOrUsage(values.watch ?? [], server.cwd, "run: --watch"),
  ];
  if (auditArguments) server.audit = { arguments: auditArguments };
  if (maxMessageBytes !== undefined) server.maxMessageBytes = maxMessageBytes;

  const listens =
    server.listen !== undefined ||
    server.listenTokenFile !== undefined ||
    LISTEN_FLAGS.some((f) => values[f] !== undefined);
  // the front's flags are checked before the keyring is looked for, as every other flag is above
  if (listens) (await listenModule()).listenShape(server, values);
  // a state directory that does not exist has no keyring: refused as serve refuses one without,
  // before it is made (a mistyped --state-dir left behind, empty, read later as set up)
  const wanted = stateDirPath(values["state-dir"]);
  if (absent(wanted)) throw (await serveModule()).noKeyring(wanted);
  const stateDir = resolveStateDir(values["state-dir"]);
  if (server.remote) (await remoteModule()).sayCredentialHeaders(server, values.header ?? [], stateDir);
  const listen = listens ? (await listenModule()).listenSettings(server, stateDir, values) : null;
  // a launched server is observed through /proc: refused where that /proc is not this process's
  // own namespace's (deny first: its epochs would name another process)
  if (!server.remote) {
    const foreign = foreignProc();
    if (foreign) throw new UsageError(`run: ${foreign}; ${OWN_PROC_FIX}.`);
  }
  const env = serverEnv(server);
  const early = startsEarly(server, stateDir, listen)
    ? new EarlyStart({ command: server.command, args: server.args, cwd: server.cwd, env }, SHUTDOWN_SIGNALS)
    : null;
  try {
    return await (await serveModule()).serve(server, stateDir, env, {
      holdTimeoutMs,
      approvalTimeoutMs,
      requestTtlMs,
      auditSync,
      decide: internals.decide,
      listen,
      early,
    });
  } finally {
    // taken by the first launch, or ended with the supervisor; else the gateway failed before
    await early?.abandon();
  }
}

/**
 * Whether the server is spawned before the gateway loads the rest of itself (earlyStart.ts): a
 * server launched over stdio whose spawn needs nothing from the store. One with credentials gets
 * placeholders and, at each spawn, released values or an egress proxy's variables; an HTTP
 * front launches one server per session; a remote server is no process of ours. Not when the
 * gateway will refuse to start for want of a keyring or of a store it can write (read-only, or on
 * a disk with less than EARLY_FREE_BYTES left), nor when the store's header does not say a schema
 * version this portcullis knows: newer than this one, or none (0: a store last migrated by a
 * portcullis from before the header was written, which may since have been brought to a newer
 * schema by another such one; or no readable header in a file that is not empty). Those the opening's check of
 * schema_migrations judges before any server runs. A store that fails later (damaged, say, or
 * newer by a header page still in the WAL) ends the server unused.
 */
function startsEarly(server: ServerConfig, stateDir: string, listen: unknown): boolean {
  if (server.remote || listen || server.credentialSpecs.length > 0 || server.egress !== undefined)
    return false;
  // what the gateway refuses before any server runs: no keyring, a store it cannot write, a store
  // whose header does not vouch for a schema this one knows (one read)
  const store = join(stateDir, STORE_FILE);
  return (
    existsSync(join(stateDir, KEYRING_FILE)) &&
    writable(stateDir) &&
    (!existsSync(store) || (writable(store) && knownStore(store))) &&
    roomFor(stateDir)
  );
}

/**
 * Whether the store's header says a schema version this portcullis knows (store/headerVersion.ts).
 * Deny first: a header that says newer is refused by the opening, and one that says nothing (0,
 * or no header) cannot tell a store a newer portcullis migrated from one it did not; the opening
 * checks schema_migrations before any server is spawned, and an opening of such a store that
 * finds it current writes its version into the header (store/db.ts), so the next run is early.
 */
function knownStore(store: string): boolean {
  // an empty file is a store being made (another process's lock on it, say): nothing in it yet to
  // be newer, as when there is no file
  if (emptyFile(store)) return true;
  const version = headerSchemaVersion(store);
  return version !== null && version >= 1 && version <= NEWEST_SCHEMA_VERSION;
}

function emptyFile(path: string): boolean {
  try {
    return statSync(path).size === 0;
  } catch {
    return false;
  }
}

/**
 * Free space below which no server is spawned early: the store's first write (its -shm file's
 * 32 KiB, the -wal's first frames) could fail for want of it, and the server would have run for
 * nothing (test/store/hostile-disk-full.test.ts).
 */
const EARLY_FREE_BYTES = 1 << 20;

/** Whether the file system holding `dir` has EARLY_FREE_BYTES left for this user (true when unknown). */
function roomFor(dir: string): boolean {
  try {
    const fs = statfsSync(dir);
    return fs.bavail * fs.bsize >= EARLY_FREE_BYTES;
  } catch {
    return true;
  }
}

/** Nothing at `path` (and not: a path this user may not look at, which resolveStateDir says). */
function absent(path: string): boolean {
  try {
    statSync(path);
    return false;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === "ENOENT";
  }
}

function writable(path: string): boolean {
  try {
    accessSync(path, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

/** The server's environment as configured: the gateway's own, then the configuration's `env`. */
function serverEnv(server: ServerConfig): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v;
  return Object.assign(env, server.env);
}

function checkIncludesOrUsage(patterns: string[], cwd: string, where: string): string[] {
  try {
    return checkIncludes(patterns, cwd, where);
  } catch (e) {
    // named by run, as its other refusals are ("portcullis run: identity.include of …"); the
    // --watch one names it already ("run: --watch: …")
    if (e instanceof IncludeError)
      throw new UsageError(e.message.startsWith("run: ") ? e.message : `run: ${e.message}`);
    throw e;
  }
}

function deriveLabel(command: string[]): string {
  const script = command.slice(1).find((a) => !a.startsWith("-"));
  const base = basename(script ?? command[0]!).replace(/\.[cm]?[jt]s$|\.py$/, "");
  const cleaned = base.replace(/[^A-Za-z0-9._-]/g, "-").replace(/^[^A-Za-z0-9]+/, "");
  return (cleaned || "server").slice(0, 64);
}
