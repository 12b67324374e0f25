import { getRequest } from "../approval/requests.js";
import { type CatalogSnapshot, diffCatalogs } from "../catalog/index.js";
import type { OnChange, OnExpand } from "../config/config.js";
import { type ApprovedCall, type AuthorizationPort, decide, type ServerView } from "../guard/guard.js";
import { refuse } from "../guard/refusals.js";
import { selfWatcherOf } from "../identity/index.js";
import { type ClientIds, rawRequestId } from "../relay/clientIds.js";
import { IdMap, writtenIdKey } from "../relay/ids.js";
import {
  type Classified,
  type ErrorObject,
  errorResponse,
  type Id,
  INTERNAL_ERROR,
  INVALID_PARAMS,
  INVALID_REQUEST,
  METHOD_NOT_FOUND,
  type Notification,
  PARSE_ERROR,
  parseLine,
  type Request,
  type Response,
} from "../relay/jsonrpc.js";
import { type IdSpan, plainIdSpan, serializeWithId, spliceId, writtenIdOf } from "../relay/rawSplice.js";
import type { Store } from "../store/db.js";
import type { DownReason, LinkGeneration as Generation, ServerLink } from "../supervisor/link.js";
import { MAX_MESSAGE_DEPTH } from "../util/jsonDepth.js";
import type { Logger } from "../util/log.js";
import { displayCommand } from "../util/redact.js";
import type { ReleasedValues } from "../vault/scrub.js";
import { CatalogSync } from "./catalogSync.js";
import { ClientSession } from "./clientSession.js";
import { UrlElicitations } from "./elicitation.js";
import type { EventSink } from "./events.js";
import { HeldRequests } from "./held.js";
import {
  advertiseListChanged,
  isGuardedMethod,
  isGuardedMethodVariant,
  readFacts,
  SUBSCRIPTION_ID_META,
} from "./protocol.js";
import { GatewayRecords } from "./records.js";
import { preview } from "./text.js";

/** A client line as read: its message, its text, and where its id lies when it may be relayed as written. */
interface ClientLine {
  c: Classified;
  text: string;
  span: IdSpan | null;
}

/** Requests the gateway answers, records or rewrites itself: never relayed as written. */
const NOT_RELAYED_AS_WRITTEN = new Set([
  "initialize",
  "tools/list",
  "tools/call",
  "resources/read",
  "resources/subscribe",
  "prompts/get",
  "completion/complete",
  "subscriptions/listen",
]);

/** A message toward the client. */
export interface Downstream {
  send(msg: unknown): void;
  /**
   * As `send`, for a message already serialised with the client's ids as it wrote them (a relayed
   * answer with its id restored, `src/relay/rawSplice.ts`); absent: the gateway uses `send`.
   */
  sendText?(text: string): void;
  close(): void;
  /** how the transport keeps the client's ids byte-exact (absent: ids are taken as parsed) */
  clientIds?: ClientIds;
}

/**
 * A request of the server's, sent on to the client under the gateway's own id. Its answer goes
 * back under the id as the server wrote it (`written`), and `key` finds it by that id.
 */
interface ServerRequest {
  serverId: Id;
  written: string;
  key: string;
  gen: Generation;
}

type Pending =
  | {
      origin: "client";
      clientId: Id;
      method: string;
      gen: Generation;
      tool?: string;
      callId?: string;
      /** a long-lived subscriptions/listen: re-opened on a new epoch instead of failed */
      listen?: Request;
      /** a forwarded tools/call's credential scopes: what the egress proxy may release while it runs */
      scopes?: readonly string[];
      /**
       * its intent is in the audit (a tools/call, or a guarded read's request_forwarded): exactly
       * one end is written for it (its result, or call_interrupted), then this is cleared
       */
      intent?: boolean;
    }
  | { origin: "gateway"; method: string; gen: Generation; resolve: (r: Response | null) => void };

export interface GatewayOptions {
  label: string;
  onChange: OnChange;
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
  onState?: (state: ServerView["state"], epoch: string | null) => void;
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
 * One client connection (one agent run) in front of one supervised server.
 * Relays every message in both directions with remapped ids, serves tools/list
 * from the verified snapshot, and sends every tools/call through the guard.
 */
export class Gateway {
  private gen: Generation | null = null;
  /** the client's side: era, handshake, modern envelope and subscriptions, what it last listed */
  private readonly session = new ClientSession();

  private readonly upstream = new IdMap<Pending>();
  private readonly downstreamReqs = new IdMap<ServerRequest>();
  /** tools/call (and other recorded requests) and tools/list requests held while identity-pending */
  private readonly heldCalls: HeldRequests;
  private readonly heldLists: HeldRequests;
  /** calls between "received" and "written or refused", so a cancellation can find them */
  private readonly deciding = new Map<string, Deciding>();
  private ended = false;
  private readonly records: GatewayRecords;
  private auth: AuthorizationPort | null = null;
  private beforeFirstEpoch: string[] | null = [];

  private readonly catalog: CatalogSync;
  /** sends the user to the console page of a request a call waits on (clients that accept URLs) */
  private readonly elicitation: UrlElicitations;
  /** the snapshot served before the latest refresh, to diff a change within an epoch against */
  private servedSnapshot: { epoch: string; snapshot: CatalogSnapshot } | null = null;

  private readonly o: GatewayOptions;
  /** text as a peer wrote it, with every released credential value taken out (src/vault/scrub.ts) */
  private readonly scrub: (text: string) => string;

