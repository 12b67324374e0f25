import { ulid } from "ulid";
import { unknownClientChain } from "../approval/chain.js";
import { DecisionVerifier, processStartTime, type Run } from "../approval/index.js";
import type { AuditLog } from "../audit/index.js";
import { safeText } from "../catalog/text.js";
import type { ServerConfig } from "../config/config.js";
import type { AuditSink } from "../gateway/auditSink.js";
import { Gateway, type GatewayOptions } from "../gateway/gateway.js";
import { GatewayRegistry } from "../gateway/registry.js";
import { type TcpEnd, tcpPeerSocket, tcpPeerStillHeldBy } from "../identity/proc.js";
import { briefly, busyTimeoutMs, lockFreeSoon, type Store } from "../store/db.js";
import { beginStoreEnding, type StoreEnding } from "../store/ending.js";
import { quotedCommand } from "../store/stateDir.js";
import { closeStoreUnlessLost, IDLE_CHECK_MS, watchStoreFiles } from "../store/storeWatch.js";
import type { ServerLink } from "../supervisor/link.js";
import { LaunchError } from "../supervisor/supervisor.js";
import { HttpFront, type Peer } from "../transport/http.js";
import {
  type ListenAddress,
  listenFlagWithoutListen,
  listeningUrl,
  loadToken,
  parseListenAddress,
  TokenFileError,
  tokenFileWithoutListen,
} from "../transport/httpAccess.js";
import { clearListenInfo, writeListenInfo } from "../transport/httpInfo.js";
import type { HttpSession, SessionHooks } from "../transport/httpSession.js";
import { listenProblem } from "../util/errno.js";
import type { Logger } from "../util/log.js";
import { type ServerEgress, startServerEgress } from "../vault/egress/forServer.js";
import type { ReleasedValues } from "../vault/scrub.js";
import {
  beginAgentRun,
  endAgentRun,
  runGatewayOptions,
  type SpawnedCredentials,
  trackEpochs,
  unrecordedAtEnd,
} from "./agentRun.js";
import { wholeNumber } from "./args.js";
import { credentialMismatch } from "./credentialMismatch.js";
import { EXIT_USAGE, UsageError } from "./errors.js";
import { onShutdownSignals } from "./signals.js";

export interface ListenSettings {
  address: ListenAddress;
  token: string | null;
  tokenPath: string | null;
  maxSessions: number;
  idleTimeoutMs: number;
  /** the configuration's listenTokenFile that --no-auth set aside (said in the listening line) */
  setAside?: string;
}

/** What every session of one `run --listen` shares: one store, one audit log, one verifier. */
export interface ListenShared {
  server: ServerConfig;
  stateDir: string;
  store: Store;
  audit: AuditLog;
  events: AuditSink;
  log: Logger;
  /**
   * A new link to the server for one session: a supervised process, or a remote session.
   * `extraEnv` is that session's egress proxy environment, added at each spawn.
   */
  makeLink: (log: Logger, extraEnv: () => Record<string, string>) => ServerLink;
  /** the environment every session's server starts from (the user's, the config's, placeholders) */
  env: Record<string, string>;
  /** values released to the servers of every session: scrubbed from all they say */
  releasedValues: ReleasedValues;
  holdTimeoutMs?: number;
  approvalTimeoutMs?: number;
  requestTtlMs?: number;
  consolePage?: (request: string) => string | null;
  /** a new approval request was stored (the console is started on demand) */
  onRequest?: (request: string) => void;
  decide?: GatewayOptions["decide"];
}

/**
 * `run --listen`: the HTTP front, and for each session its own gateway, supervised server, agent
 * run and egress proxy when the server needs one (a stdio server speaks to one client; sessions
 * never share a process, so one client's approvals, epochs and credential releases are never
 * another's). Resolves when the front is closed.
 */
