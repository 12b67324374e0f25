import { getRequest } from "../approval/requests.js";
import { type CatalogSnapshot, diffCatalogs } from "../catalog/index.js";
import type { OnChange, OnExpand } from "../config/config.js";
import { type ApprovedCall, type AuthorizationPort, decide, type ServerView } from "../guard/guard.js";
import { type EndedBy, refuse } from "../guard/refusals.js";
import { selfWatcherOf } from "../identity/index.js";
import type { Id, Response } from "../relay/jsonrpc.js";
import type { Store } from "../store/db.js";
import type { DownReason, LinkGeneration as Generation, ServerLink } from "../supervisor/link.js";
import { cutText } from "../util/cut.js";
import { seconds } from "../util/duration.js";
import { envMs } from "../util/envMs.js";
import { type Logger, NOT_SCRUBBED, scrubbedOr } from "../util/log.js";
import { displayCommand } from "../util/redact.js";
import type { ReleasedValues } from "../vault/scrub.js";
import { exactReadNumbers } from "./asWritten.js";
import { CatalogSync } from "./catalogSync.js";
import { ClientMessages, type RefusedAnswer } from "./clientMessages.js";
import { ClientSession } from "./clientSession.js";
import type { Downstream } from "./downstream.js";
import { UrlElicitations } from "./elicitation.js";
import type { EventSink } from "./events.js";
import { GuardedRequests } from "./guardedRequests.js";
import { type CallInFlight, InFlight, listenEndAtShutdown } from "./inFlight.js";
import { ProgressTokens } from "./progress.js";
import { SUBSCRIPTION_ID_META } from "./protocol.js";
import { GatewayRecords } from "./records.js";
import { reportNextStep } from "./reportNext.js";
import { ServerMessages } from "./serverMessages.js";
import { ServerRequests } from "./serverRequests.js";
import { cutShort, preview } from "./text.js";

export type { Downstream } from "./downstream.js";

export interface GatewayOptions {
  label: string;
  onChange: OnChange;
  /** under onChange "report", what to do for a rebuild's code to run (reportNextStep); default: as for `-- COMMAND` */
  reportNext?: string;
  /** what an expanding catalog change ends: every grant of the run (default) or the tool's */
  onExpand?: OnExpand;
  supervisor: ServerLink;
  store: Store;
  log: Logger;
  downstream: Downstream;
  events: EventSink;
  /**
   * Begins the agent run when the client first speaks (a server/discover probe is
   * not a run): returns its id and the approval layer for it.
   */
  beginRun?: () => { runId: string; auth: AuthorizationPort | null };
  holdTimeoutMs?: number;
  /** how calls' arguments are recorded: a digest always; the (redacted) arguments too with "clear" */
  auditArguments?: "digest" | "clear";
  /** told whenever the state may have changed (for `portcullis status`) */
  onState?: (state: ReturnType<Gateway["status"]>["state"], epoch: string | null) => void;
  /** called once the gateway decided the client connection must end */
  onEnd: (reason: string, exitCode: number) => void;
  /** the console page of an approval request, when a console runs (URL-mode elicitation) */
  consolePage?: (request: string) => string | null;
  /** the guard's decision (src/guard/guard.ts); replaced only by the guard-off benchmark */
  decide?: typeof decide;
  /** credential values released to the server: scrubbed from everything it says (src/vault/scrub.ts) */
  released?: ReleasedValues;
  /** the credential scopes a call of a tool uses, recorded with its intent (src/vault/toolScopes.ts) */
  scopesFor?: (tool: string) => string[];
  /**
   * The credential scopes a forwarded call may have released by the egress proxy while it runs
   * (absent: none). Only calls a grant allowed release anything.
   */
  callScopes?: (call: ApprovedCall) => readonly string[];
}

/**
 * How long the probe after a worker swapped before the first answer waits for the server's answer
 * to its ping (onSwappedBeforeAnswer): a worker that just started may still be loading its code.
 */
const SWAP_PROBE_MS = 20_000;

/**
 * One client connection (one agent run) in front of one supervised server.
 * Relays every message in both directions with remapped ids, serves tools/list
 * from the verified snapshot, and sends every tools/call through the guard.
 *
 * This class holds the connection's state (the current generation, the client's session, the
 * catalog) and follows the server's epochs. ClientMessages and ServerMessages read and route
 * each side's messages; GuardedRequests handles the requests that wait on the verified catalog;
 * InFlight keeps the requests at the server, ServerRequests the server's own at the client.
 */
export class Gateway {
  private gen: Generation | null = null;
  /** the identity digest the audit holds for `gen`: server_started's, then server_identified's */
  private recordedIdentity: string | null = null;
  /** the client's side: era, handshake, modern envelope and subscriptions, what it last listed */
  private readonly session = new ClientSession();
  private ended = false;
  /**
   * Why the connection is over, once it is: the client closed its input (`finishInFlight`), the
   * gateway's shutdown began (`answerWaiting`: a signal, the HTTP front closing) or the gateway
   * ended it (`end`). From then on no new server process is brought into the session: a
   * handshake is not replayed, nor carried on (a late answer to a replayed initialize sends no
   * notifications/initialized, starts no fetch, re-opens no subscription), and what waited for it
   * is answered at once (answerUnservable); no restart is made for a lost worker, no failed
   * re-list retried, no re-list made. What is at the server is still answered, and so is what the
   * client asked of the process that serves it (its first catalog is still fetched for a script
   * that wrote its requests and hung up) until the shutdown begins: then nothing more is fetched.
   */
  private over: string | null = null;
  /** who ended it, once `over` (what a request refused at the end is told: refusals.ts, EndedBy) */
  private overBy: EndedBy = "gateway";
  /**
   * A request was at the server, or a guarded one was sent to it, while a change of its files
   * was being judged: a change that compares equal is not "unchanged" for the running process.
   */
  private changeExposed = false;
  /**
   * The restart that ends a generation whose worker went away with nothing in its place
   * (`codeUnknown`), if nothing takes its place first; null when none is planned.
   */
  private unknownRestart: NodeJS.Timeout | null = null;
  private readonly holdTimeoutMs: number;
  private readonly records: GatewayRecords;
  private auth: AuthorizationPort | null = null;

  private readonly inFlight: InFlight;
  private readonly serverRequests: ServerRequests;
  private readonly guarded: GuardedRequests;
  private readonly client: ClientMessages;
  private readonly server: ServerMessages;

  private readonly catalog: CatalogSync;
  /** sends the user to the console page of a request a call waits on (clients that accept URLs) */
  private readonly elicitation: UrlElicitations;
  /** the uris of the client's resource subscriptions being re-opened on the current process */
  private readonly reopening = new Set<string>();
  /** the snapshot served before the latest refresh, to diff a change within an epoch against */
  private servedSnapshot: { epoch: string; snapshot: CatalogSnapshot } | null = null;

