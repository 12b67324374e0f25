import { refuse } from "../guard/refusals.js";
import { IdMap, idKey } from "../relay/ids.js";
import {
  type ErrorObject,
  errorResponse,
  type Id,
  type Notification,
  type Request,
  type Response,
} from "../relay/jsonrpc.js";
import { type IdSpan, spliceId } from "../relay/rawSplice.js";
import type { LinkGeneration as Generation, ServerLink } from "../supervisor/link.js";
import { STDIN_BACKLOG_BYTES } from "../supervisor/workerPipes.js";
import { seconds } from "../util/duration.js";
import type { Logger } from "../util/log.js";
import { SparingWarnings } from "../util/sparingWarnings.js";
import type { CallName } from "./clientIdText.js";
import type { ClientSession } from "./clientSession.js";
import type { Downstream } from "./downstream.js";
import type { ProgressTokens } from "./progress.js";
import { listenResourceUris, SUBSCRIPTION_ID_META } from "./protocol.js";
import type { GatewayRecords } from "./records.js";
import { NotWritten, UnreadInput } from "./unreadInput.js";

/** A client request at the server, under the wire id the gateway gave it. */
export interface ClientPending {
  origin: "client";
  clientId: Id;
  method: string;
  gen: Generation;
  tool?: string;
  /** what the audit names the call by (the client's id as it wrote it, and its call key); set with `intent` */
  call?: CallName;
  /** a long-lived subscriptions/listen: re-opened on a new epoch instead of failed */
  listen?: Request;
  /** a resources/subscribe: what the client subscribes to, kept once the server accepts it */
  subscribes?: { uri: string; params: Record<string, unknown> };
  /**
   * a subscriptions/listen's resource subscriptions (`resourceSubscriptions`), each decided and
   * recorded (request_forwarded) as a resources/subscribe of its uri: their intents, open until
   * the listen is acknowledged (or answered, cancelled, its process gone), then emptied
   */
  listenReads?: ListenRead[];
  /**
   * a subscriptions/listen's resource uris the guard refused, taken out of it before it was sent:
   * its acknowledgement tells the client so (REFUSED_SUBSCRIPTIONS_META)
   */
  listenRefused?: { uri: string; error: ErrorObject }[];
  /**
   * a subscriptions/listen's prompt and resource list_changed notifications its latest
   * acknowledgement honoured (and it asked for): carried to each re-open, where the client is sent
   * them (a new process offers what its code offers now, and announces no change)
   */
  listenLists?: readonly string[];
  /** the client's initialize: its params, the handshake replayed to a new process once a server answers them */
  initializes?: Record<string, unknown>;
  /** a logging/setLevel: its params (without `_meta`), kept by the session once the server accepts them */
  setsLevel?: Record<string, unknown>;
  /** a forwarded tools/call's credential scopes: what the egress proxy may release while it runs */
  scopes?: readonly string[];
  /**
   * a call forwarded under a session grant: whether that grant still holds (revoked, ended, its
   * signer's authority removed: nothing more is released for the call, though it runs on)
   */
  holds?: () => boolean;
  /**
   * its intent is in the audit (a tools/call, or a guarded read's request_forwarded): exactly
   * one end is written for it (its result, or call_interrupted), then this is cleared
   */
  intent?: boolean;
  /**
   * the client cancelled it: nobody waits for its answer (dropped if the server still sends one),
   * its client id is free again, and its wire id stays reserved until that answer or its
   * process's end, so a late answer can never be taken for a newer request's
   */
  cancelled?: boolean;
  /** the client's progress token on it (`params._meta.progressToken`): what the server's progress names it by */
  progressToken?: string | number;
}

/** The gateway's own request to a generation (its catalog fetch, a replayed handshake, its subscription). */
interface OwnPending {
  origin: "gateway";
  method: string;
  gen: Generation;
  /** `text`: the answer as the server wrote it (scrubbed), when it came from the server */
  resolve: (r: Response | null, text?: string) => void;
}

export type Pending = ClientPending | OwnPending;

/**
 * A client's subscriptions/listen to re-open on a new process: as last sent, the epoch that last
 * held it, and the list_changed notifications its latest acknowledgement honoured (`listenLists`).
 */
export interface ListenToReopen {
  request: Request;
  epoch: string;
  lists?: readonly string[];
}

/**
 * Tells the client, on its listen `id` (the client's id), that each list of `methods` changed: a
 * listen re-opened on a new process, which offers what its code offers now and announces nothing.
 * Tagged with the listen's id, as every notification under a listen is; nothing when none.
 */
export function sendListsChanged(down: Downstream, id: Id, methods: readonly string[] | undefined): void {
  for (const method of methods ?? [])
    down.send({ jsonrpc: "2.0", method, params: { _meta: { [SUBSCRIPTION_ID_META]: id } } });
}

/**
 * The end of the client's subscriptions/listen `id` when the gateway shuts down: what a 2026-07-28
 * server sends for each listen still open at its own shutdown, a result for the listen's id with
 * `resultType` "complete" and `_meta` naming the subscription (docs/protocol-eras.md).
 */
export function listenEndAtShutdown(id: Id): Response {
  return { jsonrpc: "2.0", id, result: { resultType: "complete", _meta: { [SUBSCRIPTION_ID_META]: id } } };
}

/** One resource subscription of a subscriptions/listen, recorded as its own read (its intent's name). */
export interface ListenRead {
  name: CallName;
  uri: string;
  epoch: string;
}

/** What a forwarded client request carries besides its message. */
export type ForwardExtra = Pick<
  ClientPending,
  | "tool"
  | "call"
  | "listen"
  | "scopes"
  | "holds"
  | "intent"
  | "subscribes"
  | "listenReads"
  | "listenRefused"
  | "listenLists"
  | "setsLevel"
  | "initializes"
>;