  constructor(options: GatewayOptions) {
    const released = options.released;
    this.scrub = released ? (text) => (released.size > 0 ? released.scrubText(text) : text) : (text) => text;
    // every line the gateway logs is scrubbed as text: lines quote ids, method and tool names,
    // and the id of a server's message is the one part its scrubbed line keeps as written
    const o = released ? { ...options, log: scrubbedLogger(options.log, this.scrub) } : options;
    this.o = o;
    this.records = new GatewayRecords(o.events, o.label, o.auditArguments, o.scopesFor);
    this.elicitation = new UrlElicitations({
      send: (msg) => o.downstream.send(msg),
      era: () => this.session.era,
      clientCapabilities: () => this.session.clientCapabilities(),
      consolePage: o.consolePage,
      requestState: (request) => getRequest(o.store, request)?.state ?? null,
      log: o.log,
      scrub: this.scrub,
    });
    const holdMs = o.holdTimeoutMs ?? 15_000;
    this.heldCalls = new HeldRequests(holdMs, (msg) => this.answerPending(msg));
    this.heldLists = new HeldRequests(holdMs, (msg) => this.answerPending(msg));
    this.catalog = new CatalogSync({
      label: o.label,
      store: o.store,
      events: o.events,
      log: o.log,
      request: (gen, method, params) => this.request(gen, method, params),
      isCurrent: (gen) => gen === this.gen && gen.alive,
      settle: (gen) => o.supervisor.settle(gen),
      changed: (before, after) => {
        o.log.info(`tool catalog changed: revision ${before} → ${after}; the client must list tools again`);
        this.onCatalogChanged(before, after);
        this.notifyClientListChanged();
      },
    });
    const sup = o.supervisor;
    sup.on("line", (text, gen) => this.onServerLine(text, gen));
    sup.on("oversize", (bytes, _gen, rawId, hasMethod) => this.onServerOversize(bytes, rawId, hasMethod));
    sup.on("down", (gen, why, detail) => this.onDown(gen, why, detail));
    sup.on("up", (gen, previous) => this.onUp(gen, previous));
    sup.on("changed", (paths, parts, _next, gen) => this.onArtifactsChanged(paths, parts, gen));
    sup.on("gave-up", (message) => this.end(message, 1));
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
    const ready = !!this.gen && this.gen.alive && this.catalog.freshFor(this.gen);
    return {
      state: ready ? "ready" : this.gen ? "identity-pending" : "starting",
      epoch: this.gen?.epoch ?? null,
      revision: this.catalog.revision,
      snapshot: this.catalog.snapshot,
      validator: this.catalog.validator,
    };
  }

  status(): { state: string; epoch: string | null; revision: number | null; seenRevision: number | null } {
    const v = this.view();
    return {
      state: v.state,
      epoch: v.epoch,
      revision: v.revision,
      seenRevision: this.session.seen?.revision ?? null,
    };
  }

  // ───────────────────────────── client side ─────────────────────────────

  onClientLine(text: string): void {
    // The client may speak before the first server process is up (its identity is
    // captured before spawn): keep its words, in order, until then.
    if (this.beforeFirstEpoch) {
      this.beforeFirstEpoch.push(text);
      return;
    }
    if (this.o.log.debugging !== false) this.o.log.debug(`← client ${this.quote(text)}`);
    const line = this.parseClientLine(text);
    this.onClientMessage(line.c, line);
  }

  /**
   * The line's message, its id swapped for a stand-in where the client's text must survive, and
   * for a request the gateway may relay as written, where its id lies (`plainIdSpan`: one scan
   * that also gives the raw id, so it is not looked for twice).
   */
  private parseClientLine(text: string): ClientLine {
    const c = parseLine(text);
    const span = c.kind === "request" && !NOT_RELAYED_AS_WRITTEN.has(c.msg.method) ? plainIdSpan(text) : null;
    const ids = this.o.downstream.clientIds;
    if (!ids) return { c, text, span };
    return { c: ids.adopt(c, text, span ? text.slice(span.start, span.end) : undefined), text, span };
  }

  /**
   * A client message over the size limit was dropped unread; nothing is left unanswered.
   * A request is answered with an error carrying its own id (`rawId`, read from the passing
   * bytes), so the client does not wait for its timeout; a line with no id gets the error with
   * id null, as a parse error would. A response (no method) to a server's request is turned
   * into an error to that server.
   */
  onClientOversize(bytes: number, rawId: string | null = null, hasMethod = true): void {
    this.o.log.warn(`dropped a ${bytes}-byte message from the client (over the size limit)`);
    if (!hasMethod && rawId !== null) {
      this.answerServerInstead(JSON.parse(rawId) as Id, refuse.responseTooLarge(bytes, "client"));
      return;
    }
    const e = refuse.requestTooLarge(bytes, "not forwarded");
    this.o.downstream.send(errorResponse(this.clientIdOf(rawId), e.code, e.message, e.data));
  }

  /** The id the gateway uses for a raw client id text (a stand-in when the text must survive byte-exact). */
  private clientIdOf(rawId: string | null): Id | null {
    if (rawId === null) return null;
    const value = JSON.parse(rawId) as Id;
    return this.o.downstream.clientIds ? this.o.downstream.clientIds.standIn(value, rawId) : value;
  }

  /**
   * A server message over the size limit was dropped unread. A response (no method) to a
   * request the gateway wrote becomes an error to the requester, with its own id; a request
   * of the server gets an error back; a notification is only logged.
   */
  private onServerOversize(bytes: number, rawId: string | null, hasMethod: boolean): void {
    this.o.log.warn(`dropped a ${bytes}-byte message from the server (over the size limit)`);
    if (rawId === null) return;
    this.answerDropped(JSON.parse(rawId) as Id, rawId, hasMethod, {
      request: refuse.requestTooLarge(bytes, "dropped"),
      response: refuse.responseTooLarge(bytes, "server"),
    });
  }

  /**
   * A server message the gateway will not read (too large, nested too deep, or not valid
   * JSON-RPC), with its id (`written`: as the server wrote it): a request of the server gets
   * `errors.request` back; a response to a request the gateway wrote gives its requester
   * `errors.response` instead, under the requester's own id (a call's end recorded as an error).
   */
  private answerDropped(
    id: Id,
    written: string,
    hasMethod: boolean,
    errors: { request: ErrorObject; response: ErrorObject },
  ): void {
    if (hasMethod) {
      const e = errors.request;
      this.answerServer(errorResponse(id, e.code, e.message, e.data), written);
      return;
    }
    const entry = this.upstream.get(id);
    if (!entry || typeof id !== "number") return;
    const e = errors.response;
    const error = errorResponse(entry.origin === "client" ? entry.clientId : id, e.code, e.message, e.data);
    if (entry.origin === "gateway") {
      this.upstream.delete(id);
      entry.resolve(error);
      return;
    }
    this.upstream.delete(id, entry.clientId);
    if (entry.intent) {
      entry.intent = false;
      this.records.toolResult(entry.clientId, entry.tool, entry.gen.epoch, "error", readMethod(entry));
    }
    this.o.downstream.send(error);
  }