  private readonly o: GatewayOptions;
  /** text as a peer wrote it, with every released credential value taken out (src/vault/scrub.ts) */
  private readonly scrub: (text: string) => string;

  constructor(options: GatewayOptions) {
    const released = options.released;
    // NOT_SCRUBBED where scrubbing throws: a line the gateway logs or repeats is then not shown,
    // and the gateway goes on (the callers are everywhere: a throw here ended the process)
    this.scrub = released
      ? (text) => (released.size > 0 ? scrubbedOr((t) => released.scrubText(t), text) : text)
      : (text) => text;
    // every line the gateway logs is scrubbed as text: lines quote ids, method and tool names,
    // and the id of a server's message is the one part its scrubbed line keeps as written; and
    // every error it sends the client: a refusal it builds may quote what a peer chose (why a
    // server reached by URL cannot be reached quotes the names of the certificate it presented)
    const o = released
      ? {
          ...options,
          log: scrubbedLogger(options.log, this.scrub),
          downstream: scrubbedErrors(options.downstream, released),
        }
      : options;
    this.o = o;
    this.holdTimeoutMs = o.holdTimeoutMs ?? 15_000;
    const { log, downstream, supervisor: link } = o;
    const session = this.session;
    const current = () => this.gen;
    const quote = (text: string) => this.quote(text);
    const catalogIfNeeded = () => this.catalogIfNeeded();
    this.records = new GatewayRecords(o.events, o.label, o.auditArguments, o.scopesFor);
    this.elicitation = new UrlElicitations({
      send: (msg) => downstream.send(msg),
      era: () => session.era,
      clientCapabilities: () => session.clientCapabilities(),
      consolePage: o.consolePage,
      requestState: (request) => getRequest(o.store, request)?.state ?? null,
      log,
      scrub: this.scrub,
    });
    this.catalog = new CatalogSync({
      label: o.label,
      store: o.store,
      events: o.events,
      log,
      request: (gen, method, params, timeoutMs) => this.inFlight.request(gen, method, params, timeoutMs),
      isCurrent: (gen) => gen === this.gen && gen.alive,
      settle: (gen) => this.settle(gen),
      changed: (before, after) => {
        log.info(`tool catalog changed: revision ${before} → ${after}; the client must list tools again`);
        this.onCatalogChanged(before, after);
        this.notifyClientListChanged();
      },
      fetched: (gen) => this.catalogFetched(gen),
      refetch: (gen) => this.refreshCatalog(gen),
      recovered: (gen) => {
        if (gen === this.gen) this.notifyClientListChanged();
      },
    });
    const progress = new ProgressTokens();
    this.inFlight = new InFlight({
      link,
      downstream,
      records: this.records,
      session,
      progress,
      current,
      log,
    });
    this.serverRequests = new ServerRequests({
      link,
      downstream,
      log,
      current,
      clientCapabilities: () => session.clientCapabilities(),
    });
    this.guarded = new GuardedRequests({
      log,
      downstream,
      session,
      catalog: this.catalog,
      records: this.records,
      elicitation: this.elicitation,
      inFlight: this.inFlight,
      progress,
      holdTimeoutMs: this.holdTimeoutMs,
      decide: o.decide ?? decide,
      callScopes: o.callScopes,
      current,
      serverDown: () => refuse.serverDown(link),
      // (and past the bound of the client's requests waiting for the server's answer: one that
      // reads them but answers none holds each, InFlight.tooManyAtServer)
      notReading: () =>
        link.notReading ? refuse.serverNotReading(link.notReading) : this.inFlight.tooManyAtServer(),
      view: () => this.view(),
      auth: () => this.auth,
      ended: () => this.ended,
      catalogIfNeeded,
      mayForward: () => this.mayForwardGuarded(),
      heldWhy: () => this.heldWhy(),
    });
    const { inFlight, serverRequests } = this;
    this.client = new ClientMessages({
      log,
      quote,
      downstream,
      link,
      session,
      inFlight,
      serverRequests,
      guarded: this.guarded,
      elicitation: this.elicitation,
      progress,
      beginRun: () => this.beginRun(),
      catalogIfNeeded,
    });
    this.server = new ServerMessages({
      log,
      quote,
      shown: (text) => cutShort(this.scrub(text)),
      downstream,
      link,
      session,
      inFlight,
      serverRequests,
      progress,
      released,
      catalogIfNeeded,
      refreshCatalog: (gen) => void this.refreshCatalog(gen),
      current,
    });
    link.on("line", (text, gen, own) => this.server.onLine(text, gen, own === true));
    link.on("oversize", (bytes, gen, rawId, hasMethod) =>
      this.server.onOversize(bytes, gen, rawId, hasMethod),
    );
    link.on("down", (gen, why, detail) => this.onDown(gen, why, detail));
    link.on("up", (gen, previous) => this.onUp(gen, previous));
    link.on("changed", (paths, parts, _next, gen) => this.onArtifactsChanged(paths, parts, gen));
    link.on("gave-up", (message) => this.end(message, 1));
    // no server until its files change: what waits for one is answered now
    link.on("paused", () => this.serverDown());
    link.on("unreachable", () => this.serverDown());
    link.on("change-pending", () => this.onChangePending());
    link.on("change-judged", () => this.onChangeJudged());
    link.on("change-unseen", (since) => this.onChangeUnseen(since));
    link.on("code-unknown", (gen) => this.onCodeUnknown(gen));
    link.on("swapped-before-answer", (gen, detail) => this.onSwappedBeforeAnswer(gen, detail));
  }

  /**
   * No server can answer for now (supervision paused until the server's files change, a remote
   * server unreachable): what waits for one is answered now, held requests and those waiting for
   * a replayed handshake alike.
   */
  private serverDown(): void {
    this.guarded.releaseHeld();
    const down = refuse.serverDown(this.o.supervisor);
    if (down !== null) this.inFlight.answerBehindHandshake(down);
  }

  /**
   * A peer's line for a log line, scrubbed before it is cut short: a value cut in two would
   * no longer be found whole, and its first part would be shown.
   */
  private quote(text: string): string {
    return preview(this.scrub(text));
  }

  // ───────────────────────────── state ─────────────────────────────

  view(): ServerView {
    const ready = !!this.gen && this.gen.alive && this.catalog.freshFor(this.gen) && this.heldWhy() === null;
    return {
      state: ready ? "ready" : this.gen ? "identity-pending" : "starting",
      epoch: this.gen?.epoch ?? null,
      revision: this.catalog.revision,
      snapshot: this.catalog.snapshot,
      validator: this.catalog.validator,
    };
  }

