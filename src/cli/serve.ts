// The gateway of `portcullis run`, once the command line and configuration are read
// (src/cli/run.ts): the store and audit log, the server's supervisor (or remote link), the gateway
// between them and the client, until the client or a signal ends it.

import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { ulid } from "ulid";
import { chainExecutables, DecisionVerifier, endRunsOfGoneGateways, type Run } from "../approval/index.js";
import { AuditLog } from "../audit/index.js";
import type { ServerConfig } from "../config/config.js";
import { readConsoleAddress, requestPageUrl } from "../console/address.js";
import { consoleOnDemand } from "../console/launch.js";
import { auditSink } from "../gateway/auditSink.js";
import { Gateway, type GatewayOptions } from "../gateway/gateway.js";
import { closeOrphanIntents, OpenIntents } from "../gateway/openIntents.js";
import { GatewayRegistry } from "../gateway/registry.js";
import { DigestCache, setStateDir } from "../identity/index.js";
import { KeyringError, KeyringMissingError } from "../keyring/keyringErrors.js";
import { keyringExists } from "../keyring/keyringRead.js";
import { openStore } from "../store/db.js";
import { beginStoreEnding, DRAIN_BUSY_MS, type StoreEnding } from "../store/ending.js";
import { stateDirFlagFor } from "../store/stateDir.js";
import { closeStoreUnlessLost, watchStoreFiles } from "../store/storeWatch.js";
import type { EarlyStart } from "../supervisor/earlyStart.js";
import type { ServerLink } from "../supervisor/link.js";
import { LaunchError, Supervisor } from "../supervisor/supervisor.js";
import { stdioDownstream } from "../transport/stdio.js";
import { canonicalJson, sha256Tag } from "../util/canonical.js";
import { envMs } from "../util/envMs.js";
import { type Logger, scrubEveryLine, stderrLogger } from "../util/log.js";
import { xdgBase } from "../util/xdg.js";
import { envDelivery } from "../vault/delivery.js";
import { EgressStartError, type ServerEgress, startServerEgress } from "../vault/egress/forServer.js";
import { ReleasedValues } from "../vault/scrub.js";
import { storedPolicies } from "../vault/secrets.js";
import {
  beginAgentRun,
  endAgentRun,
  runGatewayOptions,
  type SpawnedCredentials,
  trackEpochs,
  unrecordedAtEnd,
} from "./agentRun.js";
import { credentialMismatch } from "./credentialMismatch.js";
import { EXIT_USAGE, UsageError } from "./errors.js";
import { keyringEnding } from "./keyringAdvice.js";
import { scrubAtLastResort } from "./lastResort.js";
import type { ListenSettings } from "./listen.js";
import { namesSecrets, secretsProblem } from "./secretsStored.js";
import { onShutdownSignals } from "./signals.js";

/** Loaded only by a gateway whose configuration needs them (see src/cli/run.ts). */
const listenModule = () => import("./listen.js");
const remoteModule = () => import("./runRemote.js");

