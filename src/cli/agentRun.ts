import type { HiddenValue } from "../approval/chain.js";
import {
  Authorizer,
  type AuthorizerOptions,
  type DecisionVerifier,
  ENDED_IN_STORE,
  endOwnRunRows,
  endRun,
  insertRun,
  newRun,
  type Run,
  recordEndedInStore,
  runEndedElsewhere,
  runStored,
} from "../approval/index.js";
import { closeRequest, expiredEvent, pendingRequestsOfRun } from "../approval/requests.js";
import { safeText } from "../catalog/text.js";
import type { ServerConfig } from "../config/config.js";
import type { EventSink } from "../gateway/events.js";
import type { Gateway, GatewayOptions } from "../gateway/gateway.js";
import type { GatewayRegistry } from "../gateway/registry.js";
import { reportNextStep } from "../gateway/reportNext.js";
import type { DigestCache } from "../identity/index.js";
import { isBusy, type Store, writeProblem } from "../store/db.js";
import { stateDirFlagFor } from "../store/stateDir.js";
import { IDLE_CHECK_MS } from "../store/storeWatch.js";
import type { ServerLink } from "../supervisor/link.js";
import type { Logger } from "../util/log.js";
import type { SpawnCredentials, Withheld } from "../vault/delivery.js";
import type { DeliveryMismatch } from "../vault/deliveryMismatch.js";
import type { ServerEgress } from "../vault/egress/forServer.js";
import { holderVault } from "../vault/port.js";
import { scopesForTool } from "../vault/toolScopes.js";
import { credentialMismatch } from "./credentialMismatch.js";
import { reportSpawnCredentials } from "./spawnCredentials.js";

/** What every agent run of one `portcullis run` shares, over stdio or per HTTP session. */
export interface AgentRunSettings {
  server: ServerConfig;
  stateDir: string;
  store: Store;
  events: EventSink;
  verifier: DecisionVerifier;
  approvalTimeoutMs?: number;
  requestTtlMs?: number;
  consolePage?: (request: string) => string | null;
  onRequest?: (request: string) => void;
  /** the gateway's content-digest cache: the client's executables are often digested there */
  digestCache?: DigestCache;
  /**
   * What this connection's server process got at spawn (trackEpochs keeps it): a call that needs
   * an environment credential it was started without is refused (src/vault/port.ts)
   */
  spawned?: SpawnedCredentials;
}

/** The environment credentials the current server process of one connection was started without. */
export interface SpawnedCredentials {
  withheld: readonly Withheld[];
  /** the SHA-256 of each environment value it was started with, by scope (SpawnCredentials.digests) */
  given?: Readonly<Record<string, string>>;
}

/**
 * Starts an agent run (its process chain recorded, `run_started` in the audit) and the
 * authorizer that decides its calls. One place, so a stdio client and an HTTP session get the
 * same approval behaviour.
 */
export function beginAgentRun(
  s: AgentRunSettings,
  gatewayId: string,
  log: Logger,
  client: {
    fromPid?: number;
    /** the start time `fromPid` had when it was identified: a chain starting elsewhere is not taken */
    fromStart?: string | null;
    chain?: Run["chain"];
    hide?: readonly HiddenValue[];
  },
  context: AuthorizerOptions["context"],
): { run: Run; auth: Authorizer } {
  const { server, store, events } = s;
  const run = newRun(store, server.label, { ...client, digestCache: s.digestCache });
  // Stored as run_started's condition (under the audit's write lock, in the transaction that
  // writes it), written at once: stored first and recorded with the sink's next group, a run (and
  // the process chain that launched the gateway) stayed in the store unrecorded when that group
  // could not be written (another process holding the lock past the busy timeout) or the gateway
  // was killed meanwhile. Not written (the sink said why): no run, and the request that began it
  // is refused; the next one tries again (Gateway.beginRun).
  let refused: unknown = null;
  events.emit(
    {
      type: "run_started",
      run: run.run,
      serverLabel: server.label,
      gateway: gatewayId,
      chainDigest: run.chainDigest,
      agent: run.chain,
    },
    (seq) => {
      try {
        // the start's seq with the row: the Audit page opens that record for a run served now
        insertRun(store, run, seq);
      } catch (e) {
        refused = e;
        throw e;
      }
      return true;
    },
  );
  events.flush();
  // the store's own words when it refused the row (a trigger, a constraint, a full disk)
  if (!runStored(store, run.run))
    throw refused instanceof Error ? refused : new Error("its start could not be written to the audit log");
  const auth = new Authorizer({
    db: store,
    run,
    serverLabel: server.label,
    approval: server.approval,
    credentials: server.credentials,
    tools: server.tools,
    vault: holderVault(
      s.stateDir,
      server.credentialSpecs,
      (scope) => credentialMismatch(server, store, scope, s.stateDir),
      () => s.spawned?.withheld ?? [],
      server.remote ? urlAuthority(server.remote.url) : undefined,
      () => s.spawned?.given ?? {},
    ),
    timeoutMs: s.approvalTimeoutMs,
    requestTtlMs: s.requestTtlMs,
    consolePage: s.consolePage,
    stateDirFlag: stateDirFlagFor(s.stateDir),
    onRequest: s.onRequest,
    log,
    events,
    verifier: s.verifier,
    context,
  });
  return { run, auth };
}