  /**
   * The state `portcullis status` shows: the guard's, or `paused` while supervision waits for a
   * change of the server's files after a crash loop (no server runs; `paused` says why).
   */
  status(): {
    state: string;
    paused: string | null;
    epoch: string | null;
    revision: number | null;
    seenRevision: number | null;
  } {
    const v = this.view();
    const paused = this.o.supervisor.paused ?? null;
    // a server reached by URL that cannot be reached: not a new epoch waiting for its catalog
    const unreachable = this.o.supervisor.unreachable ?? null;
    return {
      state: paused !== null ? "paused" : unreachable !== null ? "unreachable" : v.state,
      paused,
      epoch: v.epoch,
      revision: v.revision,
      seenRevision: this.session.seen?.revision ?? null,
    };
  }

  /**
   * Why guarded requests wait though the epoch's catalog may be verified, or null: the code that
   * would read one is not known for sure (a process that held the gateway's pipe went away with
   * nothing seen in its place), or a file of the running code changed and is being judged under
   * onChange restart or disconnect (a request forwarded meanwhile could run what was written, and
   * the file be put back before the capture sees it). Under report nothing waits for a change:
   * that policy keeps the running epoch whatever the files say.
   */
  private heldWhy(): string | null {
    const gen = this.gen;
    if (gen?.alive && gen.codeUnknown)
      return `${gen.codeUnknown}; portcullis restarts the server (a new epoch) if nothing takes its place within ${seconds(this.unknownWaitMs())}`;
    if (this.o.onChange !== "report" && this.o.supervisor.changePending)
      return "a file of the server's code changed and is being compared with the code that runs";
    return null;
  }

  /**
   * Right before a guarded request is written: one more look for a replaced server, then whether
   * the code that reads it is still the decided epoch's for sure. The decision ends in a later
   * event-loop turn than the look made when the request arrived (its intent is durable only
   * after the audit's group commit, a human may have been asked): a worker killed meanwhile
   * would otherwise leave the request in a pipe that the watcher's next worker reads. The same
   * cheap probe as on arrival (docs/performance-history.md, "The previous run (session nine)").
   */
  private mayForwardGuarded(): boolean {
    this.o.supervisor.checkReplacement();
    if (this.view().state !== "ready") return false;
    // Under report nothing waits for a change being judged: a request sent meanwhile may run
    // what was written, so a file put back before the capture is not "unchanged" for it.
    if (this.o.supervisor.changePending) this.changeExposed = true;
    return true;
  }

  /**
   * The watcher saw a file of the running code change. Requests already at the server may run
   * while the file differs: if it is put back before the capture, the process may still hold
   * what was written (a plugin loaded lazily), so that is remembered until the change is judged.
   */
  private onChangePending(): void {
    this.changeExposed = this.inFlight.unanswered() > 0;
    this.reportState();
  }

  /**
   * The stat poll found a change no event told when it was made (a write through another hard
   * link): the window opened only now, up to a poll interval later. A request at the server at any
   * moment since the path's previous round may have run what was written (a plugin written,
   * loaded by a call, put back before this round): the change counts as exposed, so a put-back
   * comparing equal is still a change (restarted, disconnected, or told under report).
   */
  private onChangeUnseen(since: number): void {
    if (this.inFlight.atServerSince(since)) this.changeExposed = true;
  }

  /** Every change seen is judged: what waited on it is decided now (or waits for the new epoch). */
  private onChangeJudged(): void {
    this.changeExposed = false;
    this.reportState();
    this.guarded.releaseHeld();
    this.answerUnservable();
    this.reopenSubscriptions();
  }

  /**
   * The server's worker went away with nothing seen in its place: the state says so at once
   * (`portcullis status`: identity-pending, with the supervisor's status line saying why), and
   * the server is restarted if nothing takes its place within half the hold timeout. Without
   * that, guarded requests would wait for a successor for ever (a helper that wrote into the
   * gateway's pipe and exited, a watcher that starts its next worker only on a change). A
   * restart is the supervisor's own act, as a respawn after a crash is, so it is made under
   * every onChange policy: the policy says what a change of the server's files does, and none
   * was seen. Half the hold: a watcher has time to start its next worker (usually within a
   * second or two), and the requests held meanwhile time to meet the restarted server's epoch.
   */
  private onCodeUnknown(gen: Generation): void {
    this.reportState();
    if (this.unknownRestart !== null) clearTimeout(this.unknownRestart);
    this.unknownRestart = setTimeout(() => this.restartUnknown(gen), this.unknownWaitMs());
    this.unknownRestart.unref();
  }

  private unknownWaitMs(): number {
    return Math.max(1, Math.floor(this.holdTimeoutMs / 2));
  }

  /** Nothing took the gone worker's place: a new epoch, deny first (held requests then meet it). */
  private restartUnknown(gen: Generation): void {
    this.unknownRestart = null;
    if (this.over !== null || gen !== this.gen || !gen.alive || !gen.codeUnknown) return;
    this.o.log.status(
      `nothing took the place of the server's worker within ${seconds(this.unknownWaitMs())} (${gen.codeUnknown}): restarting the server: ${where(gen)} epoch=${gen.epoch} is being replaced`,
    );
    void this.o.supervisor
      .restart(`restarted by portcullis: ${gen.codeUnknown}`, "lost its worker with nothing in its place")
      .catch((e) => this.end(`cannot restart the server: ${(e as Error).message}`, 1));
  }

  /**
   * A worker swapped before `gen`'s first answer (the supervisor's look: the one on the gateway's
   * output pipe gone, the same command started again). Whether it took the client's handshake
   * request (legacy: initialize; modern: server/discover) with it, nothing under /proc says: a
   * worker that died before reading anything leaves the request in the pipe for the next one,
   * which answers it. So the gateway asks: a ping of its own, written behind what waits. A server
   * reads the pipe in order and answers a handshake request before it reads what follows it, so
   * a ping answered while the handshake request written before it is still unanswered means that
   * request was read by the worker that went away: the epoch is replaced (a new one, its identity
   * captured again), and the request answered epoch_transition, as for a process that crashed
   * holding it. No answer to the ping (a server that answers none): nothing is concluded, as
   * before. The server's words decide nothing here but whether a request was lost; the swap
   * itself is what the supervisor saw.
   */
  private onSwappedBeforeAnswer(gen: Generation, detail: string): void {
    if (gen !== this.gen || !gen.alive) return;
    const waiting = this.inFlight.handshakesAt(gen);
    if (waiting.length === 0) return;
    this.inFlight.request(gen, "ping", {}, SWAP_PROBE_MS).then(
      (answer) => {
        if (answer === null || gen !== this.gen || !gen.alive) return; // gone first: answered then
        const lost = waiting.find(({ wire }) => this.inFlight.waitingAt(wire, gen));
        if (lost === undefined) return;
        this.o.log.status(
          `the client's ${lost.method} was lost with the server's worker (${detail}): it answered a ping written after it, and not the ${lost.method}`,
        );
        this.o.supervisor.replaceBeforeAnswer?.(
          gen,
          `${detail}; the client's ${lost.method} it had read was lost with it`,
        );
      },
      () => {}, // no answer within the time: nothing concluded
    );
  }