  /** `line`: the line as the client wrote it, for a request relayed as written (`sendUpstream`). */
  private onClientMessage(c: Classified, line?: ClientLine): void {
    if (c.kind === "invalid" && c.tooDeep) {
      this.onClientTooDeep(c.id, c.tooDeep.hasMethod);
      return;
    }
    if (c.kind === "invalid") {
      this.o.log.warn(`invalid message from the client: ${c.reason}`);
      // a malformed answer to a server's request: that server is answered, never left waiting
      if (c.meant === "response" && c.id !== null)
        this.answerServerInstead(c.id, refuse.responseInvalid(c.reason, "client"));
      const code = c.reason === "not valid JSON" ? PARSE_ERROR : INVALID_REQUEST;
      this.o.downstream.send(errorResponse(c.id, code, `Invalid JSON-RPC message: ${c.reason}.`));
      return;
    }
    if (c.kind === "response") this.onClientResponse(c.msg);
    else if (c.kind === "notification") this.onClientNotification(c.msg);
    else this.onClientRequest(c.msg, line);
  }

  /**
   * A client message nested deeper than MAX_MESSAGE_DEPTH, dropped: a request is answered with
   * its own id, an answer to a server's request becomes an error to that server (as for a
   * message over the size limit), a notification is only logged.
   */
  private onClientTooDeep(id: Id | null, hasMethod: boolean): void {
    this.o.log.warn(`dropped a message from the client nested deeper than ${MAX_MESSAGE_DEPTH} levels`);
    if (hasMethod) {
      if (id === null) return; // a notification
      const e = refuse.requestTooDeep(MAX_MESSAGE_DEPTH, "not forwarded");
      this.o.downstream.send(errorResponse(id, e.code, e.message, e.data));
      return;
    }
    if (id !== null) this.answerServerInstead(id, refuse.responseTooDeep(MAX_MESSAGE_DEPTH, "client"));
  }

  /**
   * The client's answer to the server's request `wire` was dropped (too large, too deep): the
   * server gets `e` in its place, under its own id, while the process that asked still runs.
   */
  private answerServerInstead(wire: Id, e: ErrorObject): void {
    const entry = typeof wire === "number" ? this.downstreamReqs.get(wire) : undefined;
    if (!entry || typeof wire !== "number") return;
    this.downstreamReqs.delete(wire, entry.key);
    if (entry.gen === this.gen && entry.gen.alive)
      this.answerServer(errorResponse(entry.serverId, e.code, e.message, e.data), entry.written);
  }

  private onClientRequest(msg: Request, line?: ClientLine): void {
    this.session.onRequest(msg);
    if (this.records.run === null && msg.method !== "server/discover" && this.o.beginRun) {
      const begun = this.o.beginRun();
      this.records.run = begun.runId;
      this.auth = begun.auth;
    }
    if (this.session.era === "modern") {
      // No handshake in this era: the first real request is when the gateway can
      // fetch the catalog (a server/discover probe alone does not need one).
      if (msg.method !== "server/discover") this.catalogIfNeeded();
    }
    // A watcher may have swapped its worker, or the server exec'd other code, since the last
    // look: find out before a request whose answer depends on which code runs is handled (a few
    // /proc reads). What passes unguarded (a ping, a list of prompts) grants nothing and is not
    // recorded per call: it is left to the idle poll, which keeps relaying it cheap.
    if (isGuardedMethod(msg.method)) this.o.supervisor.checkReplacement();
    switch (msg.method) {
      case "initialize":
        this.session.keepInitialize(msg);
        this.forward(msg);
        return;
      case "tools/list":
        this.serveToolsList(msg);
        return;
      case "tools/call":
        if (!this.idInUse(msg)) this.handled(msg, this.handleCall(msg));
        return;
      case "resources/read":
      case "resources/subscribe":
      case "prompts/get":
      case "completion/complete":
        if (!this.idInUse(msg)) this.handled(msg, this.handleRecorded(msg));
        return;
      case "subscriptions/listen":
        if (
          (msg.params as { notifications?: { toolsListChanged?: unknown } } | undefined)?.notifications
            ?.toolsListChanged
        ) {
          this.session.listenOpened(msg.id);
        }
        this.forward(msg, { listen: msg });
        return;
      default:
        if (isGuardedMethodVariant(msg.method)) {
          // Not byte-for-byte a guarded method, but a lenient server might take it for one:
          // never forwarded, so it can never skip the guard.
          this.o.log.warn(
            `refused ${JSON.stringify(msg.method)}: not a known method, too close to a guarded one`,
          );
          this.o.downstream.send(
            errorResponse(msg.id, METHOD_NOT_FOUND, `Method not found: ${JSON.stringify(msg.method)}.`),
          );
          return;
        }
        // only relayed, nothing of it recorded or rewritten: its own bytes go on, with the wire id
        this.forward(msg, {}, line);
        return;
    }
  }

  /**
   * A guarded request whose id a request of this client still in flight carries (held, being
   * decided, or at the server; a cancelled one too, until it ends) is refused, never handled: a
   * call's intent and its end are paired by (run, id), and two calls under one id would leave
   * one intent without its end, or give it the other's. JSON-RPC asks ids to be unique among
   * requests in flight; clients that number their requests never hit this.
   */
  private idInUse(msg: Request): boolean {
    const inUse =
      this.deciding.has(`${typeof msg.id}:${msg.id}`) ||
      this.upstream.wireFor(msg.id) !== undefined ||
      this.heldCalls.has(msg.id);
    if (!inUse) return false;
    this.o.log.warn(
      `refused ${msg.method} ${JSON.stringify(msg.id)}: that id is already in use by a request in flight`,
    );
    this.o.downstream.send(
      errorResponse(
        msg.id,
        INVALID_REQUEST,
        `Invalid request: id ${JSON.stringify(msg.id)} is already in use by a request in flight; send it with a new id.`,
      ),
    );
    return true;
  }

  private onClientNotification(msg: Notification): void {
    if (msg.method === "notifications/initialized") {
      this.session.markInitialized();
      this.o.supervisor.send(msg);
      this.catalogIfNeeded();
      return;
    }
    if (msg.method === "notifications/cancelled") {
      const requestId = (msg.params as { requestId?: Id } | undefined)?.requestId;
      if (requestId === undefined) return;
      const key = `${typeof requestId}:${requestId}`;
      const d = this.deciding.get(key);
      if (d) {
        d.cancelled = true;
        d.abort();
      }
      if (this.heldCalls.cancel(requestId)) return;
      const wire = this.upstream.wireFor(requestId);
      if (wire === undefined) return; // already answered: nothing to cancel
      const entry = this.upstream.get(wire);
      if (entry?.origin === "client" && entry.intent) {
        // Its end, once: whatever the server does now is not known (a late answer still passes).
        entry.intent = false;
        this.records.callInterrupted(
          entry.clientId,
          entry.tool,
          entry.gen.epoch,
          "cancelled",
          "unknown",
          readMethod(entry),
        );
      }
      if (entry?.origin === "client" && entry.listen) {
        // a closed subscription: no more notifications on it, and not re-opened on a new epoch
        this.upstream.delete(wire, requestId);
        this.session.listenClosed(requestId);
      }
      this.o.supervisor.send({ ...msg, params: { ...msg.params, requestId: wire } });
      return;
    }
    this.o.supervisor.send(msg);
  }