/** A client's line as written, with where its id lies when it may be relayed with only that id replaced. */
export interface WrittenLine {
  text: string;
  span: IdSpan | null;
}

/** What the client sent while a new process's replayed handshake was under way, sent once it completes. */
type BehindHandshake =
  | { request: Request; extra: ForwardExtra; line: WrittenLine | undefined }
  | { notification: Notification };

/** A forwarded tools/call at the server, as the egress proxy's release window counts it. */
export interface CallInFlight {
  callId: string;
  /** the call's key in the audit (`callKey` of its tool_called), which egress records carry too */
  callKey?: number;
  epoch: string;
  scopes: readonly string[];
  key: string;
}

export interface InFlightPorts {
  link: ServerLink;
  downstream: Downstream;
  records: GatewayRecords;
  /** the client's progress tokens the gateway spoke under: freed when the gateway answers a request itself */
  progress: ProgressTokens;
  /** the client's modern envelope, put on the gateway's own requests */
  session: Pick<ClientSession, "paramsFor" | "initializeLost" | "hasNegotiated" | "listenClosed">;
  /** the generation requests go to now: null before the first epoch */
  current(): Generation | null;
  log: Logger;
}

/**
 * The requests at the server, under the wire ids the gateway puts on them: the client's (relayed,
 * or forwarded after the guard) and the gateway's own. A request whose intent is in the audit (a
 * tools/call, a guarded read's request_forwarded) gets exactly one end here: its result, or
 * call_interrupted when the client cancels it, its process goes away or the gateway stops.
 */
export class InFlight {
  private readonly upstream = new IdMap<Pending>((p) => this.left(p));
  /**
   * The client's requests in `upstream` it waits on (not cancelled): what MAX_AT_SERVER bounds,
   * counted as they come and go rather than by a walk of every request at each new one.
   */
  private waiting = 0;
  /**
   * The wire ids of the client's requests it cancelled that are still in `upstream`, oldest
   * first: at most MAX_CANCELLED_KEPT are kept (see `cancel`).
   */
  private readonly cancelledWires: number[] = [];
  private readonly thinned: SparingWarnings;
  /**
   * The client's requests in `upstream` by their progress token (`idKey` of it): what the server's
   * notifications/progress is checked against (`carriesToken`), once per notification, without a
   * walk of every request in flight.
   */
  private readonly byToken = new Map<string, Set<ClientPending>>();
  /**
   * The last moment (performance.now()) a client request was at the server: when one was
   * forwarded, or answered. With unanswered(), whether one was there at any moment since a time.
   */
  private busyAt = Number.NEGATIVE_INFINITY;
  /**
   * The gateway's own requests it gave up on (their timeout passed), by wire id: no longer in
   * flight, remembered only so that a late answer is named as such when it is dropped. The
   * latest MAX_GAVE_UP, for as long as their generation lives.
   */
  private readonly gaveUp = new Map<number, { method: string; gen: Generation }>();
  /**
   * The generation whose replayed handshake (legacy: initialize, then notifications/initialized;
   * modern: server/discover) is under way, and what the client sent meanwhile, in order: nothing
   * but the handshake reaches a new process until it is complete (MCP: a server may refuse, or
   * misread, a request before it is initialized). Sent once it completes; answered if it never
   * does (the process went away, the connection ends).
   */
  private handshake: { gen: Generation; behind: BehindHandshake[]; bytes: number } | null = null;
  /**
   * What waited for a replayed handshake whose process went away before it was complete, never
   * sent, and carried to the next generation rather than answered server_unavailable: the client's
   * subscriptions (subscriptions/listen), re-opened there once its own handshake is complete
   * (reopenListens), as one already at the server is (a subscription outlives a process); and its
   * reads that change nothing (CARRIED_READS), which wait behind the next one's handshake as if
   * sent then (what the client would do on server_unavailable, and nothing of them ran). And the
   * client's own initialize, sent when no process was alive and nothing was negotiated yet (its
   * first was lost to an epoch change, and it sends it again as told): the next generation has no
   * handshake to replay, so this one is its handshake, sent there as soon as it is up
   * (sendCarriedInitialize).
   */
  private carried: { request: Request; extra: ForwardExtra; line?: WrittenLine }[] = [];

  private readonly unread: UnreadInput;

  constructor(private readonly p: InFlightPorts) {
    this.unread = new UnreadInput(p.log);
    this.thinned = new SparingWarnings((line) => p.log.warn(line));
  }

  /**
   * server_unavailable when MAX_AT_SERVER of the client's requests already wait at the server for
   * its answer, said on stderr sparingly (the client decides how often); null otherwise. Only
   * called for a request about to be refused by it (a call or guarded read before its decision
   * and after it, any other request as it is forwarded).
   */
  tooManyAtServer(): ErrorObject | null {
    if (this.waiting < MAX_AT_SERVER) return null;
    const why = `${this.waiting} requests of the client's wait for the server's answer, the most portcullis lets wait at one server`;
    this.thinned.say("too-many", `refused a request of the client's, not sent to the server: ${why}`);
    return refuse.serverNotAnswering(why);
  }

  /** The gateway replays the client's handshake to `gen`: what the client sends waits for its end. */
  handshakeBegins(gen: Generation): void {
    // (what waited for an earlier generation's was answered when it went away)
    if (this.handshake && this.handshake.gen !== gen)
      this.refuseBehindHandshake(refuse.serverDown(this.p.link) ?? refuse.serverUnavailable());
    // the reads carried from a process that died before its handshake completed come first
    const reads = this.takeCarriedReads();
    this.handshake = {
      gen,
      behind: reads.map(({ request, extra, line }) => ({ request, extra, line })),
      bytes: 0,
    };
  }