  private reportState(): void {
    const v = this.status();
    this.o.onState?.(v.state, v.epoch);
  }

  // ───────────────────────────── client side ─────────────────────────────

  /**
   * `idText`: a request's id as the client wrote it, when the line carries a transport's own id;
   * `written`: the request as the client wrote it, when `text` is it re-serialised.
   */
  onClientLine(text: string, idText?: string, written?: string): void {
    this.client.onLine(text, idText, written);
  }

  /** The client's answer to a server's request was refused unread (see ClientMessages.answerRefused). */
  onClientAnswerRefused(id: Id, problem: RefusedAnswer): void {
    this.client.answerRefused(id, problem);
  }

  /** A client message over the size limit was dropped unread (see ClientMessages.onOversize). */
  onClientOversize(bytes: number, rawId: string | null = null, hasMethod = true): void {
    this.client.onOversize(bytes, rawId, hasMethod);
  }

  /**
   * The client's first request other than a server/discover probe begins the agent run. Null
   * once it has begun; else why it could not be (the store refused the run's row): the request
   * is refused, and the next one tries again. No request is served outside a run, so none is
   * served without its authorizer.
   */
  private beginRun(): string | null {
    if (this.records.run !== null || !this.o.beginRun) return null;
    let begun: ReturnType<NonNullable<GatewayOptions["beginRun"]>>;
    try {
      begun = this.o.beginRun();
    } catch (e) {
      const why = `the agent run could not be recorded in the store: ${(e as Error).message}`;
      this.o.log.warn(why);
      return why;
    }
    this.records.run = begun.runId;
    this.auth = begun.auth;
    return null;
  }

  // ───────────────────────────── catalog ─────────────────────────────

  /**
   * Starts the catalog fetch of the current generation once the session allows requests, and its
   * replayed handshake (if any) is complete: the reconnection fetches it then.
   */
  private catalogIfNeeded(): void {
    if (this.gen && this.catalog.needs(this.gen) && this.mayFetch(this.gen))
      void this.refreshCatalog(this.gen);
  }

  /**
   * Whether the gateway may send its own requests to `gen`: the client's session allows them (a
   * legacy one only after its handshake), and `gen`'s replayed handshake is not under way (nothing
   * but the handshake reaches a new process before it is complete).
   */
  private mayFetch(gen: Generation): boolean {
    return this.session.canFetch() && !this.inFlight.handshaking(gen);
  }

  /** Fetches the complete tool list (every page) from `gen` and makes it the served snapshot. */
  private async refreshCatalog(gen: Generation): Promise<void> {
    if (!this.mayFetch(gen)) return;
    // Once the connection is over a catalog is fetched only for what the client asked that waits
    // for it (the first catalog, for a script that wrote its requests and hung up): never a re-list
    // nor a retry for nobody, nor a new process's (it is not brought into the session).
    if (this.over !== null && (this.catalog.freshFor(gen) || this.guarded.unanswered === 0)) return;
    if (this.over === null && this.session.startListening(gen)) {
      // The gateway's own subscription: how it hears a modern server's list changes
      // even when the client never opened one. It stays open for the generation. Not written
      // while the server reads none of its input: opened with the next fetch (this one fails too).
      this.inFlight
        .request(gen, "subscriptions/listen", { notifications: { toolsListChanged: true } })
        .catch((e: unknown) => {
          this.session.notListening(gen);
          this.o.log.debug(`the gateway's own subscriptions/listen was not opened: ${(e as Error).message}`);
        });
    }
    const ran = await this.catalog.refresh(gen, this.session.serverHasTools());
    if (!ran) return; // coalesced into the fetch under way, which reports when it ends
    this.catalogFetched(gen);
  }

  /** A fetch of `gen`'s catalog ended: the state is reported, and held requests are answered. */
  private catalogFetched(gen: Generation): void {
    if (this.catalog.snapshot && gen === this.gen && this.catalog.freshFor(gen))
      this.servedSnapshot = { epoch: gen.epoch, snapshot: this.catalog.snapshot };
    // status(), not view(): a fetch that fails during a pause must not show identity-pending
    const v = this.status();
    this.o.onState?.(v.state, v.epoch);
    this.guarded.releaseHeld();
    this.answerUnservable();
    this.reopenSubscriptions();
  }

  /**
   * The client's resource subscriptions (resources/subscribe) held by an earlier process, re-opened
   * on the current one once its catalog is verified: a new process knows none of them, and the
   * client would never hear `notifications/resources/updated` again. Each goes through the guard
   * as the client's own resources/subscribe would now (GuardedRequests.reopen: recorded, a grant
   * of an older epoch stale; under approval.resources "per-call" not re-opened, no human asked).
   * One the guard or the process refuses (or not re-opened so) is dropped, and the client is sent `notifications/resources/updated` for its uri: the
   * one message of a subscription a legacy client acts on, so that it reads the resource again,
   * through the guard (MCP has no message that says a subscription ended). Not once the
   * connection is over: no new process is brought into the session then.
   */
  private reopenSubscriptions(): void {
    const gen = this.gen;
    if (!gen?.alive || this.over !== null || this.view().state !== "ready") return;
    // the modern era's: a subscriptions/listen with resource subscriptions, decided again likewise
    // (one refused is answered with its refusal: the client's subscription is over, and it is told)
    for (const listen of [...this.inFlight.takeGuardedListens(), ...this.guarded.takeWaitingListens()]) {
      void this.guarded.reopenListen(listen).then(
        (outcome) => {
          if (outcome !== "later") return;
          this.guarded.keepListen(listen);
          // a new epoch's catalog came while this one was being decided (it skipped what was under way)
          if (this.gen !== gen) this.reopenSubscriptions();
        },
        // (reopenListen answers the client's listen on a fault of its own: this is only past that)
        (e: unknown) =>
          this.o.log.warn(
            `could not re-open the client's subscriptions/listen: ${String((e as Error)?.message ?? e)}`,
          ),
      );
    }
    for (const sub of this.session.subscriptionsNotOn(gen)) {
      if (this.reopening.has(sub.uri)) continue;
      this.reopening.add(sub.uri);
      void this.guarded.reopen(sub).then(
        (outcome) => {
          this.reopening.delete(sub.uri);
          const now = this.session.subscriptionNow(sub);
          if (outcome === "open") {
            if (now === "kept") this.session.subscribed({ ...sub, gen });
            // unsubscribed while it was re-opened: the process is told, as the client told the last
            else if (now === "gone" && gen.alive)
              this.inFlight
                .request(gen, "resources/unsubscribe", { uri: sub.uri })
                .catch((e: unknown) =>
                  this.o.log.warn(
                    `the client's unsubscription from ${preview(sub.uri)} was not sent to the new server process: ${(e as Error).message}`,
                  ),
                );
          } else if (outcome === "refused" && now === "kept") {
            this.session.unsubscribed(sub.uri);
            this.o.downstream.send({
              jsonrpc: "2.0",
              method: "notifications/resources/updated",
              params: { uri: sub.uri },
            });
          }
          // "later": kept as it is, tried again with the next verified catalog; or now, when a new
          // epoch's came while this one was being decided (it skipped what was under way)
          else if (outcome === "later" && this.gen !== gen) this.reopenSubscriptions();
        },
        (e: unknown) => {
          this.reopening.delete(sub.uri);
          this.o.log.warn(
            `could not re-open the client's subscription: ${String((e as Error)?.message ?? e)}`,
          );
        },
      );
    }
  }