/**
 * Ends the agent run in the store as the gateway (or an HTTP session) ends. Best effort: a store
 * another process keeps locked must not turn a clean end into a crash with a stack trace; the run
 * left open is closed by whoever next lists the requests, its gateway being gone
 * (src/approval/abandoned.ts).
 */
function endRunQuietly(store: Store, run: Run, log: Pick<Logger, "warn">, busyUnsaid: boolean): void {
  try {
    endRun(store, run);
  } catch (e) {
    if (!(busyUnsaid && isBusy(e)))
      log.warn(`could not record the end of agent run ${run.run} in the store: ${writeProblem(e)}`);
  }
}

/**
 * The end of an agent run as its gateway (or HTTP session) ends, in the store and the audit. The
 * approval requests still pending close with the run (`cancelled`, "agent run ended"), each
 * recorded as `approval_expired` with that reason: the request of a call whose wait the
 * connection's end cut short, or one no call waited on any more. Each close is the record's
 * condition, under the audit's write lock, so a request that a lister closed meanwhile, or a human
 * decided, is recorded by that process alone. They are written before the run's end, whose
 * record `run_ended` has the end for its condition likewise (a run another process ended
 * meanwhile is not recorded twice); when it cannot be written the run ends all the same, which
 * cancels whatever is left (a store or audit that could not be written).
 */
export function endAgentRun(
  store: Store,
  events: EventSink,
  run: Run,
  serverLabel: string,
  log: Pick<Logger, "warn">,
  /**
   * the gateway ends and says itself what another process's lock on the store kept from being
   * written (src/store/ending.ts): its run_ended, kept by the audit sink, ends the run's rows
   * when it is written
   */
  o: { busyUnsaid?: boolean } = {},
): void {
  try {
    for (const req of pendingRequestsOfRun(store, run.run)) {
      events.emit(expiredEvent(req, RUN_ENDED, `the gateway of its run (pid ${process.pid})`), () =>
        closeRequest(store, req.request, "cancelled", RUN_ENDED),
      );
    }
    events.flush();
  } catch (e) {
    log.warn(`could not record the end of agent run ${run.run}'s approval requests: ${writeProblem(e)}`);
  }
  // The run ends as run_ended's condition (under the audit's write lock, in the transaction that
  // writes it), written at once: ended first and recorded with the sink's next group, it stayed
  // ended unrecorded when that group could not be written (another process holding the lock past
  // the busy timeout); and one another process ended meanwhile (its gateway judged gone, recorded
  // there) was recorded a second time.
  const now = new Date().toISOString();
  let endedElsewhere = false;
  events.emit({ type: "run_ended", run: run.run, serverLabel }, () => {
    const ended = endOwnRunRows(store, run, now);
    endedElsewhere = !ended;
    if (ended) run.endRecordedHere = true;
    return ended;
  });
  events.flush();
  if (endedElsewhere) recordEndedElsewhere(store, events, run, serverLabel, log);
  // Not recorded (the sink said why): ended all the same, its session grants with it (deny first)
  endRunQuietly(store, run, log, o.busyUnsaid ?? false);
}