/** What run refuses at start for the vault secrets the configuration names (secretsStored.ts). */
function checkSecretsExist(server: ServerConfig, store: ReturnType<typeof openStore>, stateDir: string) {
  if (!namesSecrets(server)) return;
  const problem = secretsProblem(server, storedPolicies(store), stateDir);
  if (problem) throw new UsageError(problem);
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
 * PORTCULLIS_RESPAWN_BACKOFF_MS (for tests): the first wait before a crashed server is respawned,
 * doubled at each crash up to 5 s; unset, the supervisor's own (200 ms). For a server reached by
 * URL, the first wait before a lost session's server is reached again, or an initialize a front
 * refused is sent again (RemoteSupervisor: the same 200 ms, doubled up to 5 s).
 */
function respawnBackoff(): { initialMs: number; maxMs: number } | undefined {
  const initialMs = envMs("PORTCULLIS_RESPAWN_BACKOFF_MS", 0);
  return initialMs > 0 ? { initialMs, maxMs: 5_000 } : undefined;
}

/**
 * The content-digest cache is shared by every state directory of the user: it maps
 * (path, size, mtime, inode) to a digest, which says nothing about any one gateway,
 * and sharing it keeps a new state directory from hashing node_modules cold.
 */
function digestCacheFile(): string {
  const base = process.env.PORTCULLIS_CACHE_DIR
    ? resolve(process.env.PORTCULLIS_CACHE_DIR)
    : join(xdgBase("XDG_CACHE_HOME", ".cache"), "portcullis");
  mkdirSync(base, { recursive: true, mode: 0o700 });
  // "digests.bin" and "digests.trees/": the layout with one listing file per tree (cache.ts);
  // builds that kept every tree in "digest-cache.bin" keep using that file undisturbed
  return join(base, "digests.bin");
}

/**
 * Serves until the client or a signal ends it. `configuredEnv`: the server's environment as
 * configured (credential placeholders are added here).
 */
export async function serve(
  server: ServerConfig,
  stateDir: string,
  configuredEnv: Record<string, string>,
  {
    holdTimeoutMs,
    approvalTimeoutMs,
    requestTtlMs,
    auditSync,
    decide,
    listen,
    early = null,
  }: {
    holdTimeoutMs?: number;
    approvalTimeoutMs?: number;
    requestTtlMs?: number;
    auditSync: "full" | "normal";
    decide?: GatewayOptions["decide"];
    listen?: ListenSettings | null;
    /** the server, spawned while this module loaded (src/cli/run.ts): the first launch's process */
    early?: EarlyStart | null;
  },
): Promise<number> {
  // Every value released to the server is scrubbed from all it says (src/vault/scrub.ts), and
  // from every line this process logs (the gateway's about messages, the supervisor's, the
  // identity capture's warnings, the remote link's, the egress proxy's) and every status line it
  // keeps in the store: they quote what a server can choose too, such as a file it named. A line
  // is read by people only, so any 8 characters or more of a value are taken out too: a line
  // quotes what the server wrote on stdout that was no message, where a careless server logs a
  // key's start with console.log.
  const releasedValues = new ReleasedValues();
  // the label names every line: a value sharing a word with it must not cut the line's name
  releasedValues.alsoShown(server.label);
  scrubEveryLine((text) =>
    releasedValues.size > 0 ? releasedValues.scrubPieces(releasedValues.scrubText(text)) : text,
  );
  const log = stderrLogger(server.label);
  // Refused before the store is opened: opening it creates portcullis.db, and a state directory
  // holding a store but no keyring reads, to every other command, as one init has set up.
  if (!keyringExists(stateDir)) throw noKeyring(stateDir);
  // the store and the keyring are never the server's code, whatever identity.include reaches
  setStateDir(stateDir);
  const store = openStore(stateDir);
  let audit: AuditLog;
  try {
    audit = AuditLog.open(store, stateDir, { sync: auditSync, onEdited: (sentence) => log.warn(sentence) });
  } catch (e) {
    store.close();
    if (e instanceof KeyringMissingError) throw noKeyring(stateDir);
    // damaged, unreadable, not a file: the message names keyring.json and what is wrong
    if (e instanceof KeyringError) throw new UsageError(`run: ${e.message}${keyringEnding(e)}`);
    throw e;
  }
  try {
    checkSecretsExist(server, store, stateDir);
  } catch (e) {
    store.close();
    throw e;
  }
  const gatewayId = ulid();
  const registry = new GatewayRegistry(store, gatewayId, server.label, log);
  const statusLog = {
    ...log,
    status: (line: string) => {
      log.status(line);
      registry.statusLine(line);
    },
  };
  const cache = new DigestCache(digestCacheFile());
  const env: Record<string, string> = { ...configuredEnv };
  // Credential variables hold placeholders in the environment the record digests; the values
  // of `deliver: "env"` scopes are added at each spawn, while the vault is unlocked.
  // and from the process's last words: an internal error, an uncaught exception (lastResort.ts)
  scrubAtLastResort(releasedValues);
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
      ? remote.remoteLink(
          server,
          server.remote,
          stateDir,
          spec.configDigest,
          linkLog,
          releasedValues,
          holdTimeoutMs,
          respawnBackoff(),
        )
      : new Supervisor({
          spec,
          cache,
          log: linkLog,
          // how often a swapped worker is looked for while idle (it is also checked before every
          // forwarded request); tests push it out to prove the forwarding-path check
          pollMs: envMs("PORTCULLIS_POLL_MS", 500),
          // how long the server is given after its stdin closes, and again after SIGTERM; tests
          // stretch it to show that a second signal does not wait for it
          shutdownGraceMs: envMs("PORTCULLIS_SHUTDOWN_GRACE_MS", 0) || undefined,
          // the wait before a crashed server's respawn, doubled at each crash (up to 5 s); tests
          // that drive a crash loop to its limit shorten it (five crashes wait 3 s by default)
          backoff: respawnBackoff(),
          maxMessageBytes: server.maxMessageBytes,
          spawnEnv: async () => {
            const given = await delivery.spawnEnv();
            return { env: { ...extraEnv(), ...given.env }, credentials: given.credentials };
          },
          stderrScrub: releasedValues,
          // report and restart are the edit-build loop: a broken build waits for the next one.
          // Not for an HTTP session of --listen: a paused session would keep its slot (up to
          // the idle timeout) and new clients would be refused; its gateway ends instead, the
          // slot is freed and the client's next session launches the server afresh.
          waitForChangeOnCrashLoop: !listen && server.onChange !== "disconnect",
          // the stdio client is this gateway's parent: its executables, digested with the server's
          // (an HTTP session's client is no process of ours)
          warmAtLaunch: listen ? undefined : () => chainExecutables(process.ppid),
          early,
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
  // Then their agent runs, which they never ended (run_ended, reason gateway_gone).
  try {
    const ended = endRunsOfGoneGateways(store, audit, `a gateway starting (pid ${process.pid})`);
    if (ended > 0) log.info(`audit: ended ${ended} agent run(s) of gateways that are gone`);
  } catch (e) {
    log.warn(`audit: could not end the agent runs of gone gateways: ${(e as Error).message}`);
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
    const shared = { server, stateDir, store, audit, events, log, makeLink, releasedValues, env };
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
      `the audit chain pins other approver keys after the first, by no rotation signed with the key current then (records ${seqs.join(", ")}): ignored`,
    ),
  );
  // the chain's first look for a missing record is made in steps once serving (trust.ts)
  const trust = verifier.trusted(false);
  const refusedAll = (why: string) => {
    // On stderr and in `portcullis status`: every grant and decision will be refused.
    log.warn(`no grant will be honoured: ${why}`);
    registry.statusLine(`approvals refused: ${why}`);
  };
  if (!trust.ok && trust.mismatch) refusedAll(trust.why);
  else verifier.lookForMissingRecord(refusedAll);
  // what the server process was started without (trackEpochs keeps it; the vault check reads it)
  const spawned: SpawnedCredentials = { withheld: [] };
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
    spawned,
  };
  const beginRun = () => {
    // the stdio client is the process that started this gateway (its parent)
    const begun = beginAgentRun(runSettings, gatewayId, statusLog, {}, () => ({
      record: supervisor.current?.record ?? null,
      reason: supervisor.current?.reason ?? null,
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
  let storeEnding: StoreEnding | null = null;
  // Nothing waits for another process's lock on the store until the server is ended (each
  // wait holds the event loop, the server's stop timers with it); what meets the lock is kept,
  // and gets one bounded attempt after (src/store/ending.ts). From the shutdown's start; and
  // from the client's end of input, writes wait for the lock only briefly (DRAIN_BUSY_MS): the
  // answers still awaited are written as they come, and one that met a held lock would hold
  // the loop a busy timeout each, the shutdown behind; another gateway's commit is still waited out.
  const storeEnds = (waitMs: number): StoreEnding => {
    if (storeEnding === null) {
      storeEnding = beginStoreEnding(store, waitMs);
      events.holdOnBusy();
      registry.ending();
    }
    if (waitMs === 0) storeEnding.stopWaiting();
    return storeEnding;
  };
  const shutdown = async (code: number, signalled = false) => {
    if (ending) return;
    ending = true;
    const storeEnd = storeEnds(0);
    // No new request is read, but the client's output stays open while the server winds down:
    // what it answers in its grace reaches the client (and the audit as the call's result).
    downstream.stopReading();
    // Ended by a signal, the client never stopped asking: a call waiting for a human (or held)
    // gets its refusal now, as when the client closes its input, not a closed output.
    if (signalled) await gateway?.answerWaiting();
    await supervisor.shutdown();
    // a listen the server did not end in its grace is ended for it, not left unanswered
    gateway?.endListens();
    downstream.close();
    // The one wait for the lock, at most the busy timeout (a second signal cuts it short); if it
    // does not come, nothing more waits. Not on a store whose files were lost (nothing is written).
    if (!audit.checkStoreFiles({ now: true })) await storeEnd.lastAttempt();
    await egress?.close();
    clearInterval(storeWatch);
    // Once one of the store's files was lost, nothing more is written (it would go into the
    // orphaned log) and the store is left open (src/store/storeWatch.ts).
    if (!audit.checkStoreFiles({ now: true })) {
      if (run) endAgentRun(store, events, run, server.label, log, { busyUnsaid: true });
      events.flush();
      const rowEnded = registry.end();
      unrecordedAtEnd(store, log, events.unwritten(), rowEnded);
    }
    // what the full disk (or another refusal of a write) kept from the audit since last said
    events.sayUnwrittenCounts();
    finish(closeStoreUnlessLost(store, audit) ? code : EXIT_USAGE);
  };

  let gateway: Gateway | null = null;
  const downstream = stdioDownstream(
    {
      line: (t) => gateway?.onClientLine(t),
      oversize: (n, id, hasMethod) => gateway?.onClientOversize(n, id, hasMethod),
      // a client that ends its input still gets the answers it asked for (bounded wait)
      end: (why) => {
        if (why !== "input-closed" || !gateway) return void shutdown(0);
        storeEnds(DRAIN_BUSY_MS);
        void gateway.finishInFlight(holdTimeoutMs ?? 15_000).then(() => shutdown(0));
      },
      // a client that reads slower than the server talks: the server waits, not our memory
      flow: (reading) => supervisor.setReading?.(reading),
    },
    server.maxMessageBytes,
  );
  gateway = new Gateway({
    supervisor,
    store,
    log: statusLog,
    downstream,
    events,
    beginRun,
    holdTimeoutMs,
    consolePage,
    decide,
    released: releasedValues,
    ...runGatewayOptions(server, supervisor, registry),
    onEnd: (_reason, code) => void shutdown(code),
  });
  const heartbeat = trackEpochs(supervisor, {
    label: server.label,
    stateDir,
    spawned,
    mismatch: (scope) => credentialMismatch(server, store, scope, stateDir),
    events,
    log: statusLog,
    registry,
    egress: () => egress,
    gateway,
  });
  // a file of the store (database, -wal, -shm) deleted or replaced under this gateway ends it, as a signal would (its
  // calls waiting for a human are refused at once; none can be recorded any more)
  const storeWatch = watchStoreFiles(store, log, () => void shutdown(EXIT_USAGE, true));
  // a signal begins the shutdown; one that comes while it is under way (however it began)
  // cuts the server's grace short instead of killing the gateway halfway through it. Listened to
  // before the early start's guard lets go: node stops listening to a signal when its last
  // listener goes, and a signal that came while the event loop was held (SQLite waiting out
  // another process's lock as the store was opened) and not yet dispatched was then lost, the
  // gateway serving on and its server respawned.
  onShutdownSignals(() => {
    if (!ending) return void shutdown(0, true);
    supervisor.hurry();
    // nor does the gateway wait any longer for another process's lock on the store
    storeEnding?.cut();
  });
  early?.unguard();

  try {
    await supervisor.start();
  } catch (e) {
    // the client left (or a signal came) while the server was being started: the launch was
    // given up for the shutdown under way, which ends the gateway with its own code (a launch
    // that failed on its own is still reported, client gone or not)
    if (ending && e instanceof LaunchError && e.abandoned) {
      clearInterval(heartbeat);
      return await done;
    }
    if (e instanceof LaunchError) {
      clearInterval(heartbeat);
      // A shutdown under way (the client left, a signal) ends the run and closes the store: only
      // the launch's own failure is left to report, once it is done.
      if (ending) {
        await done;
        throw new UsageError(`run: ${e.message}`);
      }
      // Nothing will serve the client: stop reading it, so the process ends with the error and
      // the host sees it at once, not after its own timeout; a later input close or signal finds
      // the gateway ending and does nothing.
      ending = true;
      downstream.close();
      await egress?.close();
      // (begun by the client's initialize while the launch was under way, if it came)
      const begun = run as Run | null;
      clearInterval(storeWatch);
      if (!audit.checkStoreFiles({ now: true })) {
        if (begun) endAgentRun(store, events, begun, server.label, log);
        events.flush();
        registry.end();
      }
      closeStoreUnlessLost(store, audit);
      throw new UsageError(`run: ${e.message}`);
    }
    throw e;
  }
  const code = await done;
  clearInterval(heartbeat);
  return code;
}

export function noKeyring(stateDir: string): UsageError {
  return new UsageError(
    // the command names the directory unless it is the default: a host's entry often gives
    // --state-dir, and a bare init in the human's terminal would set up another one
    // (last, in no quotes of the sentence's own: a directory that needs quoting pastes whole)
    `run: no keyring in ${stateDir}; set it up first (it asks for a passphrase once) with: portcullis init${stateDirFlagFor(stateDir)}`,
  );
}