  /**
   * onExpand "run": a change within one epoch that expands authority ends the run's grants.
   * (A change of epoch already makes every grant stale.)
   */
  private onCatalogChanged(before: number, after: number): void {
    const previous = this.servedSnapshot;
    const now = this.catalog.snapshot;
    if ((this.o.onExpand ?? "run") !== "run" || !this.auth?.catalogExpanded || !now || !previous) return;
    if (previous.epoch !== this.gen?.epoch) return;
    const diff = diffCatalogs(previous.snapshot, now);
    if (!diff.expands) return;
    this.auth.catalogExpanded({
      revision: after,
      previousRevision: before,
      expanding: diff.entries
        .filter((e) => e.classification === "expands")
        .map((e) => ({
          tool: e.tool,
          kind: e.kind,
          changes: e.changes.filter((c) => c.classification === "expands").map((c) => c.change),
        })),
    });
  }

  /** Tells the client the list changed, in the form its protocol era uses. */
  private notifyClientListChanged(): void {
    if (this.session.era === "modern") {
      for (const id of this.session.listenIds) {
        this.o.downstream.send({
          jsonrpc: "2.0",
          method: "notifications/tools/list_changed",
          params: { _meta: { [SUBSCRIPTION_ID_META]: id } },
        });
      }
      return;
    }
    this.o.downstream.send({ jsonrpc: "2.0", method: "notifications/tools/list_changed" });
  }

  // ───────────────────────────── epochs ─────────────────────────────

  private onDown(gen: Generation, why: DownReason, detail: string): void {
    if (this.gen === gen) this.catalog.invalidate();
    // A replaced worker's pipe owner lives on: its record is server_replaced, on the way up.
    if (why !== "replaced") {
      this.records.serverExited(gen, why, detail);
    }
    this.inFlight.endGeneration(gen);
    this.serverRequests.endGeneration(gen);
    // held for this epoch's catalog: no next epoch is brought up once the connection is over
    this.answerUnservable();
    if (why === "replaced") {
      // The launched process runs on (a watcher whose worker was swapped, or the pid that
      // execve()d): `detail` names the process whose code was replaced and what took its place.
      // "replaced: pid=<launched>" read as if the watcher's pid were the code now serving.
      const under = gen.record.remote
        ? where(gen)
        : `the process the gateway launched (pid=${gen.record.processId})`;
      this.o.log.status(`running server replaced: ${detail}, under ${under}; epoch=${gen.epoch} ended`);
    }
  }

  /**
   * The server answered: its record is completed (the processes a wrapper started; a remote
   * server's own description, from its initialize answer), and the audit gets the completed
   * record when its identity differs from what server_started said, before any call is released.
   */
  private settle(gen: Generation): void {
    this.o.supervisor.settle(gen);
    if (gen !== this.gen || gen.record.identityDigest === this.recordedIdentity) return;
    this.recordedIdentity = gen.record.identityDigest;
    this.records.serverIdentified(gen);
    this.o.log.info(
      `execution record completed: epoch=${gen.epoch} identity=${gen.record.identityDigest.slice(0, 23)}…`,
    );
  }

  private onUp(gen: Generation, previous: Generation | null): void {
    this.gen = gen;
    this.recordedIdentity = gen.record.identityDigest;
    this.client.firstEpochUp();
    this.records.serverStarted(gen, previous);
    if (previous) {
      // After a replacement the recorded pid is still the launched process (a watcher, or the
      // pid that execve()d): "pid=L" alone would read as the code now serving.
      const serving =
        gen.reason === "replaced" && !gen.record.remote
          ? `new code under the process the gateway launched (pid=${gen.record.processId})`
          : where(gen);
      this.o.log.status(
        `new execution epoch: ${serving} epoch=${gen.epoch} (was ${previous.epoch}; ${gen.reason})`,
      );
      void this.reconnect(gen);
    } else {
      // One line in the host's log says which code this connection talks to.
      this.o.log.info(
        `serving ${gen.record.remote ? `${gen.record.remote.url} (remote)` : `${displayCommand(gen.record.launchCommand)}: ${where(gen)}`} epoch=${gen.epoch} identity=${gen.record.identityDigest.slice(0, 23)}…`,
      );
    }
  }