  private onClientResponse(msg: Response): void {
    if (this.elicitation.onResponse(msg)) return; // the answer to the gateway's own elicitation
    const entry = this.downstreamReqs.get(msg.id);
    if (!entry) {
      this.o.log.warn(`dropped a response from the client with an unknown id ${JSON.stringify(msg.id)}`);
      return;
    }
    this.downstreamReqs.delete(msg.id as number, entry.key);
    if (entry.gen !== this.gen || !entry.gen.alive) {
      this.o.log.debug("dropped a client response meant for a server process that went away");
      return;
    }
    this.answerServer({ ...msg, id: entry.serverId }, entry.written);
  }

  /**
   * An answer to a request of the server's, under its id as the server wrote it (`written`):
   * JSON.parse would round 9007199254740993 or respell 1e2, and the server matches by its own id.
   */
  private answerServer(msg: Response, written: string): void {
    const link = this.o.supervisor;
    if (link.sendText && written !== JSON.stringify(msg.id)) link.sendText(serializeWithId(msg, written));
    else link.send(msg);
  }

  /** Forwards a client request upstream under a gateway id. */
  private forward(
    msg: Request,
    extra: {
      tool?: string;
      callId?: string;
      listen?: Request;
      scopes?: readonly string[];
      intent?: boolean;
    } = {},
    line?: ClientLine,
  ): boolean {
    const gen = this.gen;
    if (!gen?.alive) {
      if (msg.method === "tools/call") return false;
      const e = refuse.serverUnavailable();
      this.o.downstream.send(errorResponse(msg.id, e.code, e.message, e.data));
      return false;
    }
    const wire = this.upstream.add(
      { origin: "client", clientId: msg.id, method: msg.method, gen, ...extra },
      msg.id,
    );
    if (!this.sendUpstream(msg, wire, line)) {
      this.upstream.delete(wire, msg.id);
      // a process that died before its first message (it was started while its identity was
      // captured): answered here, as above, rather than left waiting
      if (msg.method !== "tools/call") {
        const e = refuse.serverUnavailable();
        this.o.downstream.send(errorResponse(msg.id, e.code, e.message, e.data));
      }
      return false;
    }
    return true;
  }

  /**
   * Forwards a client request under its wire id. With the client's own line (`line`) and a link
   * that takes serialised messages, that line goes on with only its id replaced, when the
   * splice is safe (`plainIdSpan`); otherwise the parsed message is serialised again.
   */
  private sendUpstream(msg: Request, wire: number, line: ClientLine | undefined): boolean {
    const link = this.o.supervisor;
    if (line?.span && link.sendText) return link.sendText(spliceId(line.text, line.span, String(wire)));
    return link.send({ ...msg, id: wire });
  }

  // ───────────────────────────── tools/list and tools/call ─────────────────────────────

  private serveToolsList(msg: Request): void {
    const v = this.view();
    const snapshot = this.catalog.snapshot;
    if (v.state !== "ready" || !snapshot) {
      this.holdForCatalog(msg, this.heldLists);
      return;
    }
    const cursor = (msg.params as { cursor?: unknown } | undefined)?.cursor;
    if (cursor !== undefined) {
      // The whole verified snapshot is served in one page; no cursor was ever issued.
      this.o.downstream.send(
        errorResponse(msg.id, INVALID_PARAMS, "Unknown cursor: tools/list is served in one page."),
      );
      return;
    }
    if (this.catalog.revision !== null) {
      this.session.listed(this.catalog.revision, snapshot);
    }
    // Modern clients cache a list for ttlMs: 0 makes them re-list whenever we say it changed.
    const envelope =
      this.session.era === "modern" ? { ...this.catalog.envelope, resultType: "complete", ttlMs: 0 } : {};
    this.o.downstream.send({
      jsonrpc: "2.0",
      id: msg.id,
      result: { ...envelope, tools: snapshot.tools },
    });
    this.records.catalogServed(this.gen?.epoch, this.catalog.revision, snapshot.fingerprint);
  }

  private async handleCall(given: Request): Promise<void> {
    // A modern retry answering the gateway's own input_required: those fields are the gateway's.
    const { msg, answered } =
      this.session.era === "modern" ? this.elicitation.takeRetry(given) : { msg: given, answered: true };
    const params = (msg.params ?? {}) as { name?: unknown; arguments?: unknown };
    if (typeof params.name !== "string") {
      this.o.downstream.send(
        errorResponse(msg.id, INVALID_PARAMS, "tools/call needs params.name (a string)."),
      );
      return;
    }
    const tool = params.name;
    const key = `${typeof msg.id}:${msg.id}`;
    const mark = new Deciding();
    this.deciding.set(key, mark);
    const progress = this.progressFor(msg);
    let inputRequired: Record<string, unknown> | null = null;
    let verdict: Awaited<ReturnType<typeof decide>>;
    try {
      verdict = await (this.o.decide ?? decide)({
        server: () => this.view(),
        facts: { tool, args: params.arguments ?? {}, seen: this.session.seen },
        auth: this.auth,
        intent: {
          intent: (call, condition) => this.records.toolCalled(msg.id, params.arguments, call, condition),
        },
        hooks: {
          progress,
          get signal() {
            return mark.signal;
          },
          waiting: (id) => {
            if (this.session.era !== "modern") return this.elicitation.offer(id, tool);
            // Modern: the call is answered at once with input_required (no server→client requests).
            if (answered) return;
            inputRequired = this.elicitation.inputRequired(id, tool);
            if (inputRequired) mark.abort();
          },
        },
      });
    } finally {
      this.deciding.delete(key);
    }
    if (mark.cancelled || this.ended) {
      // An intent written for a call that will not be sent is closed, never left open.
      if (verdict.action === "forward")
        this.records.callInterrupted(msg.id, tool, verdict.call.epoch, "cancelled", "not_forwarded");
      return;
    }
    if (inputRequired && verdict.action === "refuse") {
      this.recordDenied(msg, tool, params.arguments, "input_required");
      this.o.downstream.send({ jsonrpc: "2.0", id: msg.id, result: inputRequired });
      return;
    }
    switch (verdict.action) {
      case "hold":
        return this.hold(msg);
      case "refuse":
        this.recordDenied(msg, tool, params.arguments, verdict.reason);
        this.o.downstream.send(
          errorResponse(msg.id, verdict.error.code, verdict.error.message, verdict.error.data),
        );
        return;
      case "invalid-arguments":
        this.recordDenied(msg, tool, params.arguments, "invalid_arguments");
        this.o.downstream.send({
          jsonrpc: "2.0",
          id: msg.id,
          result: {
            content: [
              {
                type: "text",
                text: `Invalid arguments for tool "${tool}" (checked against catalog revision ${this.catalog.revision}):\n- ${verdict.errors.join("\n- ")}`,
              },
            ],
            isError: true,
            ...(this.session.era === "modern" ? { resultType: "complete" } : {}),
          },
        });
        return;
      case "forward": {
        // What goes out is exactly what was validated, recorded and approved (the effective
        // arguments: `null` or absent arguments become `{}`, schema defaults filled in).
        const out: Request = { ...msg, params: { ...msg.params, arguments: verdict.call.effective } };
        const scopes = verdict.call.grant !== null ? (this.o.callScopes?.(verdict.call) ?? []) : [];
        if (verdict.call.epoch !== this.gen?.epoch || !this.forward(out, { tool, scopes, intent: true })) {
          // never written: safe to evaluate again against the new state; its intent is closed
          // (the decision made again writes its own)
          this.records.callInterrupted(msg.id, tool, verdict.call.epoch, "redecided", "not_forwarded");
          return this.hold(msg);
        }
      }
    }
  }