/**
 * The run's row was ended by another process before this gateway, which still served it, could
 * end it: by a gateway that took this one for gone (reason gateway_gone: the store's rows of this
 * gateway edited, docs/security.md), which recorded it; or by an edit of the row itself, which
 * nobody recorded (with any reason, gateway_gone included: the gateway cannot read the sealed
 * chain to tell). Unless this process wrote the run's `run_ended` itself (Run.endRecordedHere: a
 * call noticed the edit, src/approval/runEndWatch.ts), it writes one now (`run_ended`, reason
 * ended_in_store; `rowReason`: the row's reason when it was one a recording writer gives), so that
 * the run never stays without an end in the audit. Said, as the run's calls recorded after that
 * end show it in the audit.
 */
function recordEndedElsewhere(
  store: Store,
  events: EventSink,
  run: Run,
  serverLabel: string,
  log: Pick<Logger, "warn">,
): void {
  try {
    const ended = runEndedElsewhere(store, run);
    if (ended === null) return;
    let recordedNow = false;
    if (!run.endRecordedHere) {
      const rowReason = ended.recorded ? { rowReason: ended.reason } : {};
      events.emit(
        { type: "run_ended", run: run.run, serverLabel, reason: ENDED_IN_STORE, ...rowReason },
        () => {
          recordedNow = recordEndedInStore(store, run, new Date().toISOString(), {
            whateverTheRowSays: true,
          });
          return recordedNow;
        },
      );
      events.flush();
    }
    const by = `by another process (${ended.recorded ? `reason ${safeText(ended.reason ?? "none")} in its row` : "which recorded no end"})`;
    log.warn(
      recordedNow
        ? `agent run ${run.run} had been ended ${by} while this gateway still served it: this gateway, which had written no end of it, recorded its end now (run_ended, reason ${ENDED_IN_STORE})${ended.recorded ? "; it cannot read the audit to tell whether that process recorded one too" : ""}`
        : `agent run ${run.run} had already been ended ${by} while this gateway still served it: ${run.endRecordedHere ? "this gateway had recorded that end" : "its end could not be recorded"}; records of the run after that end were written by this gateway`,
    );
  } catch {
    // the store cannot be read now: nothing more to say than the sink said
  }
}

/** `host:port` of a URL, the port as the scheme implies when not written (as the vault's hosts are). */
function urlAuthority(url: string): string {
  const u = new URL(url);
  return `${u.hostname}:${u.port || (u.protocol === "https:" ? "443" : "80")}`;
}

/** Why a request still pending at its run's end is closed (the reason endRun gives it too). */
const RUN_ENDED = "agent run ended";

/**
 * What a stdio gateway and each HTTP session wire the same way: what the server's configuration
 * says (label, onChange, onExpand, what the audit keeps of arguments), the credential scopes each tool
 * uses (the one decision, src/vault/toolScopes.ts), for the guard and for what the egress proxy
 * may release while a call runs (that tool's own scopes), and the status rows kept current with
 * the epoch's record (once settled, it names the processes that answered).
 */
export function runGatewayOptions(
  server: ServerConfig,
  link: ServerLink,
  registry: GatewayRegistry,
): Pick<
  GatewayOptions,
  "label" | "onChange" | "reportNext" | "onExpand" | "auditArguments" | "scopesFor" | "callScopes" | "onState"
> {
  return {
    label: server.label,
    onChange: server.onChange,
    reportNext: reportNextStep(server.configFile, server.label),
    onExpand: server.onExpand ?? "run",
    auditArguments: server.audit.arguments,
    scopesFor: (tool) => scopesForTool(server.credentials, server.tools, tool),
    callScopes: (call) => scopesForTool(server.credentials, server.tools, call.tool),
    onState: (state) => {
      const gen = link.current;
      if (gen) registry.recordEpoch(gen.record, gen.reason, { state, record: gen.record });
      else registry.update({ state, record: null });
    },
  };
}

/** A link whose processes take nothing from the vault at spawn (a server reached by URL). */
const NOTHING_GIVEN: SpawnCredentials = { released: [], withheld: [] };