export async function serveListen(
  shared: ListenShared,
  settings: ListenSettings,
  ending: FrontEnding = { on: false, rows: [] },
): Promise<{ port: number; close: () => Promise<void>; hurry: () => void }> {
  const { server, store, log } = shared;
  // every session's link while it lives: a second signal hurries their shutdowns
  const links = new Set<ServerLink>();
  const verifier = new DecisionVerifier(store, shared.stateDir, (seqs) =>
    log.warn(
      `the audit chain pins other approver keys after the first, by no rotation signed with the key current then (records ${seqs.join(", ")}): ignored`,
    ),
  );
  // the chain's first look for a missing record is made in steps once serving (trust.ts)
  const trust = verifier.trusted(false);
  const refusedAll = (why: string) => log.warn(`no grant will be honoured: ${why}`);
  if (!trust.ok && trust.mismatch) refusedAll(trust.why);
  else verifier.lookForMissingRecord(refusedAll);

  const front = new HttpFront({
    address: settings.address,
    token: settings.token,
    tokenCommand: quotedCommand("status", shared.stateDir),
    maxMessageBytes: server.maxMessageBytes ?? 64 * 1024 * 1024,
    maxSessions: settings.maxSessions,
    idleTimeoutMs: settings.idleTimeoutMs,
    log,
    findPeer: (ours, theirs) => findPeer(ours, theirs, log),
    processKey: (peer) =>
      peer.pid !== null && peer.startTime !== null ? `${peer.pid}-${peer.startTime}` : null,
    open: (session, peer) => openSession(shared, verifier, session, peer, links, ending, settings.token),
  });
  const port = await front.listen();
  return {
    port,
    // each session's end answers its gateway's waiting calls first (SessionHooks.answerWaiting)
    close: () => front.close(),
    hurry: () => {
      for (const link of links) link.hurry();
    },
  };
}

/**
 * How long to wait before each new look at a socket several processes hold (ms): five looks over
 * about 200 ms. A client that spawns a process as it connects shares its sockets with the child
 * between fork and exec (Node's are close-on-exec): taken once, that moment would leave the
 * connection unidentified for its whole life.
 */
const LOOK_AGAIN_MS = [10, 20, 50, 120];

/** Why the connection is over when one HTTP session ends (what its held requests are told). */
const SESSION_ENDS =
  "the HTTP session ended (the client deleted it, or it was idle past the timeout): nothing more is sent to the server for it";
/** Why it is over when its server (or the egress proxy before it) could not be started. */
const NO_SERVER =
  "the HTTP session ended: its server could not be started (the gateway's log says why): nothing was sent to the server";

/**
 * The process behind a connection from this machine (Linux): the one process holding the other
 * end of the socket, with its start time. A socket several processes hold is looked at again a
 * few times (LOOK_AGAIN_MS, without holding the event loop): when all but one holder are gone,
 * that one is the client; one of several is never picked. The pid found is read again with its
 * start time: a process that held the socket, and still does once its start time is read, with
 * that start time unchanged after it, is the one named (not another that reused its pid meanwhile).
 */
async function findPeer(ours: TcpEnd, theirs: TcpEnd, log: Logger): Promise<Peer> {
  const remoteAddress = theirs.address;
  const unidentified = (why: string): Peer => ({ pid: null, startTime: null, why, remoteAddress });
  if (process.platform !== "linux")
    return unidentified(`the connecting process is not looked up on ${process.platform}`);
  let found = tcpPeerSocket(ours, theirs);
  for (const wait of LOOK_AGAIN_MS) {
    if (found === null || found.holders.length < 2) break;
    log.debug(
      `http: the connecting socket is held by several processes (pids ${pidList(found.holders)}): looking again in ${wait} ms`,
    );
    await new Promise((resolve) => setTimeout(resolve, wait));
    found = tcpPeerSocket(ours, theirs);
  }
  if (found?.holders.length !== 1) return unidentified(unidentifiedBecause(found?.holders ?? null));
  const pid = found.holders[0]!;
  // the front is never its own client: a connection it holds both ends of was relayed by it
  // (a CONNECT tunnel through a session's egress proxy), and taken for this process every such
  // connection, whoever opened it, would share one session and its grants
  if (pid === process.pid)
    return unidentified(
      "the connecting socket is held by this gateway's own process (a tunnel through its egress proxy), not by a client",
    );
  const startTime = processStartTime(pid);
  if (startTime === null || !tcpPeerStillHeldBy(found, pid) || processStartTime(pid) !== startTime)
    return unidentified(
      `the connecting process (pid ${pid}) ended or changed as it was read, so none is taken for the client`,
    );
  return { pid, startTime, why: null, remoteAddress };
}