  /**
   * Requests that read the server's data without being tool calls: held while the server's
   * identity is pending (like a call), approved by a human when `approval.resources` asks for it
   * (the same guard and authorizer as a call, as a pseudo-tool named by method and target),
   * recorded durably with run, epoch, grant and a digest of their parameters, then forwarded as
   * they are.
   */
  private async handleRecorded(msg: Request): Promise<void> {
    const read = readFacts(msg);
    const key = `${typeof msg.id}:${msg.id}`;
    const mark = new Deciding();
    this.deciding.set(key, mark);
    let verdict: Awaited<ReturnType<typeof decide>>;
    try {
      // With approval.resources "session" or "per-call", a human approves it first, exactly as a tool call.
      verdict = await (this.o.decide ?? decide)({
        server: () => this.view(),
        facts: { tool: msg.method, args: msg.params ?? {}, seen: null },
        read,
        auth: this.auth,
        intent: {
          intent: (call, condition) =>
            this.records.requestForwarded(msg.id, msg.method, msg.params, call, condition),
        },
        hooks: {
          progress: this.progressFor(msg),
          get signal() {
            return mark.signal;
          },
          waiting: (id) => this.elicitation.offer(id, `${read.method} ${read.target}`),
        },
      });
    } finally {
      this.deciding.delete(key);
    }
    if (mark.cancelled || this.ended) {
      // A read recorded but not sent is closed, never left open (as a call is).
      if (verdict.action === "forward")
        this.records.callInterrupted(
          msg.id,
          undefined,
          verdict.call.epoch,
          "cancelled",
          "not_forwarded",
          msg.method,
        );
      return;
    }
    switch (verdict.action) {
      case "hold":
        this.holdForCatalog(msg, this.heldCalls);
        return;
      case "refuse":
        this.recordDenied(msg, `${read.method} ${read.target}`, read.params, verdict.reason);
        this.o.downstream.send(
          errorResponse(msg.id, verdict.error.code, verdict.error.message, verdict.error.data),
        );
        return;
      case "invalid-arguments":
        return; // never for a read: its arguments are not checked
      case "forward":
        // a new epoch since it was recorded: decided and recorded again against it, never sent to
        // code it was not recorded (nor approved) for; the first record is closed
        if (verdict.call.epoch !== this.gen?.epoch) {
          this.records.callInterrupted(
            msg.id,
            undefined,
            verdict.call.epoch,
            "redecided",
            "not_forwarded",
            msg.method,
          );
          return this.handleRecorded(msg);
        }
        // not sent (no live process: answered server_unavailable there): its record is closed
        if (!this.forward(msg, { intent: true }))
          this.records.callInterrupted(
            msg.id,
            undefined,
            verdict.call.epoch,
            "server_unavailable",
            "not_forwarded",
            msg.method,
          );
    }
  }

  /** While a human decides, a client that gave a progress token hears about it. */
  private progressFor(msg: Request): ((message: string) => void) | undefined {
    const token = (msg.params as { _meta?: { progressToken?: unknown } } | undefined)?._meta?.progressToken;
    if (typeof token !== "string" && typeof token !== "number") return undefined;
    let step = 0;
    return (message: string) =>
      this.o.downstream.send({
        jsonrpc: "2.0",
        method: "notifications/progress",
        params: { progressToken: token, progress: ++step, message },
      });
  }

  private recordDenied(msg: Request, tool: string, args: unknown, reason: string): void {
    this.records.denied(
      msg.id,
      tool,
      args,
      { epoch: this.gen?.epoch ?? null, revision: this.catalog.revision },
      reason,
    );
  }

  private hold(msg: Request): void {
    if (this.refusedForCatalog(msg)) return;
    this.o.log.info(
      `holding tools/call ${JSON.stringify((msg.params as { name?: unknown } | undefined)?.name)} until the catalog of ${this.gen?.alive ? `epoch ${this.gen.epoch}` : "the next epoch"} is verified`,
    );
    this.heldCalls.hold(msg);
    // After a failed fetch a call is the next attempt, as a list is. Only then: while a new
    // epoch is being brought up (initialize replayed) its first fetch is the reconnection's.
    if (this.gen && this.catalog.failure(this.gen) !== null) this.catalogIfNeeded();
  }

  /**
   * Keeps `msg` until the current epoch's catalog is verified, and starts the fetch that verifies
   * it if none runs: after a failed fetch, that is the next attempt (a transient failure heals on
   * the next list or call). Too soon after a failure, the request is refused at once instead.
   */
  private holdForCatalog(msg: Request, held: HeldRequests): void {
    if (this.refusedForCatalog(msg)) return;
    held.hold(msg);
    this.catalogIfNeeded();
  }

  /** Answers `msg` with catalog_unavailable when the current epoch's catalog just failed to come. */
  private refusedForCatalog(msg: Request): boolean {
    const why = this.gen ? this.catalog.failedRecently(this.gen) : null;
    if (why === null) return false;
    this.answerUnavailable(msg, why);
    return true;
  }