  /**
   * Brings a new generation to where the client's session is: same era, same negotiation. Every
   * new generation is new code that has not seen this session: a new process (launch, respawn,
   * restart), a watcher's new worker, or a process that execve()d into another program. The
   * supervisor never calls a helper's exit a replacement, so the process that was initialized
   * is never asked to initialize again.
   */
  private async reconnect(gen: Generation): Promise<void> {
    const initParams = this.session.replayInitialize();
    if (this.over !== null) {
      // Brought up once the connection is over (a respawn while the client's last answers are
      // awaited): it is not brought into the session. No handshake is replayed, and the gate stays
      // closed as for one under way, so nothing else reaches it; what waits for it is answered.
      if (initParams || (this.session.era === "modern" && this.session.hasDiscovered))
        this.inFlight.handshakeBegins(gen);
      this.answerUnservable();
      return;
    }
    if (initParams) {
      this.inFlight.handshakeBegins(gen);
      let text: string | undefined;
      const res = await this.replayed(gen, "initialize", initParams, (t) => {
        text = t;
      });
      if (res === "timeout") return this.noHandshake(gen, "initialize");
      if (!this.answersReplay(gen, res)) return;
      if (res.error)
        return this.end(`the new server process refused initialize: ${this.said(res.error.message)}`, 1);
      // compared as the client read the first answer: a number re-serialising would change, exactly
      if (!this.session.sameNegotiation(res.result, exactReadNumbers(text))) {
        return this.end(
          "the new server process negotiated a different protocol version or capabilities; ending the connection so the client re-initializes",
          0,
        );
      }
      this.o.supervisor.send({ jsonrpc: "2.0", method: "notifications/initialized" });
      this.replayLevel(gen);
      this.inFlight.handshakeDone(gen);
      // A new process offers the prompts and resources its code offers now, and announces no
      // change (for it nothing changed): the client, which caches those lists, is told to list
      // them again, as the server said it would be (the gateway lists tools itself, and says
      // when their list changed).
      for (const method of this.session.otherListsChanged())
        this.o.downstream.send({ jsonrpc: "2.0", method });
    } else if (this.session.era === "modern") {
      if (this.session.hasDiscovered) {
        this.inFlight.handshakeBegins(gen);
        let text: string | undefined;
        const res = await this.replayed(gen, "server/discover", {}, (t) => {
          text = t;
        });
        if (res === "timeout") return this.noHandshake(gen, "server/discover");
        if (!this.answersReplay(gen, res)) return;
        // refused, as a refused initialize is: not taken for an answer that advertises nothing
        if (res.error)
          return this.end(
            `the new server process refused server/discover: ${this.said(res.error.message)}`,
            1,
          );
        const caps = (res.result as { capabilities?: unknown } | undefined)?.capabilities;
        if (!this.session.sameDiscovery(caps, exactReadNumbers(text))) {
          return this.end(
            "the new server process advertises different capabilities; ending the connection",
            0,
          );
        }
        this.replayLevel(gen);
        this.inFlight.handshakeDone(gen);
      } else this.replayLevel(gen);
      this.inFlight.reopenListens();
    } else {
      // Nothing negotiated (the client's first initialize was lost with its process, and it was
      // told to send it again): its own initialize, sent while no process was up, goes here now,
      // as a first one does. (One sent once this epoch is up goes straight here too.)
      this.inFlight.sendCarriedInitialize(gen);
    }
    await this.refreshCatalog(gen);
  }

  /**
   * The client's latest logging/setLevel that a process accepted, sent to `gen` right after its
   * replayed handshake (before what the client sent meanwhile, so a newer setLevel of its own
   * still wins): a new process logs at its default level, and the client, which set its level
   * once, would get messages it asked not to (or miss ones it asked for). The gateway's own
   * request: its answer is not relayed (the client's was answered long ago), a refusal is logged.
   */
  private replayLevel(gen: Generation): void {
    const level = this.session.level;
    if (level === null) return;
    this.inFlight.request(gen, "logging/setLevel", level).then(
      (res) => {
        if (res?.error)
          this.o.log.info(
            `the new server process refused the client's logging level: ${this.said(res.error.message)}`,
          );
      },
      (e: unknown) =>
        this.o.log.warn(
          `the client's logging level was not sent to the new server process: ${(e as Error).message}`,
        ),
    );
  }

  /**
   * Whether `res`, the answer to the handshake replayed to `gen`, carries the reconnection on: not
   * when `gen` went away or stopped being the generation that answers (an answer read from a
   * process already being stopped), nor once the connection is over (the client closed its input,
   * the gateway ended it or is shutting down): a late answer then sends the process nothing more
   * (no notifications/initialized), fetches nothing and re-opens nothing. Its handshake stays
   * under way, so nothing else reaches it either; what waited behind it was answered when the
   * connection ended (answerUnservable).
   */
  private answersReplay(gen: Generation, res: Response | null): res is Response {
    if (!res || gen !== this.gen || !gen.alive) return false;
    if (this.over === null) return true;
    this.o.log.debug(
      `dropped the answer of epoch=${gen.epoch} to its replayed handshake: the connection is over (${this.over})`,
    );
    return false;
  }

  /**
   * The replayed handshake request `method` to `gen`, bounded by HANDSHAKE_TIMEOUT_MS: "timeout"
   * when no answer came by then, null when `gen` went away first. Not cancelled at the server on
   * timeout (MCP: an initialize is never cancelled); the connection ends instead (noHandshake).
   */
  private replayed(
    gen: Generation,
    method: string,
    params: Record<string, unknown>,
    written: (text: string) => void,
  ): Promise<Response | null | "timeout"> {
    return new Promise((resolve) => {
      let timer: NodeJS.Timeout;
      const arm = () => {
        timer = setTimeout(() => {
          // a remote server that cannot be reached: its link sends the initialize again until it
          // can (unreachable, not a server that cannot start); the bound runs again from then
          if (this.o.supervisor.unreachable) arm();
          else resolve("timeout");
        }, handshakeTimeoutMs());
        timer.unref(); // never keeps an ending gateway alive
      };
      arm();
      void this.inFlight.request(gen, method, params, undefined, written).then((res) => {
        clearTimeout(timer);
        resolve(res);
      });
    });
  }

  /**
   * A server's own words, as the gateway repeats them (the reason the connection ends, given to
   * the log and to every request that waited): scrubbed, then cut to SERVER_WORDS characters. A
   * message may be as large as a line (64 MiB), and it is repeated once per waiting request.
   */
  private said(text: string): string {
    const scrubbed = this.scrub(text);
    return scrubbed.length > SERVER_WORDS ? `${cutText(scrubbed, SERVER_WORDS)}…` : scrubbed;
  }

  /**
   * `gen` did not answer its replayed handshake in time: a server that cannot start, treated as
   * one that refuses it (the connection ends, exit code 1), with the bound in the reason.
   */
  private noHandshake(gen: Generation, method: string): void {
    if (gen !== this.gen || !gen.alive || this.over !== null) return;
    this.end(
      `the new server process did not answer ${method} within ${seconds(handshakeTimeoutMs())}: a server that cannot start; ending the connection`,
      1,
    );
  }