/**
 * Why the process behind a socket is not identified, from the processes that hold it (null: the
 * socket itself was not found): a socket several processes hold (a forked child keeps its
 * parent's) has no one process to take for the client.
 */
function unidentifiedBecause(holders: number[] | null): string {
  if (holders !== null && holders.length > 1)
    return `the connecting socket is held by several processes (pids ${pidList(holders)}), so none is taken for the client`;
  return "the connecting process was not found from its socket (another user's, or already gone)";
}

function pidList(pids: number[]): string {
  return [...pids].sort((a, b) => a - b).join(", ");
}

/**
 * The front's end under way (a signal, its store's files lost): the sessions' last writes meet
 * another process's lock without waiting for it (src/store/ending.ts), and the status rows whose
 * end could not be written so are tried again after the front's one wait for the lock.
 */
interface FrontEnding {
  on: boolean;
  rows: GatewayRegistry[];
}

function openSession(
  shared: ListenShared,
  verifier: DecisionVerifier,
  session: HttpSession,
  peer: Peer,
  links: Set<ServerLink>,
  frontEnding: FrontEnding,
  /** the front's bearer token: a client that has it on its command line is not recorded with it */
  token: string | null,
): SessionHooks {
  const { server, store, events, log } = shared;
  const gatewayId = ulid();
  const registry = new GatewayRegistry(store, gatewayId, server.label, log);
  const statusLog: Logger = {
    ...log,
    status: (line: string) => {
      log.status(line);
      registry.statusLine(line);
    },
  };
  statusLog.status(
    `http session ${session.id.slice(0, 8)}… (${session.era}) from ${peer.pid !== null ? `pid ${peer.pid}` : peer.why}`,
  );
  // This session's egress proxy, when the server needs one: started before its server, closed
  // after it. One proxy per session rather than one shared by all: the release window is a
  // closure over this session's gateway (its epoch, its calls in flight, its run's grants), so
  // there is nothing to tell apart and nothing a server sends is ever read to decide whose
  // window a request falls in. A shared proxy would need a per-session secret in each server's
  // proxy URL, which runtimes pass on unevenly (a client that drops it would need a refusal
  // path of its own). The cost is a loopback port, a holder connection and a cache of TLS leaves
  // per session, bounded by --listen-max-sessions; the port closes when the session ends.
  let egress: ServerEgress | null = null;
  let ending = false;
  const supervisor = shared.makeLink(statusLog, () => egress?.env ?? {});
  links.add(supervisor);

  let run: Run | null = null;
  // what this session's server process was started without (trackEpochs keeps it)
  const spawned: SpawnedCredentials = { withheld: [] };
  let gateway: Gateway | null = null;
  const beginRun = () => {
    // The client's process chain is recorded with its command lines (the review's "who asks"): a
    // client given this front's token as a plain argument would put it into every review, the
    // store and `approvals --verbose`; the gateway knows the value, so it is taken out.
    const client =
      peer.pid !== null
        ? {
            fromPid: peer.pid,
            fromStart: peer.startTime,
            hide: token !== null ? [{ value: token, as: "(the-listen-token)" }] : [],
          }
        : { chain: unknownClientChain(peer.why ?? "unknown client") };
    const begun = beginAgentRun({ ...shared, verifier, spawned }, gatewayId, statusLog, client, () => ({
      record: supervisor.current?.record ?? null,
      reason: supervisor.current?.reason ?? null,
      revision: gateway?.status().revision ?? 0,
    }));
    run = begun.run;
    return { runId: begun.run.run, auth: begun.auth };
  };
  gateway = new Gateway({
    supervisor,
    store,
    log: statusLog,
    downstream: session,
    events,
    beginRun,
    holdTimeoutMs: shared.holdTimeoutMs,
    consolePage: shared.consolePage,
    decide: shared.decide,
    released: shared.releasedValues,
    ...runGatewayOptions(server, supervisor, registry),
    onEnd: () => void session.end(),
  });
  const heartbeat = trackEpochs(supervisor, {
    label: server.label,
    stateDir: shared.stateDir,
    spawned,
    mismatch: (scope) => credentialMismatch(server, store, scope, shared.stateDir),
    events,
    log: statusLog,
    registry,
    egress: () => egress,
    gateway,
  });
  const proxied = startServerEgress({
    server,
    stateDir: shared.stateDir,
    gatewayId,
    env: shared.env,
    store,
    events,
    log: statusLog,
    released: shared.releasedValues,
    calls: () => (gateway ? gateway.callsInFlight() : { epoch: null, inFlight: [] }),
  });
  // why the session ends when it is not the client's doing nor the front's close
  let endWhy: string | null = null;
  proxied
    .then((started) => {
      egress = started;
      // a session ended while its proxy was starting: no server for it
      if (!ending) return supervisor.start();
    })
    .catch((e) => {
      statusLog.warn(
        e instanceof LaunchError ? `could not start the server: ${e.message}` : (e as Error).message,
      );
      endWhy = NO_SERVER;
      void session.end();
    });
  let closed: Promise<void> | null = null;
  return {
    deliver: (text, idText, written) => gateway?.onClientLine(text, idText, written),
    // The client never stopped asking (it deleted the session, went idle, or the front closes): a
    // call waiting for a human, or a request held, gets its own refusal, recorded, as on stdio at a
    // signal, before the session answers the rest session_ended and its run ends.
    answerWaiting: () =>
      gateway?.answerWaiting(frontEnding.on ? undefined : (endWhy ?? SESSION_ENDS)) ?? Promise.resolve(),
    // its listens end as a server ends them at its shutdown (as on stdio), not session_ended
    endListens: () => gateway?.endListens(),
    answerRefused: (id, problem) => gateway?.onClientAnswerRefused(id, problem),
    // this session's client is behind: its own server is left unread, no other session's
    flow: (reading) => supervisor.setReading?.(reading),
    close: () => {
      ending = true;
      closed ??= (async () => {
        clearInterval(heartbeat);
        if (frontEnding.on) registry.ending();
        await supervisor.shutdown();
        // Other sessions go on serving while this one ends. Its last writes (the egress index,
        // its requests' and its run's end, what the audit sink still holds) are synchronous: one
        // that met another program's lock held the event loop, every other session with it, a
        // whole busy timeout. The lock is waited for first without holding the loop, then each
        // write waits BRIEF_WAIT_MS at most: what a lock held past the busy timeout keeps from
        // being written is left as a crash leaves it (the run is closed once this gateway is
        // gone). While the front ends nothing waits at all (src/store/ending.ts).
        // A decision the end's bounded wait left under way (its writes stalled by that lock)
        // returns once the lock is given back: waited for (bounded), so that its records come
        // before the run's end, never after it. Not while the front ends: its writes meet a held
        // lock without waiting, and such a decision returns at once.
        if (!frontEnding.on && (await lockFreeSoon(store))) await gateway?.decisionsSettled(busyTimeoutMs());
        // after its server: nothing of this session can reach the proxy's port any more
        await (await proxied.catch(() => null))?.close({ brief: true });
        const bounded = store.open ? briefly(store) : <T>(write: () => T): T => write();
        bounded(() => {
          if (run)
            endAgentRun(store, events, run as Run, server.label, statusLog, { busyUnsaid: frontEnding.on });
          events.flush();
        });
        if (!registry.end() && frontEnding.on) frontEnding.rows.push(registry);
        links.delete(supervisor);
      })();
      return closed;
    },
  };
}