  private answerUnavailable(msg: Request, why: string): void {
    const e = refuse.catalogUnavailable(this.gen?.epoch ?? null, why);
    this.o.downstream.send(errorResponse(msg.id, e.code, e.message, e.data));
  }

  /**
   * A call or guarded read being handled. A fault while handling it (a bug: what a peer sends is
   * checked before it gets here) answers that request with an internal error and is logged; it
   * does not end the gateway, and every other call with it, as an unhandled rejection would.
   */
  private handled(msg: Request, work: Promise<void>): void {
    work.catch((e: unknown) => {
      this.o.log.warn(
        `could not handle ${msg.method} (id ${JSON.stringify(msg.id)}): ${String((e as Error)?.message ?? e)}`,
      );
      this.o.downstream.send(
        errorResponse(
          msg.id,
          INTERNAL_ERROR,
          `The gateway failed while handling this ${msg.method}; see its log.`,
        ),
      );
    });
  }

  private answerPending(msg: Request): void {
    const gen = this.gen;
    // "changed" only when there was an epoch before this one (the first one is a launch)
    const e = refuse.identityPending(gen?.epoch ?? null, gen !== null && gen.reason !== "launch");
    this.o.downstream.send(errorResponse(msg.id, e.code, e.message, e.data));
  }

  private releaseHeld(): void {
    const gen = this.gen;
    const failed = gen ? this.catalog.failure(gen) : null;
    if (failed !== null) {
      // the fetch failed: waiting for the hold timeout cannot help, the requests are told why now
      for (const msg of [...this.heldLists.drain(), ...this.heldCalls.drain()])
        this.answerUnavailable(msg, failed);
      return;
    }
    if (this.view().state !== "ready") return;
    for (const msg of this.heldLists.drain()) this.serveToolsList(msg);
    for (const msg of this.heldCalls.drain())
      this.handled(msg, msg.method === "tools/call" ? this.handleCall(msg) : this.handleRecorded(msg));
  }

  // ───────────────────────────── catalog ─────────────────────────────

  /** Starts the catalog fetch of the current generation once the session allows requests. */
  private catalogIfNeeded(): void {
    if (this.gen && this.catalog.needs(this.gen) && this.session.canFetch())
      void this.refreshCatalog(this.gen);
  }

