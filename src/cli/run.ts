import { mkdirSync } from "node:fs";
import { homedir } from "node:os";
import { basename, join, resolve } from "node:path";
import { ulid } from "ulid";
import { chainExecutables, DecisionVerifier, endRun, type Run } from "../approval/index.js";
import { AuditLog } from "../audit/index.js";
import {
  APPROVAL_MODES,
  AUDIT_ARGUMENTS,
  commandLineServer,
  messageBytesProblem,
  ON_CHANGE,
  ON_EXPAND,
  resolveServer,
  type ServerConfig,
} from "../config/config.js";
import { readConsoleAddress, requestPageUrl } from "../console/address.js";
import { consoleOnDemand } from "../console/launch.js";
import { auditSink } from "../gateway/auditSink.js";
import { Gateway, type GatewayOptions } from "../gateway/gateway.js";
import { closeOrphanIntents, OpenIntents } from "../gateway/openIntents.js";
import { GatewayRegistry } from "../gateway/registry.js";
import { checkIncludes, DigestCache, IncludeError } from "../identity/index.js";
import { KeyringMissingError } from "../keyring/keyring.js";
import { openStore } from "../store/db.js";
import { resolveStateDir } from "../store/stateDir.js";
import type { ServerLink } from "../supervisor/link.js";
import { LaunchError, Supervisor } from "../supervisor/supervisor.js";
import { stdioDownstream } from "../transport/stdio.js";
import { canonicalJson, sha256Tag } from "../util/canonical.js";
import { type Logger, stderrLogger } from "../util/log.js";
import { envDelivery } from "../vault/delivery.js";
import { EgressStartError, type ServerEgress, startServerEgress } from "../vault/egress/forServer.js";
import { ReleasedValues } from "../vault/scrub.js";
import { secretNames } from "../vault/secrets.js";
import { scopesForTool } from "../vault/toolScopes.js";
import { beginAgentRun } from "./agentRun.js";
import { oneOf, parse } from "./args.js";
import { UsageError } from "./errors.js";
import type { ListenSettings } from "./listen.js";
import { reportSpawnCredentials } from "./spawnCredentials.js";

export const RUN_HELP = `usage: portcullis run [options] -- COMMAND [ARGS...]
       portcullis run [options] --url URL [--header 'Name: value']...
       portcullis run [options] LABEL          (a server from portcullis.json)

Launches and supervises an MCP server, speaking MCP on stdin/stdout in front of it.
Everything human goes to stderr.

options:
  --label L                      server label (default: derived from the command)
  --on-change report|restart|disconnect
                                 what to do when the server's files change (default: report)
  --on-expand run|tool           a catalog change that expands a tool's authority ends every
                                 grant of the run (run, default) or only that tool's (tool)
  --approval session|per-call|none
                                 approval mode for every tool (default: session)
  --watch GLOB                   extra identity input (repeatable; like identity.include)
  --url URL                      guard a server reached over Streamable HTTP instead of launching one
  --header 'Name: value'         a header sent with every request to --url (repeatable; never shown)
  --allow-insecure               allow an http:// --url to a host that is not loopback
  --state-dir DIR                state directory (default: $PORTCULLIS_HOME or ~/.local/state/portcullis)
  --config FILE                  configuration file (default: portcullis.json found upward)
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
  --listen-token-file FILE       the bearer token clients must send (default: one generated and kept
                                 in the state directory; 'portcullis status' shows it)
  --no-auth                      no bearer token (only on a loopback address)
  --listen-max-sessions N        sessions open at once; more are answered 503 (default 16)
  --listen-idle-timeout MS       a session with nothing open for this long is ended (default 600000)

In your MCP client configuration:
  "command": "portcullis", "args": ["run", "--", "node", "dist/server.js"]`;