/** run's flags that shape an HTTP front. */
interface ListenFlags {
  listen?: string;
  "listen-token-file"?: string;
  "no-auth"?: boolean;
  "listen-max-sessions"?: string;
  "listen-idle-timeout"?: string;
}

/**
 * The listen settings from the flags and the server's configuration, or null for stdio. Every
 * problem is a usage error naming the flag or the key.
 */
export function listenSettings(
  server: ServerConfig,
  stateDir: string,
  values: ListenFlags,
): ListenSettings | null {
  const shape = listenShape(server, values);
  if (shape === null) return null;
  const { noAuth, ...front } = shape;
  if (noAuth) return { ...front, token: null, tokenPath: null };
  // a file of the configuration's is named by its key there, as every problem of the file is
  const configFile = safeText(String(server.configFile));
  try {
    const flag = values["listen-token-file"];
    const { token, path } =
      flag === undefined && server.listenTokenFile !== undefined
        ? loadToken(
            stateDir,
            server.label,
            server.listenTokenFile,
            `listenTokenFile of "${server.label}" in ${configFile} (${safeText(server.listenTokenFile)})`,
          )
        : loadToken(stateDir, server.label, flag);
    return { ...front, token, tokenPath: path };
  } catch (e) {
    if (e instanceof TokenFileError) throw new UsageError(`run: ${e.message}.`);
    throw e;
  }
}