  private onArtifactsChanged(paths: string[], parts: string[], gen: Generation): void {
    const what = paths.length ? paths.join(", ") : parts.join(", ");
    this.records.artifactChanged(gen, paths, parts);
    // the change that ends a pause after a crash loop: the supervisor starts the server itself
    // (onChange has nothing running to report on, restart or disconnect from)
    if (!gen.alive) return;
    if (parts.length === 0 && !this.changeExposed) {
      this.o.log.debug(`${what} touched; content unchanged`);
      return;
    }
    if (parts.length === 0) {
      // Written and put back before the capture, with a request at the server meanwhile: the
      // running process may have loaded what was written. Handled as a change (deny first).
      this.o.log.status(
        `${what} changed and was put back while a request was at the server: the running code may hold what was written meanwhile`,
      );
      this.changeExposed = false;
      if (this.o.onChange === "report") {
        this.o.log.status(
          `running server kept (onChange report): ${where(gen)} epoch=${gen.epoch}; ${this.o.reportNext ?? reportNextStep(null, this.o.label)}`,
        );
        return;
      }
    } else this.o.log.status(`build complete: ${what} changed`);
    switch (this.o.onChange) {
      case "report": {
        // A server under its own watcher (node --watch, nodemon…) is about to be replaced by
        // it: "unchanged" would be false a moment later.
        const watcher = selfWatcherOf(gen.record);
        this.o.log.status(
          watcher
            ? `running server is left to its own watcher (${watcher}): ${where(gen)} epoch=${gen.epoch}`
            : `running server unchanged: ${where(gen)} epoch=${gen.epoch}; ${this.o.reportNext ?? reportNextStep(null, this.o.label)}`,
        );
        return;
      }
      case "restart":
        this.o.log.status(`restarting server: ${where(gen)} epoch=${gen.epoch} is being replaced`);
        void this.o.supervisor
          .restart()
          .catch((e) => this.end(`cannot restart the server: ${(e as Error).message}`, 1));
        return;
      case "disconnect":
        this.end(
          "the server changed on disk (onChange: disconnect); ending the connection so the client reconnects",
          0,
        );
        return;
    }
  }

  // ───────────────────────────── end ─────────────────────────────