/**
 * What a stdio gateway and each HTTP session keep in step with the server's epochs: the
 * credentials each spawn was given (recorded), the status rows (and a heartbeat every 5 s), and
 * the egress record, which files what the server sent out before an epoch was recorded under
 * that epoch (src/vault/egress/record.ts). Returns the heartbeat, to clear when the gateway ends.
 */
export function trackEpochs(
  link: ServerLink,
  o: {
    label: string;
    /** the state directory, named in the commands the status lines give when it is not the default */
    stateDir?: string;
    /** kept up to date with what each new server process was started without */
    spawned?: SpawnedCredentials;
    /** a withheld credential's disagreement with the vault's stored policy, for the status line */
    mismatch?: (scope: string) => DeliveryMismatch | null;
    events: EventSink;
    log: Logger;
    registry: GatewayRegistry;
    egress: () => ServerEgress | null;
    /**
     * The gateway the rows are of, made before this is called: its listeners on `link` (added in
     * its constructor) run before the ones added here, so it has switched to a new epoch
     * (Gateway.onUp) before the row names that epoch, and the row says `ready` only as the gateway
     * reports it (onState, once the epoch's catalog is served). A host that reads `ready` at a new
     * epoch and then calls is decided under that epoch (`authorization_stale` for a grant of an
     * older one), never under the epoch before. Taken as the gateway itself, not a getter of a
     * gateway made later, so that no caller can add these listeners first.
     */
    gateway: Pick<Gateway, "status">;
  },
): NodeJS.Timeout {
  // a server reached by URL that cannot be reached: the state says so, and a line says why once
  // per reason (each attempt to reach it again tells it again)
  let unreachableSaid: string | null = null;
  link.on("up", (gen) => {
    unreachableSaid = null;
    // what this epoch's process was spawned with, carried by its generation (a process's new code
    // under the same process, `replaced`, keeps the environment of that spawn)
    const given = gen.spawnCredentials ?? NOTHING_GIVEN;
    if (o.spawned) {
      o.spawned.withheld = given.withheld;
      o.spawned.given = given.digests ?? {};
    }
    reportSpawnCredentials(given, o.events, o.log, o.label, gen.epoch, o.mismatch, o.stateDir);
    o.registry.recordEpoch(gen.record, gen.reason, {
      state: "identity-pending",
      epoch: gen.epoch,
      record: gen.record,
    });
    o.egress()?.epochStarted(gen.epoch);
  });
  link.on("down", () => o.registry.update({ state: "identity-pending" }));
  link.on("unreachable", () => {
    const why = link.unreachable ?? null;
    if (why !== null && why !== unreachableSaid) o.registry.statusLine(`unreachable: ${why}`);
    unreachableSaid = why;
    o.registry.update({ state: o.gateway.status().state });
  });
  // a crash loop under the artifact watcher: no server until its files change (the next `up`
  // sets identity-pending again)
  link.on("paused", (why) => o.registry.paused(why));
  const heartbeat = setInterval(() => o.registry.update({ state: o.gateway.status().state }), IDLE_CHECK_MS);
  heartbeat.unref();
  return heartbeat;
}

/**
 * What a gateway's end could not write, the store's lock held by another process past its last
 * attempt (src/store/ending.ts), said in one sentence: the records are lost as a crash loses them,
 * and the next gateway's start closes what they leave open (its calls `gateway_gone`, its agent
 * run with its pending approval requests); `status` shows the gateway gone once its process is.
 */
export function unrecordedAtEnd(
  store: Store,
  log: Pick<Logger, "warn">,
  unwritten: string[],
  rowEnded: boolean,
): void {
  if (unwritten.length === 0 && rowEnded) return;
  const parts: string[] = [];
  if (unwritten.length > 0) {
    const types = [...new Set(unwritten)].join(", ");
    parts.push(`${unwritten.length} audit record${unwritten.length === 1 ? "" : "s"} (${types})`);
  }
  if (!rowEnded) parts.push("the end in its status row");
  log.warn(
    `the store ${store.name} stayed locked by another process, so this gateway's end was not recorded (${parts.join("; ")}): the next 'portcullis run' on this state directory closes the calls and the agent run it left open (gateway_gone), as after a crash`,
  );
}