  /**
   * Why nothing more may wait behind `h`, the handshake replayed to a new process: more than
   * STDIN_BACKLOG_BYTES of the client's messages wait there (what may wait for a server that reads
   * none of its input); null otherwise.
   */
  private behindTooMuch(h: { bytes: number }): string | null {
    return h.bytes > STDIN_BACKLOG_BYTES
      ? `the new server process has not answered the handshake replayed to it: ${(h.bytes / (1024 * 1024)).toFixed(1)} MiB sent by the client wait behind it`
      : null;
  }

  /** The carried reads (not the subscriptions), no longer carried. */
  private takeCarriedReads(): { request: Request; extra: ForwardExtra; line?: WrittenLine }[] {
    if (this.carried.length === 0) return [];
    const reads = this.carried.filter((c) => c.extra.listen === undefined);
    this.carried = this.carried.filter((c) => c.extra.listen !== undefined);
    return reads;
  }

  /**
   * `gen` is up with no handshake to replay (nothing was negotiated): the client's own initialize
   * carried to it, if any, is sent now; its answer negotiates the session as a first one does.
   */
  sendCarriedInitialize(gen: Generation): void {
    const i = this.carried.findIndex((c) => c.request.method === "initialize");
    if (i < 0 || this.p.current() !== gen) return;
    const [c] = this.carried.splice(i, 1);
    if (c) this.forward(c.request, c.extra, c.line);
  }

  /**
   * Whether `msg` is the client's initialize and a next generation is to come (no pause, the server
   * reachable): carried to it rather than refused server_unavailable (a client gives up on a
   * failed initialize). With nothing negotiated yet (the client was told its lost initialize should
   * be sent again) it is that generation's handshake (sendCarriedInitialize); once negotiated (a
   * client that initializes again on the same pipe, which the SDK's server answers), it waits
   * behind the session's replayed handshake there, as one sent while that handshake is under way
   * does. Its refusals, if none comes, are answerBehindHandshake's.
   */
  private carriesInitialize(msg: Request, extra: ForwardExtra, line: WrittenLine | undefined): boolean {
    if (msg.method !== "initialize") return false;
    if (refuse.serverDown(this.p.link) !== null) return false;
    this.carried.push({ request: msg, extra, line });
    return true;
  }

  /** Whether `gen`'s replayed handshake is under way (nothing else may be sent to it). */
  handshaking(gen: Generation): boolean {
    return this.handshake?.gen === gen;
  }

  /** `gen`'s replayed handshake is complete: what the client sent meanwhile goes on, in order. */
  handshakeDone(gen: Generation): void {
    const h = this.handshake;
    if (h?.gen !== gen) return;
    this.handshake = null;
    for (const b of h.behind) {
      if ("request" in b) this.forwardNow(b.request, b.extra, b.line);
      else this.p.link.send(b.notification);
    }
  }

  /**
   * Forwards a request the gateway kept (behind a replayed handshake, carried to a new process, a
   * listen re-opened there), whose sender is not there to learn that it failed. A listen the
   * process cannot take (its stdin broke while it still runs: the gateway waits a moment for it
   * to exit before it ends its epoch) is answered server_unavailable, and is then over for the
   * gateway as one the server ended by answering it (ServerMessages.listenAnswered): none of the
   * gateway's own list_changed goes out under its id, nor is it re-opened on the next process.
   * Handled as the answer goes out, while the id is still that listen's.
   */
  private forwardNow(request: Request, extra: ForwardExtra, line?: WrittenLine): boolean {
    if (this.forward(request, extra, line)) return true;
    if (extra.listen === undefined) return false;
    this.p.session.listenClosed(request.id);
    // (its resource subscriptions, had it any, were never sent: their records end here)
    for (const r of extra.listenReads ?? [])
      this.p.records.callInterrupted(
        r.name,
        undefined,
        r.epoch,
        "server_unavailable",
        "not_forwarded",
        "subscriptions/listen",
      );
    return false;
  }

  /**
   * The requests that wait for a replayed handshake are answered with `e` (nothing of them was
   * sent), its notifications dropped: the handshake will not complete (its process went away).
   * A subscription is carried to the next generation instead (`carried`), and so is a read that
   * changes nothing while a next process is to come (no pause, the server reachable).
   */
  private refuseBehindHandshake(e: ErrorObject): void {
    const h = this.handshake;
    if (h) {
      const next = refuse.serverDown(this.p.link) === null;
      const carries = (b: BehindHandshake): b is Extract<BehindHandshake, { request: Request }> =>
        "request" in b &&
        (b.extra.listen !== undefined ||
          (next && (CARRIED_READS.has(b.request.method) || b.request.method === "initialize")));
      for (const b of h.behind) if (carries(b)) this.carried.push(b);
      h.behind = h.behind.filter((b) => !carries(b));
      for (const b of h.behind) if ("request" in b) this.answerUnsent(b.request, e);
    }
    this.handshake = null;
  }

  /** `request`, never sent, is answered `e` by the gateway. */
  private answerUnsent(request: Request, e: ErrorObject): void {
    this.p.progress.ended(request.id);
    this.p.downstream.send(errorResponse(request.id, e.code, e.message, e.data));
  }

  /**
   * The requests that wait for a replayed handshake are answered with `e` now (nothing of them was
   * sent): no server can answer for now (supervision paused, a remote server unreachable), or the
   * connection ends. The handshake is still waited for: nothing else reaches its process meanwhile.
   */
  answerBehindHandshake(e: ErrorObject): void {
    const h = this.handshake;
    // the reads carried to a next process wait for it no more either
    const requests: { request: Request }[] = this.takeCarriedReads();
    if (h) {
      for (const b of h.behind) if ("request" in b) requests.push(b);
      h.behind = h.behind.filter((b) => !("request" in b));
    }
    for (const { request } of requests) this.answerUnsent(request, e);
  }