  /** Fetches the complete tool list (every page) from `gen` and makes it the served snapshot. */
  private async refreshCatalog(gen: Generation): Promise<void> {
    if (!this.session.canFetch()) return;
    if (this.session.startListening(gen)) {
      // The gateway's own subscription: how it hears a modern server's list changes
      // even when the client never opened one. It stays open for the generation.
      void this.request(gen, "subscriptions/listen", { notifications: { toolsListChanged: true } });
    }
    const ran = await this.catalog.refresh(gen, this.session.serverHasTools());
    if (!ran) return; // coalesced into the fetch under way, which reports when it ends
    if (this.catalog.snapshot && gen === this.gen && this.catalog.freshFor(gen))
      this.servedSnapshot = { epoch: gen.epoch, snapshot: this.catalog.snapshot };
    const v = this.view();
    this.o.onState?.(v.state, v.epoch);
    this.releaseHeld();
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

  /** The gateway's own request to a generation; resolves null when that generation goes away. */
  private request(
    gen: Generation,
    method: string,
    params: Record<string, unknown>,
  ): Promise<Response | null> {
    return new Promise((resolve) => {
      if (!gen.alive) return resolve(null);
      const p = this.session.paramsFor(params);
      // resolved with null by onDown when this generation goes away first
      const wire = this.upstream.add({ origin: "gateway", method, gen, resolve });
      if (!this.o.supervisor.send({ jsonrpc: "2.0", id: wire, method, params: p })) {
        this.upstream.delete(wire);
        resolve(null);
      }
    });
  }

  // ───────────────────────────── server side ─────────────────────────────

  private onServerLine(text: string, gen: Generation): void {
    // Every message from the server passes here first: a released credential value it echoes
    // (raw, base64, URL-encoded) never reaches the client, the catalog in the store, or a log.
    const released = this.o.released;
    if (released !== undefined && released.size > 0) text = released.scrubLine(text);
    if (this.o.log.debugging !== false) this.o.log.debug(`← server ${this.quote(text)}`);
    const c = parseLine(text);
    if (c.kind === "invalid" && c.tooDeep) {
      this.o.log.warn(`dropped a message from the server nested deeper than ${MAX_MESSAGE_DEPTH} levels`);
      if (c.id === null) return;
      this.answerDropped(c.id, writtenIdOf(text, c.id), c.tooDeep.hasMethod, {
        request: refuse.requestTooDeep(MAX_MESSAGE_DEPTH, "dropped"),
        response: refuse.responseTooDeep(MAX_MESSAGE_DEPTH, "server"),
      });
      return;
    }
    if (c.kind === "invalid") {
      // e.g. `node --watch` printing "Restarting 'server.js'" on the shared stdout
      this.o.log.warn(`dropped an invalid message from the server: ${c.reason}: ${this.quote(text)}`);
      // a malformed answer or request that names an id: whoever waits on it is answered, never
      // left waiting (a call's end recorded as an error)
      if (c.meant !== undefined && c.id !== null)
        this.answerDropped(c.id, writtenIdOf(text, c.id), c.meant === "request", {
          request: invalidMessage(c.reason),
          response: refuse.responseInvalid(c.reason, "server"),
        });
      return;
    }
    if (c.kind === "response") this.onServerResponse(c.msg, gen, text);
    else if (c.kind === "request") this.onServerRequest(c.msg, gen, text);
    else this.onServerNotification(c.msg, gen, text);
  }

  /** `text`: the line as the server wrote it, already scrubbed of released values. */
  private onServerResponse(msg: Response, gen: Generation, text?: string): void {
    const entry = this.upstream.get(msg.id);
    if (!entry) {
      // (the id is the one thing scrubLine keeps as written: the log scrubs every line)
      this.o.log.warn(`dropped a response from the server with an unknown id ${JSON.stringify(msg.id)}`);
      return;
    }
    const wire = msg.id as number;
    if (entry.origin === "gateway") {
      this.upstream.delete(wire);
      entry.resolve(msg);
      return;
    }
    this.upstream.delete(wire, entry.clientId);
    if (!gen.settled) this.o.supervisor.settle(gen);
    // relayed as written only when the gateway neither rewrites it (initialize) nor acts on or
    // records what it read in it (what a server says it supports; a call's outcome): the gateway
    // and the client must read the same message
    const asWritten = entry.method !== "initialize" && entry.method !== "server/discover" && !entry.intent;
    if (entry.method === "initialize" && msg.result) {
      this.session.noteNegotiated(msg.result);
      msg = { ...msg, result: advertiseListChanged(msg.result) };
      queueMicrotask(() => this.catalogIfNeeded());
    }
    if (entry.method === "server/discover" && msg.result) this.session.noteDiscovered(msg.result);
    if (entry.intent) {
      const result = msg.result as { isError?: unknown } | undefined;
      const outcome = msg.error ? "error" : result?.isError === true ? "tool-error" : "ok";
      this.records.toolResult(entry.clientId, entry.tool, entry.gen.epoch, outcome, readMethod(entry));
    }
    this.sendDownstream(msg, entry.clientId, asWritten ? text : undefined);
  }

  /**
   * Answers the client under its own id. With the server's (scrubbed) line and a transport that
   * takes serialised messages, that line goes on with only its id replaced by the client's id as
   * the client wrote it, when the splice is safe (`plainIdSpan`); otherwise it is serialised again.
   */
  private sendDownstream(msg: Response, clientId: Id, text: string | undefined): void {
    const down = this.o.downstream;
    if (text !== undefined && down.sendText) {
      const span = plainIdSpan(text);
      if (span) {
        const json = JSON.stringify(clientId);
        down.sendText(spliceId(text, span, down.clientIds ? down.clientIds.restore(json) : json));
        return;
      }
    }
    down.send({ ...msg, id: clientId });
  }

  /** `text`: the line as the server wrote it, where the id's own text is read (`writtenIdOf`). */
  private onServerRequest(msg: Request, gen: Generation, text: string): void {
    const written = writtenIdOf(text, msg.id);
    const key = writtenIdKey(msg.id, written);
    const wire = this.downstreamReqs.add({ serverId: msg.id, written, key, gen }, key);
    this.o.downstream.send({ ...msg, id: wire });
  }

  private onServerNotification(msg: Notification, gen: Generation, text: string): void {
    const meta = (msg.params as { _meta?: Record<string, unknown> } | undefined)?._meta;
    const subscription = meta?.[SUBSCRIPTION_ID_META];
    if (msg.method === "notifications/tools/list_changed") {
      // A signal to re-list, never evidence of identity: the gateway fetches the
      // list itself and tells the client only when the revision changed.
      this.o.log.debug("server says its tool list changed; fetching it");
      void this.refreshCatalog(gen);
      return;
    }
    if (subscription !== undefined) {
      const entry = this.upstream.get(subscription as Id);
      if (entry?.origin !== "client") {
        this.o.log.debug(
          `dropped a notification for an unknown subscription ${JSON.stringify(subscription)}`,
        );
        return;
      }
      msg = { ...msg, params: { ...msg.params, _meta: { ...meta, [SUBSCRIPTION_ID_META]: entry.clientId } } };
    }
    if (msg.method === "notifications/cancelled") {
      const serverReq = (msg.params as { requestId?: Id } | undefined)?.requestId;
      const key = serverReq === undefined ? undefined : cancelledKey(serverReq, text);
      const wire = key === undefined ? undefined : this.downstreamReqs.wireFor(key);
      if (wire === undefined) return;
      this.downstreamReqs.delete(wire, key);
      msg = { ...msg, params: { ...msg.params, requestId: wire } };
    }
    this.o.downstream.send(msg);
  }

  // ───────────────────────────── epochs ─────────────────────────────

  private onDown(gen: Generation, why: DownReason, detail: string): void {
    if (this.gen === gen) this.catalog.invalidate();
    // A replaced worker's pipe owner lives on: its record is server_replaced, on the way up.
    if (why !== "replaced") {
      this.records.serverExited(gen, why, detail);
    }
    for (const [wire, p] of this.upstream.entries()) {
      if (p.gen !== gen) continue;
      if (p.origin === "gateway") {
        this.upstream.delete(wire);
        p.resolve(null);
        continue;
      }
      if (p.listen) continue; // re-opened on the next epoch
      this.upstream.delete(wire, p.clientId);
      if (p.intent)
        this.records.callInterrupted(
          p.clientId,
          p.tool,
          gen.epoch,
          "epoch_transition",
          "unknown",
          readMethod(p),
        );
      const e = refuse.epochTransition(gen.epoch, null);
      this.o.downstream.send(errorResponse(p.clientId, e.code, e.message, e.data));
    }
    for (const [wire, d] of this.downstreamReqs.entries()) {
      if (d.gen !== gen) continue;
      this.downstreamReqs.delete(wire, d.key);
      this.o.downstream.send({
        jsonrpc: "2.0",
        method: "notifications/cancelled",
        params: { requestId: wire, reason: "the server process that sent this request went away" },
      });
    }
    if (why === "replaced") {
      this.o.log.status(`running server replaced: ${where(gen)} epoch=${gen.epoch} (${detail})`);
    }
  }

  private onUp(gen: Generation, previous: Generation | null): void {
    this.gen = gen;
    const early = this.beforeFirstEpoch;
    if (early) {
      this.beforeFirstEpoch = null;
      for (const text of early) {
        const line = this.parseClientLine(text);
        this.onClientMessage(line.c, line);
      }
    }
    this.records.serverStarted(gen, previous);
    if (previous) {
      this.o.log.status(
        `new execution epoch: ${where(gen)} epoch=${gen.epoch} (was ${previous.epoch}; ${gen.reason})`,
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
    if (initParams) {
      const res = await this.request(gen, "initialize", initParams);
      if (!res || gen !== this.gen) return;
      if (res.error) return this.end(`the new server process refused initialize: ${res.error.message}`, 1);
      if (!this.session.sameNegotiation(res.result)) {
        return this.end(
          "the new server process negotiated a different protocol version or capabilities; ending the connection so the client re-initializes",
          0,
        );
      }
      this.o.supervisor.send({ jsonrpc: "2.0", method: "notifications/initialized" });
    } else if (this.session.era === "modern") {
      if (this.session.hasDiscovered) {
        const res = await this.request(gen, "server/discover", {});
        if (!res || gen !== this.gen) return;
        const caps = (res.result as { capabilities?: unknown } | undefined)?.capabilities;
        if (!this.session.sameDiscovery(caps)) {
          return this.end(
            "the new server process advertises different capabilities; ending the connection",
            0,
          );
        }
      }
      for (const [wire, p] of this.upstream.entries()) {
        if (p.origin !== "client" || !p.listen) continue;
        // A subscription is not a call: it is re-opened on the new process.
        this.upstream.delete(wire, p.clientId);
        this.forward(p.listen, { listen: p.listen });
      }
    }
    await this.refreshCatalog(gen);
  }

  private onArtifactsChanged(paths: string[], parts: string[], gen: Generation): void {
    const what = paths.length ? paths.join(", ") : parts.join(", ");
    this.records.artifactChanged(gen, paths, parts);
    if (parts.length === 0) {
      this.o.log.debug(`${what} touched; content unchanged`);
      return;
    }
    this.o.log.status(`build complete: ${what} changed`);
    switch (this.o.onChange) {
      case "report": {
        // A server under its own watcher (node --watch, nodemon…) is about to be replaced by
        // it: "unchanged" would be false a moment later.
        const watcher = selfWatcherOf(gen.record);
        this.o.log.status(
          watcher
            ? `running server is left to its own watcher (${watcher}): ${where(gen)} epoch=${gen.epoch}`
            : `running server unchanged: ${where(gen)} epoch=${gen.epoch}`,
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
   * what it already asked is still answered. Resolves once no request of the client
   * is unanswered, or after `limitMs`; what is left then gets an error, since the
   * server is about to be shut down. Long-lived subscriptions do not count.
   */
  async finishInFlight(limitMs: number): Promise<void> {
    const deadline = Date.now() + limitMs;
    // (polled: the answers come from several places, and this runs once per connection)
    while (!this.ended && this.unanswered() > 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    if (this.ended) return;
    // Calls still waiting for a human: stop waiting; each is answered with its refusal.
    for (const d of this.deciding.values()) d.abort();
    const grace = Date.now() + 2_000;
    while (!this.ended && this.deciding.size > 0 && Date.now() < grace) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    if (this.ended) return;
    for (const msg of [...this.heldLists.drain(), ...this.heldCalls.drain()]) this.answerPending(msg);
    for (const [wire, p] of this.upstream.entries()) {
      if (p.origin !== "client" || p.listen) continue;
      this.upstream.delete(wire, p.clientId);
      if (p.intent)
        this.records.callInterrupted(
          p.clientId,
          p.tool,
          p.gen.epoch,
          "epoch_transition",
          "unknown",
          readMethod(p),
        );
      const e = refuse.shuttingDown();
      this.o.downstream.send(errorResponse(p.clientId, e.code, e.message, e.data));
    }
  }

  /**
   * The tools/calls at the server right now, in the current epoch, with their scopes: the egress
   * proxy's release window. Read from the table of forwarded requests, so a call stops counting
   * the moment its answer (or its process's end) removes it there.
   */
  callsInFlight(): {
    epoch: string | null;
    inFlight: { callId: string; epoch: string; scopes: readonly string[]; key: string }[];
  } {
    const gen = this.gen;
    const out: { callId: string; epoch: string; scopes: readonly string[]; key: string }[] = [];
    // No live process: what the server sends now is the code that is starting (or the last of the
    // one stopping), not this epoch's: no epoch, until the next is recorded.
    if (!gen?.alive) return { epoch: null, inFlight: out };
    if (this.ended) return { epoch: gen.epoch, inFlight: out };
    // key: the wire id, never reused in this gateway (a client may send one request id twice)
    for (const [wire, p] of this.upstream.entries())
      if (p.origin === "client" && p.method === "tools/call" && p.gen === gen && p.scopes?.length)
        out.push({
          callId: JSON.stringify(p.clientId),
          epoch: gen.epoch,
          scopes: p.scopes,
          key: String(wire),
        });
    return { epoch: gen.epoch, inFlight: out };
  }

  /** Client requests not answered yet (held, being decided, or at the server). */
  private unanswered(): number {
    let n =
      this.heldCalls.size + this.heldLists.size + this.deciding.size + (this.beforeFirstEpoch?.length ?? 0);
    for (const [, p] of this.upstream.entries()) if (p.origin === "client" && !p.listen) n++;
    return n;
  }

  /** Ends the client connection: every open request gets an answer first. */
  end(reason: string, exitCode: number): void {
    if (this.ended) return;
    this.ended = true;
    this.elicitation.close();
    this.o.log.info(reason);
    for (const msg of [...this.heldLists.drain(), ...this.heldCalls.drain()]) this.answerPending(msg);
    this.o.onEnd(reason, exitCode);
  }
}

/**
 * The key of the server's request a cancellation from the server names: a number by the text it
 * is written with in the notification, when that text is of the parsed value (see `writtenIdKey`).
 */
function cancelledKey(requestId: Id, text: string): string {
  if (typeof requestId !== "number") return writtenIdKey(requestId, "");
  const raw = rawRequestId(text);
  const written = raw !== null && safeParse(raw) === requestId ? raw : JSON.stringify(requestId);
  return writtenIdKey(requestId, written);
}

function safeParse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** `log` with every line passed through `scrub` first (`debugging` kept: hot paths read it). */
function scrubbedLogger(log: Logger, scrub: (text: string) => string): Logger {
  return {
    info: (m) => log.info(scrub(m)),
    warn: (m) => log.warn(scrub(m)),
    status: (line) => log.status(scrub(line)),
    debug: (m) => {
      if (log.debugging !== false) log.debug(scrub(m));
    },
    debugging: log.debugging,
  };
}

/** The standard error for a request that is not valid JSON-RPC (`reason`: what is wrong with it). */
function invalidMessage(reason: string): ErrorObject {
  return { code: INVALID_REQUEST, message: `Invalid JSON-RPC message: ${reason}.` };
}

/** The method a recorded end names: a guarded read's (a tools/call's end names its tool). */
function readMethod(p: { method: string }): string | undefined {
  return p.method === "tools/call" ? undefined : p.method;
}

/**
 * A call being decided: whether the client cancelled it, and the signal that stops a wait for a
 * human. The AbortController behind it is made only when a wait asks for the signal: most calls
 * never wait, and one per call was a measurable share of the hot path.
 */
class Deciding {
  cancelled = false;
  private aborted = false;
  private controller: AbortController | null = null;

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.aborted) this.controller.abort();
    }
    return this.controller.signal;
  }

  abort(): void {
    this.aborted = true;
    this.controller?.abort();
  }
}

/** Where an epoch's code runs, for status lines: its process, or the URL of a remote server. */
function where(gen: Generation): string {
  const remote = gen.record.remote;
  return remote ? `url=${remote.url}` : `pid=${gen.record.processId}`;
}