  /**
   * The client closed its input (a script that writes its requests and hangs up):
   * what it already asked is still answered. A call waiting for a human is answered at once
   * with its refusal: the connection's end cuts that wait short (its request closes with the
   * run), as a signal's does; the rest resolves once no request of the client is unanswered, or
   * after `limitMs`; what is left then gets an error, since the server is about to be shut down.
   * Long-lived subscriptions do not count.
   */
  async finishInFlight(limitMs: number): Promise<void> {
    const deadline = Date.now() + limitMs;
    this.connectionOver(INPUT_CLOSED);
    if (!this.ended) this.guarded.abortDecisions(CONNECTION_ENDS);
    // (polled: the answers come from several places, and this runs once per connection)
    while (!this.ended && this.unanswered() > 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await this.answerWaiting();
    if (this.ended) return;
    this.inFlight.refuseAll();
  }

  /**
   * The gateway is about to stop (its client's input closed, or a signal): calls still waiting
   * for a human stop waiting, each answered with its refusal (recorded as the call's end; its
   * request stays pending until the run's end closes it), and held requests are answered. Calls
   * already at the server are not touched: they are answered in the server's grace. Resolves
   * once the decisions ended (bounded), so the answers go out before the client's output closes.
   * `why`: why the connection is over, what a request held while no process can serve it is told
   * (the gateway's shutdown, or the end of the one HTTP session it serves).
   */
  async answerWaiting(why?: string): Promise<void> {
    if (this.ended) return;
    // no reason given: the gateway's shutdown; given: the end of the one HTTP session it serves
    this.connectionOver(why ?? SHUTTING_DOWN, why === undefined ? "gateway" : "session");
    // the server is about to be stopped: no fetch starts any more, not even for a held request
    this.catalog.stop();
    this.guarded.abortDecisions(CONNECTION_ENDS);
    await this.decisionsEnded(() => this.ended);
    if (this.ended) return;
    // for good: a decision still under way past that wait is answered so when it returns. Told
    // why the connection is over, not "wait a moment, then retry" (a hold's own timeout): the
    // client closed its input (already the reason of connectionOver), its session ended, or the
    // gateway is shutting down; no process will serve the request on this connection
    this.guarded.answerHeldAtEnd(this.over ?? undefined, this.overBy);
  }

  /**
   * The client's output closes next, the server shut down: each of the client's
   * subscriptions/listen still open gets the end a server gives its listens at its own shutdown
   * (InFlight.endListens), those waiting to be re-opened on a next process as well. A call still
   * open was answered already (shutting_down, or epoch_transition as its process went away).
   */
  endListens(): void {
    this.inFlight.endListens();
    for (const { request } of this.guarded.takeWaitingListens()) {
      this.session.listenClosed(request.id);
      this.o.downstream.send(listenEndAtShutdown(request.id));
    }
  }

  /**
   * The connection is over (`why`; see `over`): no new process is brought into the session, a
   * failed re-list is no longer retried, no restart is made for a lost worker, and what waits for
   * a process the gateway no longer brings in is answered now.
   */
  private connectionOver(why: string, by: EndedBy = why === INPUT_CLOSED ? "client" : "gateway"): void {
    if (this.over !== null) return;
    this.over = why;
    this.overBy = by;
    this.o.log.debug(`the connection is over (${why}): nothing new is sent to the server`);
    this.catalog.dropRetry(why);
    if (this.unknownRestart !== null) clearTimeout(this.unknownRestart);
    this.unknownRestart = null;
    this.answerUnservable();
  }

  /**
   * Once the connection is over, what waits for a process the gateway no longer brings into the
   * session is answered `identity_pending` with why (nothing of it was sent): the requests behind a
   * new process's replayed handshake, which is not carried on, and the held requests while no
   * process has its handshake complete (none alive, or its handshake under way). Held requests
   * for the catalog of the process that serves the session wait for it, as before the client
   * closed its input (a script that wrote its requests and hung up is answered); the end of
   * `finishInFlight` answers what is left.
   */
  private answerUnservable(): void {
    const why = this.over;
    if (why === null || this.ended) return;
    const by = this.overBy;
    this.inFlight.answerBehindHandshake(refuse.identityPendingAtEnd(this.gen?.epoch ?? null, why, by));
    const gen = this.gen;
    if (!gen?.alive || this.inFlight.handshaking(gen)) this.guarded.answerHeld(why, by);
  }

  /** Resolves once no decision is under way, after 2 s at most (endDecisionsMs), or when `stop` says so. */
  private async decisionsEnded(stop: () => boolean = () => false, ms = endDecisionsMs()): Promise<void> {
    const grace = Date.now() + ms;
    while (!stop() && this.guarded.decidingCount > 0 && Date.now() < grace) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  /**
   * Resolves once no decision is under way, or after `ms`: an HTTP session's last writes wait for
   * the decisions its end's bounded wait left under way (stalled by another process's lock, now
   * given back), whose records, made when they return, would otherwise follow its run's end.
   */
  decisionsSettled(ms: number): Promise<void> {
    return this.decisionsEnded(() => false, ms);
  }

  /**
   * The tools/calls at the server right now, in the current epoch, with their scopes: the egress
   * proxy's release window. Read from the table of forwarded requests, so a call stops counting
   * the moment its answer or its process's end removes it there, or the client cancels it.
   */
  callsInFlight(): { epoch: string | null; inFlight: CallInFlight[] } {
    const gen = this.gen;
    // No live process: what the server sends now is the code that is starting (or the last of the
    // one stopping), not this epoch's: no epoch, until the next is recorded.
    if (!gen?.alive) return { epoch: null, inFlight: [] };
    if (this.ended) return { epoch: gen.epoch, inFlight: [] };
    return { epoch: gen.epoch, inFlight: this.inFlight.callsAt(gen) };
  }

  /** Client requests not answered yet (held, being decided, or at the server). */
  private unanswered(): number {
    return this.guarded.unanswered + this.client.waiting + this.inFlight.unanswered();
  }

  /**
   * Ends the client connection: every open request gets an answer first. Held requests are told
   * why the connection ends (scrubbed: it may quote the server's words); a call waiting for a
   * human stops waiting and gets its refusal, as on the input's close, so the connection ends
   * only once those decisions ended (bounded): ended at once, they would answer nothing.
   */
  end(reason: string, exitCode: number): void {
    if (this.ended) return;
    this.ended = true;
    // (what waits is answered below, with this reason: not answerUnservable's)
    this.over ??= this.scrub(reason);
    if (this.unknownRestart !== null) clearTimeout(this.unknownRestart);
    this.catalog.stop();
    this.elicitation.close();
    this.o.log.info(reason);
    const why = this.scrub(reason);
    this.guarded.answerHeldAtEnd(why);
    // what waited for a new process's replayed handshake was never sent: told why, as held requests are
    this.inFlight.answerBehindHandshake(refuse.identityPendingAtEnd(this.gen?.epoch ?? null, why));
    this.guarded.endDecisions(why);
    if (this.guarded.decidingCount === 0) this.o.onEnd(reason, exitCode);
    else void this.decisionsEnded().then(() => this.o.onEnd(reason, exitCode));
  }
}

/**
 * How long a new process has to answer the handshake the gateway replays to it (legacy:
 * `initialize`; modern: `server/discover`): 60 s, the time the MCP SDK's client gives any request,
 * or PORTCULLIS_HANDSHAKE_TIMEOUT_MS (tests shorten it; read at each replay). Past it the server is
 * taken for one that cannot start and the connection ends, as when it refuses the handshake.
 */
export const HANDSHAKE_TIMEOUT_MS = 60_000;
const handshakeTimeoutMs = (): number => envMs("PORTCULLIS_HANDSHAKE_TIMEOUT_MS", HANDSHAKE_TIMEOUT_MS);

/**
 * How long the connection's end waits for the decisions under way (a store another process keeps
 * locked stalls one) before it answers what it holds: 2 s, or PORTCULLIS_END_DECISIONS_MS (tests
 * lengthen it, to hold an HTTP session's end in that phase for as long as they hold the lock;
 * read at each end).
 */
const endDecisionsMs = (): number => envMs("PORTCULLIS_END_DECISIONS_MS", 2_000);

/** At most this much of a server's own message is repeated where the gateway quotes it. */
const SERVER_WORDS = 200;

/** Why a wait for a human is cut short as the connection ends (the log says so). */
const CONNECTION_ENDS = "the connection ends";

/** Why the connection is over when the client closes its input (what waits is told so). */
const INPUT_CLOSED = "the client closed its input: nothing more is sent to the server for it";
/** Why the connection is over when the gateway's shutdown begins (a signal, the HTTP front closing). */
const SHUTTING_DOWN = "the gateway is shutting down: nothing more is sent to the server";

/** `log` with every line passed through `scrub` first (`debugging` kept: hot paths read it). */
function scrubbedLogger(log: Logger, scrub: (text: string) => string): Logger {
  return {
    info: (m) => log.info(scrub(m)),
    // kept, released values still scrubbed: a line this process made whole is not redacted as text
    ...(log.own ? { own: (m: string) => log.own?.(scrub(m)) } : {}),
    warn: (m) => log.warn(scrub(m)),
    status: (line) => log.status(scrub(line)),
    debug: (m) => {
      if (log.debugging !== false) log.debug(scrub(m));
    },
    debugging: log.debugging,
  };
}

/**
 * `down` with every error response sent through `send` scrubbed of the released values: its
 * message and every string of its data (never its id, which is the client's own). Whatever it
 * quotes, the gateway's own refusals included, never shows the client a released value. Other
 * messages go as they are: the server's were scrubbed as they were read (ServerMessages), and
 * so were the raw answers relayed through `sendText`. Nothing is read while no value is released.
 */
function scrubbedErrors(down: Downstream, released: ReleasedValues): Downstream {
  const sendText = down.sendText;
  return {
    send: (msg) => down.send(released.size > 0 ? scrubbedError(msg, released) : msg),
    ...(sendText ? { sendText: (text: string) => sendText.call(down, text) } : {}),
    ...(down.rewritesSubscriptionIds ? { rewritesSubscriptionIds: true } : {}),
    close: () => down.close(),
    get clientIds() {
      return down.clientIds;
    },
  };
}

/** `msg` with its error's message and data scrubbed, if it is an error response; else `msg` itself. */
function scrubbedError(msg: unknown, released: ReleasedValues): unknown {
  if (typeof msg !== "object" || msg === null || "method" in msg) return msg;
  const error = (msg as { error?: unknown }).error;
  if (typeof error !== "object" || error === null) return msg;
  let scrubbed: unknown;
  try {
    scrubbed = scrubbedStrings(error, released);
  } catch {
    // its words cannot be scrubbed: the error goes with its code and a message saying so
    const code = (error as { code?: unknown }).code;
    scrubbed = { code: typeof code === "number" ? code : -32603, message: NOT_SCRUBBED };
  }
  return scrubbed === error ? msg : { ...msg, error: scrubbed };
}

/** `value` with every string in it scrubbed (object keys kept); `value` itself when none changed. */
function scrubbedStrings(value: unknown, released: ReleasedValues): unknown {
  if (typeof value === "string") return released.scrubText(value);
  if (Array.isArray(value)) {
    const out = value.map((v) => scrubbedStrings(v, released));
    return out.some((v, i) => v !== value[i]) ? out : value;
  }
  if (typeof value !== "object" || value === null) return value;
  const entries = Object.entries(value);
  const out = entries.map(([k, v]) => [k, scrubbedStrings(v, released)] as const);
  // fromEntries defines each key: a "__proto__" one stays a key, as in the parsed message
  return out.some(([, v], i) => v !== entries[i]![1]) ? Object.fromEntries(out) : value;
}

/** Where an epoch's code runs, for status lines: its process, or the URL of a remote server. */
function where(gen: Generation): string {
  const remote = gen.record.remote;
  return remote ? `url=${remote.url}` : `pid=${gen.record.processId}`;
}