/** The front as the flags and the configuration give it, before any token is read. */
type ListenShape = Omit<ListenSettings, "token" | "tokenPath"> & { noAuth: boolean };

/**
 * What the flags and the configuration say of the front, checked without the state directory
 * (the token, read from a file in it or named, is listenSettings' to load). run asks it before
 * it looks for the keyring, so that a mistake in these flags is said first: `run --listen 8080`
 * in a new state directory was answered "no keyring", and `init` then only led to the typo.
 */
export function listenShape(server: ServerConfig, values: ListenFlags): ListenShape | null {
  const text = values.listen ?? server.listen;
  // Paths are written escaped (safeText): a directory's name may hold a newline, an ESC or a bidi
  // override, and these sentences reach the listening line, the store's status line and doctor.
  const configFile = safeText(String(server.configFile));
  const where =
    values.listen !== undefined ? "run: --listen" : `run: listen of "${server.label}" in ${configFile}`;
  if (text === undefined) {
    // doctor asks the same of a host entry's run arguments (src/onboard/doctorListen.ts)
    const flagUnserved = listenFlagWithoutListen(values, text);
    if (flagUnserved !== null) throw new UsageError(`run: ${flagUnserved}.`);
    // as --listen-token-file without --listen: a token for a front that is not served
    const unserved = tokenFileWithoutListen(server, values.listen);
    if (unserved !== null) throw new UsageError(`run: ${unserved}.`);
    return null;
  }
  const address = parseListenAddress(text);
  if (typeof address === "string") throw new UsageError(`${where} ${address}.`);
  const whole = (flag: string, v: string | undefined, dflt: number, min: number, unit = "") => {
    if (v === undefined) return dflt;
    const n = wholeNumber("run", flag, v);
    if (!Number.isSafeInteger(n) || n < min)
      throw new UsageError(`run: --${flag} must be a whole number${unit} of at least ${min}.`);
    return n;
  };
  const maxSessions = whole("listen-max-sessions", values["listen-max-sessions"], 16, 1);
  const idleTimeoutMs = whole(
    "listen-idle-timeout",
    values["listen-idle-timeout"],
    600_000,
    1000,
    " of milliseconds",
  );
  if (values["no-auth"]) {
    if (!address.loopback)
      throw new UsageError(
        `run: --no-auth is allowed only on a loopback address (127.0.0.0/8, ::1), not ${address.host}: anyone who can reach it could use the server.`,
      );
    if (values["listen-token-file"] !== undefined)
      throw new UsageError("run: --no-auth and --listen-token-file contradict each other; give one.");
    // The flag overrides the file, as every flag does; but the file asked for a token, so the
    // listening line says that it is not used rather than dropping it without a word.
    const setAside =
      server.listenTokenFile !== undefined
        ? `the listenTokenFile of "${server.label}" in ${configFile} is not used (--no-auth)`
        : undefined;
    return { address, maxSessions, idleTimeoutMs, noAuth: true, ...(setAside ? { setAside } : {}) };
  }
  return { address, maxSessions, idleTimeoutMs, noAuth: false };
}