const OPTIONS = {
  label: { type: "string" },
  "on-change": { type: "string" },
  "on-expand": { type: "string" },
  approval: { type: "string" },
  watch: { type: "string", multiple: true },
  url: { type: "string" },
  header: { type: "string", multiple: true },
  "allow-insecure": { type: "boolean" },
  "state-dir": { type: "string" },
  config: { type: "string" },
  "hold-timeout": { type: "string" },
  "max-message-bytes": { type: "string" },
  "approval-timeout": { type: "string" },
  "request-ttl": { type: "string" },
  "audit-sync": { type: "string" },
  "audit-arguments": { type: "string" },
  listen: { type: "string" },
  "listen-token-file": { type: "string" },
  "no-auth": { type: "boolean" },
  "listen-max-sessions": { type: "string" },
  "listen-idle-timeout": { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

/**
 * Loaded only by a gateway whose configuration needs them (`--listen`, `--url`, an egress proxy):
 * the HTTP front, the remote link and the proxy are 15 modules and node's http/https that a stdio
 * gateway in front of a local server never uses (startup time, docs/performance.md).
 */
const listenModule = () => import("./listen.js");
const remoteModule = () => import("./runRemote.js");
const LISTEN_FLAGS = [
  "listen",
  "listen-token-file",
  "no-auth",
  "listen-max-sessions",
  "listen-idle-timeout",
] as const;

/**
 * What a caller inside the process may replace; nothing here is reachable from the command line
 * or the environment. bench/guard-off-gateway.mjs passes a decision that skips the guard's
 * steps 1–7 (keeping the intent record), to measure what the guard itself costs.
 */
export interface RunInternals {
  decide?: GatewayOptions["decide"];
}

export async function runCommand(args: string[], internals: RunInternals = {}): Promise<number> {
  const sep = args.indexOf("--");
  const { values, positionals } = parse("run", sep === -1 ? args : args.slice(0, sep), OPTIONS);
  if (values.help) {
    process.stderr.write(`${RUN_HELP}\n`);
    return 0;
  }
  const onChange = oneOf("run", "on-change", values["on-change"], ON_CHANGE);
  const onExpand = oneOf("run", "on-expand", values["on-expand"], ON_EXPAND);
  const approval = oneOf("run", "approval", values.approval, APPROVAL_MODES);
  const holdTimeoutMs = milliseconds("hold-timeout", values["hold-timeout"]);
  const approvalTimeoutMs = milliseconds("approval-timeout", values["approval-timeout"]);
  const requestTtlMs = milliseconds("request-ttl", values["request-ttl"]);
  const maxMessageBytes = messageBytes(values["max-message-bytes"]);
  const auditSync = oneOf("run", "audit-sync", values["audit-sync"], ["full", "normal"] as const) ?? "full";
  const auditArguments = oneOf("run", "audit-arguments", values["audit-arguments"], AUDIT_ARGUMENTS);

  let server: ServerConfig;
  if (values.url !== undefined) {
    if (sep !== -1) throw new UsageError("run: give either --url or '-- COMMAND', not both.");
    if (positionals.length > 0) throw new UsageError(`run: unexpected "${positionals[0]}" with --url.`);
    server = (await remoteModule()).urlServer(values.url, values.label);
  } else if (sep !== -1) {
    const command = args.slice(sep + 1);
    if (command.length === 0)
      throw new UsageError("run: nothing after '--'; give the server command, e.g. -- node dist/server.js.");
    if (positionals.length > 0) throw new UsageError(`run: unexpected "${positionals[0]}" before '--'.`);
    const label = values.label ?? deriveLabel(command);
    server = commandLineServer(label, command[0]!, command.slice(1));
  } else {
    if (positionals.length !== 1) {
      throw new UsageError("run: give a server LABEL from portcullis.json, or '-- COMMAND [ARGS...]'.");
    }
    server = resolveServer(positionals[0]!, process.cwd(), values.config);
    if (values.label) server.label = values.label;
  }
  if (server.remote) {
    (await remoteModule()).applyRemoteFlags(server, values.header ?? [], values["allow-insecure"] === true);
    if (values.watch?.length || onChange)
      throw new UsageError(
        `run: ${values.watch?.length ? "--watch" : "--on-change"} does not apply to a server reached by URL (portcullis watches no files of it).`,
      );
  } else if (values.header?.length || values["allow-insecure"]) {
    throw new UsageError(
      `run: ${values.header?.length ? "--header" : "--allow-insecure"} applies only with --url.`,
    );
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

  const stateDir = resolveStateDir(values["state-dir"]);
  const listen =
    server.listen !== undefined || LISTEN_FLAGS.some((f) => values[f] !== undefined)
      ? (await listenModule()).listenSettings(server, stateDir, values)
      : null;
  return serve(server, stateDir, {
    holdTimeoutMs,
    approvalTimeoutMs,
    requestTtlMs,
    auditSync,
    decide: internals.decide,
    listen,
  });
}

/**
 * Every credential scope the configuration names must have a secret in the vault (names are
 * readable without the passphrase): a typo or a forgotten `vault set` is an error at start,
 * naming the key and the file, not a refusal at the first call. A secret removed while the
 * gateway runs is still refused per call (`credential_missing`).
 */
function checkSecretsExist(server: ServerConfig, store: ReturnType<typeof openStore>, stateDir: string) {
  if (server.credentialSpecs.length === 0) return;
  const names = secretNames(store);
  for (const spec of server.credentialSpecs) {
    if (names.has(spec.secret)) continue;
    const where = server.configFile ?? "the configuration";
    const key = `${server.configKey ?? `servers.${server.label}`}.credentials.${spec.env}`;
    throw new UsageError(
      `run: ${where}: ${key} names the secret "${spec.secret}", which is not in the vault of ${stateDir}; store it first with 'portcullis vault set ${spec.secret}'.`,
    );
  }
}

function checkIncludesOrUsage(patterns: string[], cwd: string, where: string): string[] {
  try {
    return checkIncludes(patterns, cwd, where);
  } catch (e) {
    if (e instanceof IncludeError) throw new UsageError(e.message);
    throw e;
  }
}

function milliseconds(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) {
    throw new UsageError(`run: --${flag} must be a whole number of milliseconds (got "${value}").`);
  }
  return n;
}

function messageBytes(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = /^[0-9]+$/.test(value) ? Number(value) : Number.NaN;
  const problem = messageBytesProblem(n);
  if (problem) throw new UsageError(`run: --max-message-bytes ${problem} (got "${value}").`);
  return n;
}

function deriveLabel(command: string[]): string {
  const script = command.slice(1).find((a) => !a.startsWith("-"));
  const base = basename(script ?? command[0]!).replace(/\.[cm]?[jt]s$|\.py$/, "");
  const cleaned = base.replace(/[^A-Za-z0-9._-]/g, "-").replace(/^[^A-Za-z0-9]+/, "");
  return (cleaned || "server").slice(0, 64);
}

/** Digest of the configuration that shapes this server (never env or header values in clear). */
function configDigest(server: ServerConfig): string {
  // configKey only says where the server sits in its file, for messages
  const { configKey: _where, ...rest } = server;
  const shape = {
    ...rest,
    env: Object.keys(server.env).sort(),
    configFile: server.configFile,
    ...(server.remote
      ? { remote: { url: server.remote.url, headers: server.remote.headers.map((h) => h.name).sort() } }
      : {}),
  };
  return sha256Tag(canonicalJson(shape));
}

/**
 * The content-digest cache is shared by every state directory of the user: it maps
 * (path, size, mtime, inode) to a digest, which says nothing about any one gateway,
 * and sharing it keeps a new state directory from hashing node_modules cold.
 */
function digestCacheFile(): string {
  const base = process.env.PORTCULLIS_CACHE_DIR
    ? resolve(process.env.PORTCULLIS_CACHE_DIR)
    : join(
        process.env.XDG_CACHE_HOME ? resolve(process.env.XDG_CACHE_HOME) : join(homedir(), ".cache"),
        "portcullis",
      );
  mkdirSync(base, { recursive: true, mode: 0o700 });
  // "digests.bin" and "digests.trees/": the layout with one listing file per tree (cache.ts);
  // builds that kept every tree in "digest-cache.bin" keep using that file undisturbed
  return join(base, "digests.bin");
}

async function serve(
  server: ServerConfig,
  stateDir: string,
  {
    holdTimeoutMs,
    approvalTimeoutMs,
    requestTtlMs,
    auditSync,
    decide,
    listen,
  }: {
    holdTimeoutMs?: number;
    approvalTimeoutMs?: number;
    requestTtlMs?: number;
    auditSync: "full" | "normal";
    decide?: GatewayOptions["decide"];
    listen?: ListenSettings | null;
  },
): Promise<number> {
  const log = stderrLogger(server.label);
  const store = openStore(stateDir);
  let audit: AuditLog;
  try {
    audit = AuditLog.open(store, stateDir, { sync: auditSync });
  } catch (e) {
    store.close();
    if (e instanceof KeyringMissingError) {
      throw new UsageError(
        `run: no keyring in ${stateDir}; run 'portcullis init' first (it asks for a passphrase once).`,
      );
    }
    throw e;
  }
  try {
    checkSecretsExist(server, store, stateDir);
  } catch (e) {
    store.close();
    throw e;
  }
  const gatewayId = ulid();
  const registry = new GatewayRegistry(store, gatewayId, server.label);
  const statusLog = {
    ...log,
    status: (line: string) => {
      log.status(line);
      registry.statusLine(line);
    },
  };
  const cache = new DigestCache(digestCacheFile());
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v;
  Object.assign(env, server.env);
  // Credential variables hold placeholders in the environment the record digests; the values
  // of `deliver: "env"` scopes are added at each spawn, while the vault is unlocked.
  // Every value released to the server is scrubbed from all it says (src/vault/scrub.ts).
  const releasedValues = new ReleasedValues();
  const delivery = envDelivery(stateDir, server.credentialSpecs, releasedValues);
  Object.assign(env, delivery.placeholders);
  const spec = {
    serverLabel: server.label,
    command: server.command,
    args: server.args,
    cwd: server.cwd,
    env,
    configDigest: configDigest(server),
    include: server.identity.include,
  };
  // One link per client connection: a process supervisor, or a session with a remote server.
  // `extraEnv`: that gateway's egress proxy variables, added at each spawn (its proxy starts
  // before the server, so they are known by then).
  const remote = server.remote ? await remoteModule() : null;
  const makeLink = (linkLog: Logger, extraEnv: () => Record<string, string> = () => ({})): ServerLink =>
    server.remote && remote
      ? remote.remoteLink(server, server.remote, stateDir, spec.configDigest, linkLog, releasedValues)
      : new Supervisor({
          spec,
          cache,
          log: linkLog,
          // how often a swapped worker is looked for while idle (it is also checked before every
          // forwarded request); tests push it out to prove the forwarding-path check
          pollMs: Number(process.env.PORTCULLIS_POLL_MS) || 500,
          maxMessageBytes: server.maxMessageBytes,
          spawnEnv: async () => ({ ...extraEnv(), ...(await delivery.spawnEnv()) }),
          stderrLine: (line) => (releasedValues.size > 0 ? releasedValues.scrubText(line) : line),
          // the stdio client is this gateway's parent: its executables, digested with the server's
          // (an HTTP session's client is no process of ours)
          warmAtLaunch: listen ? undefined : () => chainExecutables(process.ppid),
        });
  // this gateway's egress proxy, when its server needs one (started below, before the server)
  let egress: ServerEgress | null = null;
  const supervisor = makeLink(statusLog, () => egress?.env ?? {});

  // Calls left open by gateways killed on this store are closed first (call_interrupted).
  try {
    const closed = closeOrphanIntents(store, audit, gatewayId);
    if (closed > 0) log.info(`audit: closed ${closed} call(s) left open by a gateway that is gone`);
  } catch (e) {
    log.warn(`audit: could not close the calls left open by gone gateways: ${(e as Error).message}`);
  }
  const events = auditSink(audit, log, new OpenIntents(store, gatewayId));

  // The console's page of a request, when a console runs for this state directory.
  const consolePage = (request: string): string | null => {
    const address = readConsoleAddress(stateDir);
    return address ? requestPageUrl(address.url, request) : null;
  };
  if (listen) {
    // the supervisor above is never started: each HTTP session has its own
    // (and each session its own egress proxy, started with it: src/cli/listen.ts)
    const shared = { server, stateDir, store, audit, events, log, makeLink, delivery, releasedValues, env };
    return (await listenModule()).listenUntilSignal(
      {
        ...shared,
        holdTimeoutMs,
        approvalTimeoutMs,
        requestTtlMs,
        consolePage,
        onRequest: (id: string) => consoleOnDemand(stateDir, id, log),
        decide,
      },
      listen,
      registry,
    );
  }
  try {
    egress = await startServerEgress({
      server,
      stateDir,
      gatewayId,
      env,
      store,
      events,
      log: statusLog,
      released: releasedValues,
      calls: () => (gateway ? gateway.callsInFlight() : { epoch: null, inFlight: [] }),
    });
  } catch (e) {
    if (e instanceof EgressStartError) throw new UsageError(`run: ${e.message}`);
    throw e;
  }
  let run: Run | null = null;
  // One per gateway: it learns the pinned approver key once and remembers verified decisions.
  const verifier = new DecisionVerifier(store, stateDir, (seqs) =>
    log.warn(
      `the audit chain pins other approver keys after the first (records ${seqs.join(", ")}): ignored`,
    ),
  );
  const trust = verifier.trusted();
  if (!trust.ok && trust.mismatch) {
    // On stderr and in `portcullis status`: every grant and decision will be refused.
    log.warn(`no grant will be honoured: ${trust.why}`);
    registry.statusLine(`approvals refused: ${trust.why}`);
  }
  const runSettings = {
    server,
    stateDir,
    store,
    events,
    verifier,
    approvalTimeoutMs,
    requestTtlMs,
    consolePage,
    onRequest: (id: string) => consoleOnDemand(stateDir, id, log),
    digestCache: cache,
  };
  const beginRun = () => {
    // the stdio client is the process that started this gateway (its parent)
    const begun = beginAgentRun(runSettings, gatewayId, statusLog, {}, () => ({
      record: supervisor.current?.record ?? null,
      revision: gateway?.status().revision ?? 0,
    }));
    run = begun.run;
    return { runId: begun.run.run, auth: begun.auth };
  };

  let finish: (code: number) => void = () => {};
  const done = new Promise<number>((resolve) => {
    finish = resolve;
  });
  let ending = false;
  const shutdown = async (code: number) => {
    if (ending) return;
    ending = true;
    downstream.close();
    await supervisor.shutdown();
    await egress?.close();
    if (run) {
      endRun(store, run);
      events.emit({ type: "run_ended", run: run.run, serverLabel: server.label });
    }
    events.flush();
    registry.end();
    store.close();
    finish(code);
  };

  let gateway: Gateway | null = null;
  const downstream = stdioDownstream(
    {
      line: (t) => gateway?.onClientLine(t),
      oversize: (n, id, hasMethod) => gateway?.onClientOversize(n, id, hasMethod),
      // a client that ends its input still gets the answers it asked for (bounded wait)
      end: (why) =>
        void (why === "input-closed" && gateway
          ? gateway.finishInFlight(holdTimeoutMs ?? 15_000).then(() => shutdown(0))
          : shutdown(0)),
    },
    server.maxMessageBytes,
  );
  gateway = new Gateway({
    label: server.label,
    onChange: server.onChange,
    onExpand: server.onExpand ?? "run",
    supervisor,
    store,
    log: statusLog,
    downstream,
    events,
    beginRun,
    holdTimeoutMs,
    consolePage,
    auditArguments: server.audit.arguments,
    decide,
    released: releasedValues,
    scopesFor: (tool) => scopesForTool(server.credentials, server.tools, tool),
    // what the egress proxy may release while a call runs: that tool's own scopes
    callScopes: (call) => scopesForTool(server.credentials, server.tools, call.tool),
    onState: (state) => {
      // the record now names the processes that answered (settled); keep both rows current
      const gen = supervisor.current;
      if (gen) registry.recordEpoch(gen.record, gen.reason);
      registry.update({ state, record: gen?.record ?? null });
    },
    onEnd: (_reason, code) => void shutdown(code),
  });
  supervisor.on("up", (gen) => {
    reportSpawnCredentials(delivery, events, statusLog, server.label, gen.epoch);
    registry.recordEpoch(gen.record, gen.reason);
    registry.update({ state: "identity-pending", epoch: gen.epoch, record: gen.record });
  });
  supervisor.on("down", () => registry.update({ state: "identity-pending" }));
  const heartbeat = setInterval(() => registry.update({ state: gateway?.status().state }), 5000);
  heartbeat.unref();
  for (const sig of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.once(sig, () => void shutdown(0));

  try {
    await supervisor.start();
  } catch (e) {
    if (e instanceof LaunchError) {
      registry.end();
      store.close();
      throw new UsageError(`run: ${e.message}`);
    }
    throw e;
  }
  const code = await done;
  clearInterval(heartbeat);
  return code;
}