  /** A client notification for the server: sent, or kept while a replayed handshake is under way. */
  notify(msg: Notification): boolean {
    const h = this.handshake;
    if (h && h.gen === this.p.current()) {
      const why = this.behindTooMuch(h);
      if (why !== null) {
        this.unread.drop("a notification of the client's", why);
        return false;
      }
      h.bytes += JSON.stringify(msg).length;
      h.behind.push({ notification: msg });
      return true;
    }
    return this.p.link.send(msg);
  }

  /** Forwards a client request upstream under a gateway id. */
  forward(msg: Request, extra: ForwardExtra = {}, line?: WrittenLine): boolean {
    const gen = this.p.current();
    if (!gen?.alive) {
      if (msg.method === "tools/call") return false;
      if (this.carriesInitialize(msg, extra, line)) return true;
      const e = refuse.serverDown(this.p.link) ?? refuse.serverUnavailable();
      this.p.downstream.send(errorResponse(msg.id, e.code, e.message, e.data));
      return false;
    }
    // Kept, in order, until the new process's handshake is complete. (A guarded request never
    // gets here meanwhile: its epoch is not ready before its catalog, fetched after the handshake.)
    // No server can answer for now (a remote one unreachable while its initialize is sent again):
    // answered at once, as when the link refuses it.
    if (this.handshake?.gen === gen) {
      const down = refuse.serverDown(this.p.link);
      if (down !== null) {
        if (msg.method !== "tools/call")
          this.p.downstream.send(errorResponse(msg.id, down.code, down.message, down.data));
        return false;
      }
      // A process that reads none of its input never answers its handshake: what the client
      // sends meanwhile would wait in the gateway's memory until the handshake's timeout, as
      // much as the client sends. Past the bound of what may wait for a server, refused.
      const why = this.behindTooMuch(this.handshake);
      if (why !== null) {
        const e = refuse.serverNotReading(why);
        if (msg.method !== "tools/call")
          this.p.downstream.send(errorResponse(msg.id, e.code, e.message, e.data));
        return false;
      }
      this.handshake.bytes += line?.text.length ?? JSON.stringify(msg).length;
      this.handshake.behind.push({ request: msg, extra, line });
      return true;
    }
    // The server reads none of its input: a request it would not read is answered now, not kept
    // in the gateway's memory behind the others. Not a call or guarded read: checked before its
    // decision and after it (guardedRequests.ts), its record closed there; nor a handshake, which
    // has its own course. A listen is checked here: one that names resources once its uris are
    // decided (listens decided together all passed the check before their decision; the caller
    // closes their records), one that names none as any request relayed as it came.
    // So is a request past the bound of those waiting for the server's answer (a server that
    // reads them but answers none): each would hold more of the gateway's memory.
    const deaf = extra.intent || extra.initializes ? null : this.p.link.notReading;
    const refused = deaf
      ? refuse.serverNotReading(deaf)
      : extra.intent || extra.initializes
        ? null
        : this.tooManyAtServer();
    if (refused) {
      this.p.downstream.send(errorResponse(msg.id, refused.code, refused.message, refused.data));
      return false;
    }
    const token = progressTokenOf(msg);
    const entry: ClientPending = {
      origin: "client",
      clientId: msg.id,
      method: msg.method,
      gen,
      ...(token === undefined ? {} : { progressToken: token }),
      ...extra,
    };
    const wire = this.upstream.add(entry, msg.id);
    this.waiting++;
    if (token !== undefined) {
      const key = idKey(token);
      const same = this.byToken.get(key);
      if (same) same.add(entry);
      else this.byToken.set(key, new Set([entry]));
    }
    this.busyAt = performance.now();
    if (!this.sendUpstream(msg, wire, line)) {
      this.upstream.delete(wire, msg.id);
      // a process that died before its first message (it was started while its identity was
      // captured): answered here, as above, rather than left waiting
      if (!gen.alive && this.carriesInitialize(msg, extra, line)) return true;
      if (msg.method !== "tools/call") {
        // a process that runs on with its input closed is not "not running": said as it is
        const e =
          refuse.serverDown(this.p.link) ??
          (gen.alive && this.p.link.inputClosed
            ? refuse.serverInputClosed(this.p.link.inputClosed)
            : refuse.serverUnavailable());
        this.p.downstream.send(errorResponse(msg.id, e.code, e.message, e.data));
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
  private sendUpstream(msg: Request, wire: number, line: WrittenLine | undefined): boolean {
    const link = this.p.link;
    if (line?.span && link.sendText) return link.sendText(spliceId(line.text, line.span, String(wire)));
    return link.send({ ...msg, id: wire });
  }

  /**
   * The gateway's own request to a generation; resolves null when that generation goes away.
   * With `timeoutMs`, the gateway gives up on it when no answer came by then: it is no longer in
   * flight (an answer that still comes is dropped, `lateAnswer`), the server is sent
   * `notifications/cancelled` for it (MCP: what a sender that gives up on a request says), and
   * the promise rejects ("the server did not answer <method> within N s"). Without one it waits
   * as long as the generation lives (a subscription, which is answered only when it ends).
   * `written` is given the answer's text as the server wrote it (scrubbed) before the promise
   * resolves: what the gateway reads exactly (a replayed handshake's numbers that re-serialising
   * would change).
   * While the server reads none of its input (ServerLink.notReading) it is not written, and the
   * promise rejects with NotWritten: written, it would wait behind what the server does not read
   * (a catalog page for its timeout, then again at each retry; a subscription for as long as the
   * process lives), and a burst of them (subscriptions re-opened together) would put their whole
   * size in the gateway's memory. Not a replayed handshake: it is the first message a new process
   * gets, bounded by its own timeout.
   */
  request(
    gen: Generation,
    method: string,
    params: Record<string, unknown>,
    timeoutMs?: number,
    written?: (text: string) => void,
  ): Promise<Response | null> {
    return new Promise((resolve, reject) => {
      if (!gen.alive) return resolve(null);
      const deaf = HANDSHAKES.has(method) ? null : this.p.link.notReading;
      if (deaf) return reject(new NotWritten(method, deaf));
      const p = this.p.session.paramsFor(params);
      let timer: NodeJS.Timeout | null = null;
      const settle = (r: Response | null, text?: string) => {
        if (timer !== null) clearTimeout(timer);
        if (r !== null && text !== undefined) written?.(text);
        resolve(r);
      };
      // resolved with null by endGeneration when this generation goes away first
      const entry: OwnPending = { origin: "gateway", method, gen, resolve: settle };
      const wire = this.upstream.add(entry);
      if (!this.p.link.send({ jsonrpc: "2.0", id: wire, method, params: p })) {
        this.upstream.delete(wire);
        resolve(null);
        return;
      }
      if (timeoutMs === undefined) return;
      timer = setTimeout(() => {
        if (this.upstream.get(wire) !== entry) return; // answered, or its generation went away
        const why = `the server did not answer ${method} within ${seconds(timeoutMs)}`;
        this.upstream.delete(wire);
        this.gaveUp.set(wire, { method, gen });
        if (this.gaveUp.size > MAX_GAVE_UP) this.gaveUp.delete(this.gaveUp.keys().next().value as number);
        // False (ignored) when its process is going away: `down` follows, and nothing is owed.
        // Not written to a server that reads none of its input (it would not read it either).
        if (!this.p.link.notReading)
          this.p.link.send({
            jsonrpc: "2.0",
            method: "notifications/cancelled",
            params: this.p.session.paramsFor({ requestId: wire, reason: why }),
          });
        reject(new Error(why));
      }, timeoutMs);
      timer.unref(); // a request the gateway waits on never keeps an ending gateway alive
    });
  }

  /**
   * The method of the gateway's own request under `wire` that it gave up on (its timeout passed):
   * what the server's late answer to it answers, now dropped; undefined for any other id.
   */
  lateAnswer(wire: Id | null, from: Generation): string | undefined {
    if (typeof wire !== "number") return undefined;
    const late = this.gaveUp.get(wire);
    // (the request was written to another process: not this one's late answer)
    if (late?.gen !== from) return undefined;
    this.gaveUp.delete(wire);
    return late.method;
  }

  /**
   * The gateway answers `p` itself (its process went away, or the server is being shut down): the
   * server's answer, which would have freed its progress token (ServerMessages), will never come.
   */
  private answer(p: ClientPending, response: Response): void {
    this.p.progress.ended(p.clientId);
    this.p.downstream.send(response);
  }

  /**
   * Whether a request of the client under `id` is at the server (not one it cancelled), or waits
   * for a replayed handshake to be sent there.
   */
  carries(id: Id): boolean {
    return this.upstream.wireFor(id) !== undefined || this.behindIndex(id) >= 0 || this.carriedIndex(id) >= 0;
  }

  /**
   * Whether a request of the client at the server process of `gen` (not one it cancelled) carries
   * progress token `token`: the only requests the server's notifications/progress may speak of.
   */
  carriesToken(token: string | number, gen: Generation): boolean {
    const same = this.byToken.get(idKey(token));
    if (same === undefined) return false;
    for (const entry of same) if (!entry.cancelled && entry.gen === gen) return true;
    return false;
  }

  /** `p` left `upstream`: no longer counted as waiting, nor found by its progress token. */
  private left(p: Pending): void {
    if (p.origin !== "client") return;
    if (!p.cancelled) this.waiting--;
    if (p.progressToken === undefined) return;
    const key = idKey(p.progressToken);
    const same = this.byToken.get(key);
    if (same?.delete(p) && same.size === 0) this.byToken.delete(key);
  }

  /** Where the client's subscription or read under `id` is carried to the next generation; -1 if none is. */
  private carriedIndex(id: Id): number {
    if (this.carried.length === 0) return -1;
    const key = idKey(id);
    return this.carried.findIndex((c) => idKey(c.request.id) === key);
  }

  /** Where the request of the client under `id` waits for a replayed handshake; -1 if none does. */
  private behindIndex(id: Id): number {
    const behind = this.handshake?.behind;
    if (!behind?.length) return -1;
    const key = idKey(id);
    return behind.findIndex((b) => "request" in b && idKey(b.request.id) === key);
  }

  /**
   * The request a message from the server process of `from` answers (by its wire id), no longer
   * in flight; undefined when nothing of `from`'s waits on that id (see `heldElsewhere`).
   */
  take(wire: Id | null, from: Generation): Pending | undefined {
    const entry = this.upstream.get(wire);
    if (entry === undefined || !belongsTo(entry, from)) return undefined;
    if (entry.origin === "client") this.busyAt = performance.now();
    this.upstream.delete(wire as number, entry.origin === "client" ? entry.clientId : undefined);
    return entry;
  }

  /**
   * The client's open subscription a subscription id (a wire id) names, when it lives on the
   * server process of `from`; else undefined (see `heldElsewhere`).
   */
  subscription(wire: Id, from: Generation): ClientPending | undefined {
    const entry = this.upstream.get(wire);
    return entry?.origin === "client" && belongsTo(entry, from) ? entry : undefined;
  }

  /**
   * The epoch a request under `wire` belongs to, when a message of `from`'s names it but `from`
   * may not speak for it: it was written to another process, or it is a subscription whose
   * process went away (kept, to be re-opened on the next). Null when nothing is under `wire`, or
   * it is `from`'s. Wire ids are never reused, yet the next process reads the same ids from its
   * own counter (or is hostile): only the process the request was written to may answer it.
   */
  heldElsewhere(wire: Id | null, from: Generation): Generation | null {
    const entry = this.upstream.get(wire);
    return entry === undefined || belongsTo(entry, from) ? null : entry.gen;
  }

  /** `p`'s one end, when its intent is still open: its result, with the outcome the server gave. */
  resulted(p: ClientPending, outcome: "ok" | "error" | "tool-error"): void {
    if (p.listenReads?.length) this.listenAcknowledged(p, outcome === "ok" ? null : []);
    if (!p.intent) return;
    p.intent = false;
    this.p.records.toolResult(callNameOf(p), p.tool, p.gen.epoch, outcome, readMethod(p));
  }

  /**
   * The server acknowledged (or answered) the subscriptions/listen `p`: each of its resource
   * subscriptions still open gets its end, `ok` when the server honoured its uri (`honoured`: the
   * uris its acknowledgement lists; null: all of them), else `error` (the server narrowed it away).
   */
  listenAcknowledged(p: ClientPending, honoured: readonly unknown[] | null): void {
    const reads = p.listenReads;
    if (!reads?.length) return;
    p.listenReads = [];
    for (const r of reads)
      this.p.records.toolResult(
        r.name,
        undefined,
        r.epoch,
        honoured === null || honoured.includes(r.uri) ? "ok" : "error",
        "subscriptions/listen",
      );
  }

  /** `p`'s one end, when its intent is still open: sent, and what the server did is not known. */
  private interrupted(
    p: ClientPending,
    reason: "epoch_transition" | "cancelled",
    outcome: "unknown" | "not_run" = "unknown",
  ): void {
    const reads = p.listenReads;
    if (reads?.length) {
      p.listenReads = [];
      for (const r of reads)
        this.p.records.callInterrupted(r.name, undefined, r.epoch, reason, outcome, "subscriptions/listen");
    }
    if (!p.intent) return;
    p.intent = false;
    this.p.records.callInterrupted(callNameOf(p), p.tool, p.gen.epoch, reason, outcome, readMethod(p));
  }

  /**
   * The client cancelled its request `requestId`: the wire id the cancellation goes on to the
   * server under (`closedListen`: it ended a subscription; `wire` null: it was never sent, it
   * waited for a replayed handshake, or it is an initialize, whose cancellation the server is
   * not sent), or undefined when the request was already answered
   * (nothing to cancel).
   *
   * The client gets no answer for it any more (MCP: a cancelled request is not answered, and a
   * server that obeys never answers it): it no longer holds the client's shutdown, nor its id.
   * Its entry stays under its wire id, marked, so that an answer the server still sends is
   * recognised and dropped, never routed to a newer request the client sent under the same id.
   */
  cancel(requestId: Id): { wire: number | null; closedListen: boolean } | undefined {
    // still waiting for a replayed handshake: forgotten, nothing of it was sent (no wire id)
    const behind = this.behindIndex(requestId);
    if (behind >= 0) {
      const [b] = this.handshake?.behind.splice(behind, 1) ?? [];
      return { wire: null, closedListen: !!b && "request" in b && b.extra.listen !== undefined };
    }
    // a subscription or read carried to the next generation: never sent either
    const carried = this.carriedIndex(requestId);
    if (carried >= 0) {
      const [c] = this.carried.splice(carried, 1);
      return { wire: null, closedListen: c?.extra.listen !== undefined };
    }
    const wire = this.upstream.wireFor(requestId);
    if (wire === undefined) return undefined; // already answered: nothing to cancel
    const entry = this.upstream.get(wire);
    if (entry?.origin !== "client") return undefined;
    // Its end, once, now: whatever the server does with it is not known.
    this.interrupted(entry, "cancelled");
    const closedListen = entry.listen !== undefined;
    // MCP: initialize MUST NOT be cancelled (the SDK's request timeout cancels it all the same):
    // over for the client, its late answer dropped, and the server is not told (no wire id)
    if (entry.method === "initialize") {
      this.keepCancelled(entry, wire, requestId);
      return { wire: null, closedListen };
    }
    // a closed subscription: no more notifications on it, and not re-opened on a new epoch
    if (closedListen) this.upstream.delete(wire, requestId);
    else this.keepCancelled(entry, wire, requestId);
    return { wire, closedListen };
  }

  /**
   * `entry`, cancelled by the client, stays under `wire` only to recognise a late answer: a server
   * that obeys the cancellation never sends one, so these would stay as long as the process lives,
   * as many as the client cancels. Past MAX_CANCELLED_KEPT the oldest is forgotten: its late
   * answer is then dropped as one under an unknown id (wire ids are never reused, so it can never
   * reach another request).
   */
  private keepCancelled(entry: ClientPending, wire: number, requestId: Id): void {
    entry.cancelled = true;
    this.waiting--;
    this.upstream.release(wire, requestId);
    this.cancelledWires.push(wire);
    if (this.cancelledWires.length <= MAX_CANCELLED_KEPT) return;
    // (each one once: those answered or gone with their process meanwhile are skipped)
    while (this.cancelledWires.length > MAX_CANCELLED_KEPT) {
      const oldest = this.cancelledWires.shift() as number;
      const p = this.upstream.get(oldest);
      if (p?.origin === "client" && p.cancelled) this.upstream.delete(oldest);
    }
  }

  /**
   * `gen` went away: the gateway's own requests to it resolve null, the client's are answered
   * epoch_transition (never retried: the server may have acted) with their intents closed.
   * A subscription stays, to be re-opened on the next epoch.
   */
  endGeneration(gen: Generation): void {
    // nothing waiting for its handshake was sent: answered as a request to no live process is
    if (this.handshake?.gen === gen)
      this.refuseBehindHandshake(refuse.serverDown(this.p.link) ?? refuse.serverUnavailable());
    for (const [wire, late] of this.gaveUp) if (late.gen === gen) this.gaveUp.delete(wire);
    for (const [wire, p] of this.upstream.entries()) {
      if (p.gen !== gen) continue;
      if (p.origin === "gateway") {
        this.upstream.delete(wire);
        p.resolve(null);
        continue;
      }
      if (p.listen) {
        // re-opened on the next epoch; resource subscriptions the process never acknowledged end
        this.interrupted(p, "epoch_transition");
        continue;
      }
      this.upstream.delete(wire, p.clientId);
      if (p.cancelled) continue; // ended when cancelled; nobody waits for it
      // a remote server that answered it for a session it no longer knows did not run it
      const status = gen.notRun?.get(wire);
      this.interrupted(p, "epoch_transition", status === undefined ? "unknown" : "not_run");
      // the client's initialize, answered by no process: told to send its own again (it goes to
      // the next process). Before any was answered nothing is negotiated and nothing replayed; a
      // negotiated client's initialize sent again gets the same advice, never a call's (a generic
      // epoch_transition: "check whether the call took effect")
      const lostInit = p.method === "initialize";
      if (lostInit) this.p.session.initializeLost();
      const e = lostInit
        ? refuse.initializeLost(gen.epoch, this.p.session.hasNegotiated)
        : status !== undefined
          ? refuse.sessionEnded(gen.epoch, status)
          : LOST_READS.has(p.method)
            ? refuse.readLost(p.method, gen.epoch)
            : refuse.epochTransition(gen.epoch, null);
      this.answer(p, errorResponse(p.clientId, e.code, e.message, e.data));
    }
  }

  /**
   * The client's subscriptions, re-opened on the current generation: those at an earlier one, and
   * those carried from a handshake whose process went away before it was complete (sent for the
   * first time, in the order the client sent them).
   */
  reopenListens(): void {
    const current = this.p.current();
    for (const [wire, p] of this.upstream.entries()) {
      // (one the client opened while the handshake was under way was sent to it once it completed)
      if (p.origin !== "client" || !p.listen || p.gen === current) continue;
      // one with resource subscriptions is decided again first, once the new epoch's catalog is
      // verified (takeGuardedListens), as the client's own would be now
      if (listenResourceUris(p.listen) !== undefined) continue;
      // A subscription is not a call: it is re-opened on the new process.
      this.upstream.delete(wire, p.clientId);
      const lists = p.listenLists;
      if (this.forwardNow(p.listen, { listen: p.listen, ...(lists ? { listenLists: lists } : {}) }))
        sendListsChanged(this.p.downstream, p.clientId, lists);
    }
    const carried = this.carried;
    this.carried = [];
    for (const c of carried) this.forwardNow(c.request, c.extra, c.line);
  }

  /**
   * The client's subscriptions/listen with resource subscriptions held by an earlier process than
   * the current one, no longer here: each is to be decided again by the guard for the current
   * epoch before it is re-opened (GuardedRequests.reopenListen), with the epoch that held it. Their ids stay the client's:
   * the caller keeps them as open.
   */
  takeGuardedListens(): ListenToReopen[] {
    const current = this.p.current();
    const out: ListenToReopen[] = [];
    for (const [wire, p] of this.upstream.entries()) {
      if (p.origin !== "client" || !p.listen || p.gen === current) continue;
      if (listenResourceUris(p.listen) === undefined) continue;
      this.upstream.delete(wire, p.clientId);
      out.push({ request: p.listen, epoch: p.gen.epoch, ...(p.listenLists ? { lists: p.listenLists } : {}) });
    }
    return out;
  }

  /**
   * The server is about to be shut down: each client request still at it is answered now (one
   * the client cancelled is only forgotten: it was ended then, and gets no answer).
   */
  refuseAll(): void {
    this.answerBehindHandshake(refuse.shuttingDown());
    for (const [wire, p] of this.upstream.entries()) {
      if (p.origin !== "client") continue;
      if (p.listen) {
        // never answered at shutdown, but its unacknowledged resource subscriptions are over
        this.interrupted(p, "epoch_transition");
        continue;
      }
      this.upstream.delete(wire, p.clientId);
      if (p.cancelled) continue;
      this.interrupted(p, "epoch_transition");
      const e = refuse.shuttingDown();
      this.answer(p, errorResponse(p.clientId, e.code, e.message, e.data));
    }
  }

  /**
   * The gateway is about to close the client's output, its server shut down: each of the client's
   * subscriptions/listen still open (at a process, or carried to a next one that will not come)
   * is ended as a server ends its listens at its shutdown (listenEndAtShutdown), not left without
   * an answer: a listen is never answered while open, and one the server did not end in its grace
   * (a server that reads none of its input never does) had none before the output closed. Its
   * unacknowledged resource subscriptions were closed when its process went away.
   */
  endListens(): void {
    for (const [wire, p] of this.upstream.entries()) {
      if (p.origin !== "client" || !p.listen || p.cancelled) continue;
      this.upstream.delete(wire, p.clientId);
      this.interrupted(p, "epoch_transition");
      this.endListen(p.clientId);
    }
    const carried = this.carried.filter((c) => c.extra.listen !== undefined);
    this.carried = this.carried.filter((c) => c.extra.listen === undefined);
    for (const c of carried) this.endListen(c.request.id);
  }

  private endListen(id: Id): void {
    this.p.session.listenClosed(id);
    this.p.progress.ended(id);
    this.p.downstream.send(listenEndAtShutdown(id));
  }

  /**
   * The tools/calls forwarded to `gen` that may have credentials released while they run. A call
   * the client cancelled is left out: its entry stays only to drop a late answer, and nobody waits
   * for that call any more (a server that obeys the cancellation never answers it, so counting it
   * would keep the window open until the process ends).
   */
  callsAt(gen: Generation): CallInFlight[] {
    const out: CallInFlight[] = [];
    // key: the wire id, never reused in this gateway (a client may send one request id twice)
    for (const [wire, p] of this.upstream.entries())
      if (releasesFor(p, gen))
        out.push({
          callId: callIdOf(p),
          ...(p.call?.key !== undefined ? { callKey: p.call.key } : {}),
          epoch: gen.epoch,
          scopes: p.scopes,
          key: String(wire),
        });
    return out;
  }

  /**
   * The client's handshake requests (legacy: initialize; modern: server/discover) written to `gen`
   * and not answered yet, by wire id with their method: what a worker swapped before the first
   * answer may have read and taken with it (Gateway's probe). Only these: a server answers them
   * before it reads what follows (both MCP SDKs), which is what the probe's ping relies on; any
   * other request may be answered after a ping written behind it without having been lost.
   */
  handshakesAt(gen: Generation): { wire: number; method: string }[] {
    const out: { wire: number; method: string }[] = [];
    for (const [wire, p] of this.upstream.entries())
      if (p.origin === "client" && p.gen === gen && HANDSHAKES.has(p.method) && !p.cancelled)
        out.push({ wire, method: p.method });
    return out;
  }

  /** Whether the client's request written to `gen` under `wire` is still waiting for its answer. */
  waitingAt(wire: number, gen: Generation): boolean {
    const p = this.upstream.get(wire);
    return p !== undefined && p.origin === "client" && p.gen === gen && !p.cancelled;
  }

  /**
   * Whether a client request was at the server at some moment since `since` (performance.now()):
   * one is there now, or one was forwarded or answered since then.
   */
  atServerSince(since: number): boolean {
    return this.busyAt >= since || this.unanswered() > 0;
  }

  /**
   * Client requests at the server not answered yet; long-lived subscriptions do not count, nor
   * requests the client cancelled (it waits for no answer to them).
   */
  unanswered(): number {
    let n = this.handshake?.behind.filter((b) => "request" in b && !b.extra.listen).length ?? 0;
    for (const c of this.carried) if (c.extra.listen === undefined) n++;
    for (const [, p] of this.upstream.entries()) if (p.origin === "client" && !p.listen && !p.cancelled) n++;
    return n;
  }
}

/**
 * Whether a message of the server process of `from` may answer `entry`, or speak for it as a
 * subscription: only when `entry` was written to that process. A subscription outlives its
 * process (it is re-opened on the next): once that process went away, nothing read from the pipe
 * speaks for it (a watcher's next worker writes to the same pipe before its epoch begins), until
 * it is re-opened on a live one.
 */
function belongsTo(entry: Pending, from: Generation): boolean {
  if (entry.gen !== from) return false;
  return entry.origin !== "client" || entry.listen === undefined || from.alive;
}

/**
 * The relayed requests that only read, and change nothing at the server: one that waited for the
 * handshake of a process that died before it was complete is carried to the next process (it was
 * never sent, so sending it there is a first send, not a retry). Any other relayed method may
 * change something (logging/setLevel, a method the gateway does not know): answered
 * server_unavailable, and the client decides.
 */
/** The requests a server answers before reading what follows them (see handshakesAt). */
const HANDSHAKES = new Set(["initialize", "server/discover"]);

const CARRIED_READS = new Set(["ping", "resources/list", "resources/templates/list", "prompts/list"]);

/** Requests that change nothing: one lost with its process is told to be sent again as it is. */
const LOST_READS: ReadonlySet<string> = new Set([...CARRIED_READS, "server/discover", "tools/list"]);

/**
 * How many of the client's requests may wait at one server for its answer at once (subscriptions
 * included; not those the client cancelled). A real client has a few at a time (an agent's calls
 * in parallel, its subscriptions), so a few thousand is far above any. A server that reads its
 * input but answers nothing would otherwise hold each one the client sends, about 500 bytes of
 * the gateway's heap and an intent left open in the audit, without end: 4,096 of them are about
 * 2 MiB. The same bound as the server's requests waiting for the client (ServerRequests).
 */
export const MAX_AT_SERVER = 4096;

/**
 * How many requests the client cancelled are kept to recognise their late answers (see
 * keepCancelled): a server that obeys a cancellation sends none, so without a bound they would
 * pile up for as long as its process lives.
 */
const MAX_CANCELLED_KEPT = 4096;

/** How many of the gateway's own requests it gave up on are remembered, to name their late answers. */
const MAX_GAVE_UP = 64;

/** The client's id text of `p`'s call: what the egress proxy's records name it by. */
function callIdOf(p: ClientPending): string {
  return p.call?.idText ?? JSON.stringify(p.clientId);
}

/**
 * What the audit names `p`'s call by. A recorded request is always forwarded with its name
 * (`intent` comes with `call`); without one, its id alone, with no call key to claim.
 */
function callNameOf(p: ClientPending): CallName {
  return p.call ?? { idText: JSON.stringify(p.clientId) };
}

/**
 * Whether `p` is a call of `gen` in the release window: a forwarded tools/call with scopes, not
 * cancelled, and the session grant it went under (if any) still holding.
 */
function releasesFor(p: Pending, gen: Generation): p is ClientPending & { scopes: readonly string[] } {
  return (
    p.origin === "client" &&
    p.method === "tools/call" &&
    p.gen === gen &&
    !p.cancelled &&
    (p.scopes?.length ?? 0) > 0 &&
    (p.holds === undefined || p.holds())
  );
}

/** The method a recorded end names: a guarded read's (a tools/call's end names its tool). */
function readMethod(p: { method: string }): string | undefined {
  return p.method === "tools/call" ? undefined : p.method;
}

/** A request's progress token (`params._meta.progressToken`), when it is a string or a number. */
function progressTokenOf(msg: Request): string | number | undefined {
  const token = (msg.params as { _meta?: { progressToken?: unknown } } | undefined)?._meta?.progressToken;
  return typeof token === "string" || typeof token === "number" ? token : undefined;
}