/**
 * Serves until SIGINT/SIGTERM/SIGHUP: the front's address and token path go to the state
 * directory for `portcullis status` (the token itself stays in its 0600 file), then every
 * session ends and the front closes.
 */
export async function listenUntilSignal(
  shared: ListenShared,
  settings: ListenSettings,
  registry: GatewayRegistry,
): Promise<number> {
  const { log, store } = shared;
  let front: Awaited<ReturnType<typeof serveListen>>;
  const ending: FrontEnding = { on: false, rows: [] };
  try {
    front = await serveListen(shared, settings, ending);
  } catch (e) {
    registry.end();
    store.close();
    const code = (e as NodeJS.ErrnoException).code;
    throw new UsageError(
      `run: --listen ${settings.address.host}:${settings.address.port}: cannot listen there: ${code ? listenProblem(code) : (e as Error).message}.`,
    );
  }
  // as the URL parser writes it, which is what a client sends in Host (`[::ffff:127.0.0.1]` is
  // sent as `[::ffff:7f00:1]`): the line shows the URL a client will use, spelled as it will
  const url = listeningUrl(settings.address.host, front.port);
  const info = writeListenInfo(shared.stateDir, shared.server.label, {
    url,
    pid: process.pid,
    pidStart: processStartTime(process.pid),
    auth: settings.token === null ? "none" : "bearer",
    tokenFile: settings.tokenPath,
  });
  registry.update({ state: "listening" });
  const line = `listening on ${url} (${settings.token === null ? "no auth: loopback only" : `bearer token in ${safeText(String(settings.tokenPath))}`}${settings.setAside ? `; ${settings.setAside}` : ""})`;
  log.status(line);
  registry.statusLine(line);
  const heartbeat = setInterval(() => registry.update({ state: "listening" }), IDLE_CHECK_MS);
  heartbeat.unref();
  // the first signal ends the sessions; a later one cuts their servers' grace short
  let signalled = false;
  let storeWatch: NodeJS.Timeout | undefined;
  let storeEnding: StoreEnding | null = null;
  await new Promise<void>((resolve) => {
    onShutdownSignals(() => {
      if (signalled) {
        front.hurry();
        // nor does the gateway wait any longer for another process's lock on the store
        storeEnding?.cut();
      }
      signalled = true;
      resolve();
    });
    // a file of the store (database, -wal, -shm) deleted or replaced under this gateway ends it,
    // as a signal would
    storeWatch = watchStoreFiles(store, log, () => resolve());
  });
  clearInterval(heartbeat);
  clearInterval(storeWatch);
  // Nothing waits for another process's lock on the store until every session's server is
  // ended; what meets it is kept, and gets one bounded attempt after (src/store/ending.ts).
  storeEnding = beginStoreEnding(store);
  shared.events.holdOnBusy();
  registry.ending();
  ending.on = true;
  await front.close();
  clearListenInfo(info);
  // once the store's files were lost nothing more is written, and the store is left open
  if (!shared.audit.checkStoreFiles({ now: true })) {
    await storeEnding.lastAttempt();
    shared.events.flush();
    let rowsEnded = true;
    for (const row of [...ending.rows, registry]) if (!row.end()) rowsEnded = false;
    unrecordedAtEnd(store, log, shared.events.unwritten(), rowsEnded);
  }
  // what the full disk (or another refusal of a write) kept from the audit since last said
  shared.events.sayUnwrittenCounts();
  return closeStoreUnlessLost(store, shared.audit) ? 0 : EXIT_USAGE;
}
