import type { ServerResponse } from "node:http";
import type { Socket } from "node:net";
import type { RefusedAnswer } from "../gateway/clientMessages.js";
import type { Downstream } from "../gateway/downstream.js";
import { SUBSCRIPTION_ID_META } from "../gateway/protocol.js";
import { refuse } from "../guard/refusals.js";
import { ClientIds, cancelledIdText, idKeyOf } from "../relay/clientIds.js";
import { rawIdOf } from "../relay/idScan.js";
import { errorResponse, type Id } from "../relay/jsonrpc.js";
import { plainIdSpan, spliceId } from "../relay/rawSplice.js";
import type { Logger } from "../util/log.js";
import { type KeptEvents, SseStream } from "./httpSse.js";
import { BACKLOG_BYTES } from "./stdio.js";

/** What the HTTP front hands the gateway of one session, and gets back. */
export interface SessionHooks {
  /**
   * One client message (JSON text, ids already the session's wire ids) for the gateway. `idText`:
   * a request's own id as the client wrote it (JSON text), which its audit records name.
   * `written`: a request's body as the client wrote it (`text` is it re-serialised), where the
   * gateway looks for what re-serialising changed (an integer of 16 digits and more).
   */
  deliver(text: string, idText?: string, written?: string): void;
  /**
   * The client's answer to the server's request `id` was refused (its POST got 400 or 413): that
   * request is answered with an error instead (`Gateway.onClientAnswerRefused`).
   */
  answerRefused(id: Id, problem: RefusedAnswer): void;
  /**
   * The session's end began (DELETE, the idle timeout, the front's close): what the gateway still
   * owes an answer it gives itself, on its own exchange, recorded as on stdio (a call waiting for
   * a human, a request held for the catalog or behind a replayed handshake); resolves once those
   * answers went out. What is left open after it is answered session_ended.
   */
  answerWaiting?(): Promise<void>;
  /**
   * Then, before the rest is answered session_ended: each of the client's subscriptions/listen
   * still open gets the end a server gives its listens at its shutdown, recorded as on stdio
   * (`Gateway.endListens`): its server is about to be stopped, and a listen is no request the
   * session failed to answer.
   */
  endListens?(): void;
  /** the session is over: stop the server behind it and end the agent run */
  close(): Promise<void>;
  /**
   * false: more than BACKLOG_BYTES wait to be written on one of the session's responses (its
   * client reads slower than the server talks); true: every response has caught up again. The
   * session's server is left unread meanwhile (ServerLink.setReading).
   */
  flow?(reading: boolean): void;
}

interface Exchange {
  wire: number;
  /** the client's id, or its stand-in when JSON cannot hold its text (ClientIds) */
  clientId: Id;
  /** the id as JSON compares ids (`idKeyOf`): what a cancellation finds the request by */
  idKey: string;
  /** the connection the request came on: which of two open requests under one id a cancellation means */
  origin: Socket | null;
  /** null once the client's connection is gone before anything was written */
  res: ServerResponse | null;
  stream: SseStream | null;
  progressKey: string | null;
  listen: boolean;
}

type Msg = {
  id?: Id | null;
  method?: unknown;
  params?: { progressToken?: unknown; _meta?: Record<string, unknown>; requestId?: unknown };
  result?: { _meta?: Record<string, unknown>; protocolVersion?: unknown };
};

/** SSE streams kept per session for resumption */
const MAX_STREAMS = 128;
/**
 * Ids remembered per connection after their request ended (a cancellation that comes late on it
 * is its own request's), and the longest kept: a longer id is not remembered, so what a kept-alive
 * connection holds stays small whatever ids its client sends.
 */
const CARRIED_PER_CONNECTION = 16;
const CARRIED_KEY_CHARS = 256;
/**
 * Bytes of SSE events a session keeps for resumption (so a front keeps at most this many times
 * --listen-max-sessions, plus, per session, the newest event when it alone is larger). Over it,
 * streams whose answer was delivered go first, then the oldest events of any stream.
 */
export const RESUME_BUDGET_BYTES = 16 * 1024 * 1024;
/**
 * How long a stream whose last event went out whole on a live connection is still kept: a
 * client whose connection broke as the end arrived comes back within this to resume it.
 */
export const DELIVERED_GRACE_MS = 10_000;

/**
 * One HTTP session as the gateway sees it: a `Downstream` whose answers go back to the HTTP
 * exchange that asked. The client's request ids are replaced by the session's own numbers on the
 * way in (two POSTs of a modern client, or a retried one, may reuse an id) and restored on the way
 * out. What the gateway sends that answers nothing is routed by what it names: a progress token,
 * a subscription id (modern `subscriptions/listen`), else the oldest open exchange (where a tool's
 * logging and sampling requests belong), else the session's standalone GET stream. Answers are a
 * JSON body when the answer comes first, else the exchange turns into an SSE stream, resumable.
 * A client id JSON cannot hold as written (`9007199254740993`, `1e2`, `1.0`) goes back as its
 * original text, as on stdio (`ClientIds`).
 *
 * One session may hold two open requests under one client id: the modern-era requests of one
 * process share a session, and two clients in that process each count their ids from 0. So open
 * requests are kept per id as a list, each with the connection it came on, and a cancellation
 * is matched against that list (`cancelled`), never against whichever came last.
 */
export class HttpSession implements Downstream {
  hooks: SessionHooks | null = null;
  /** a message naming a subscription gets the client's own id there (`restore`): never sent as text */
  readonly rewritesSubscriptionIds = true;
  lastUsed = Date.now();
  private nextWire = 1;
  private nextStream = 1;
  private readonly exchanges = new Map<number, Exchange>();
  /** open exchanges by the client's id (`idKeyOf`), oldest first: two clients may share an id */
  private readonly openById = new Map<string, Exchange[]>();
  /** per connection, the ids of the last requests it carried here (newest last) */
  private readonly carried = new WeakMap<Socket, string[]>();
  private readonly byProgress = new Map<string, Exchange>();
  private readonly streams = new Map<string, SseStream>();
  /** bytes of the events its streams keep, and the order of the newest one */
  private keptBytes = 0;
  private keptOrder = 0;
  private readonly budget: KeptEvents = {
    kept: (bytes) => {
      this.keptBytes += bytes;
      return ++this.keptOrder;
    },
    released: (bytes) => {
      this.keptBytes -= bytes;
    },
  };
  /** the stream of GET /mcp: server messages that belong to no request */
  private readonly standalone = new SseStream("0", this.budget, undefined, 256);
  private readonly idTexts = new ClientIds();
  private ended = false;
  /** the end under way (`end`), once it began: it answers the gateway's waiting requests first */
  private ending: Promise<void> | null = null;
  /** a debug line (what is kept for resumption), when debug lines go somewhere */
  private readonly debug: ((line: string) => void) | null;
  /** the wire id of the session's initialize, until it is answered */
  private initializeWire: number | null = null;
  private negotiated: string | null = null;
  /** responses on which more than BACKLOG_BYTES wait for the client (watchBacklog) */
  private readonly backedUp = new Set<ServerResponse>();

  constructor(
    /** Mcp-Session-Id (legacy), or the front's own key for a modern client */
    readonly id: string,
    readonly era: "legacy" | "modern",
    /** the process that opened it (pid and start time), or null when it was not known */
    readonly owner: string | null,
    private readonly onEnded: (s: HttpSession) => void,
    private readonly log: Logger | null = null,
    private readonly resumeBudget = RESUME_BUDGET_BYTES,
  ) {
    this.streams.set("0", this.standalone);
    this.debug = log === null || log.debugging === false ? null : (line) => log.debug(line);
  }

  /** The protocol version the session's initialize answer named (legacy), once answered. */
  get negotiatedVersion(): string | null {
    return this.negotiated;
  }

  /** Bytes of SSE events kept for resumption now. */
  get resumableBytes(): number {
    return this.keptBytes;
  }

  /**
   * Its end began (`end`): a modern client's next request opens a new session rather than meet
   * this one's end (its gateway may still be answering what it held).
   */
  get isEnded(): boolean {
    return this.ending !== null;
  }

  /**
   * Nothing open (for the idle timeout): no unanswered exchange whose connection is still there,
   * and no connected stream. An exchange whose connection dropped keeps its answer for a client
   * that resumes (it attaches a stream), but not the session: a client that vanished with a call
   * unanswered would otherwise hold its session, server and run, and a slot of
   * --listen-max-sessions, for ever.
   */
  get idle(): boolean {
    for (const ex of this.exchanges.values()) if (ex.res !== null) return false;
    for (const s of this.streams.values()) if (s.attached) return false;
    return true;
  }

  // ───────────────────────── client → gateway ─────────────────────────

  /** A client request: answered later on `res`. `text`: the body as sent, for the id's own text. */
  request(message: object & { id: Id; method: string }, res: ServerResponse, text?: string): void {
    const msg = message as Msg & { id: Id; method: string };
    this.lastUsed = Date.now();
    const wire = this.nextWire++;
    const token = msg.params?._meta?.progressToken;
    const raw = text === undefined ? null : rawIdOf(text);
    const ex: Exchange = {
      wire,
      clientId: this.idTexts.standIn(msg.id, raw),
      idKey: idKeyOf(msg.id, raw),
      origin: res.req?.socket ?? null,
      res,
      stream: null,
      progressKey: token === undefined ? null : JSON.stringify(token),
      listen: msg.method === "subscriptions/listen",
    };
    this.exchanges.set(wire, ex);
    if (msg.method === "initialize") this.initializeWire = wire;
    this.open(ex);
    if (this.ending !== null) {
      // The session's end began: the gateway is answering what it holds, and one more request
      // would be decided, held or sent after that, past its answers (and its run's end), never
      // recorded. It gets the answer of a request still open at the end, and is not delivered.
      const ended = refuse.httpSessionEnded();
      this.finishExchange(ex, errorResponse(ex.clientId, ended.code, ended.message, ended.data));
      return;
    }
    if (ex.progressKey !== null) this.byProgress.set(ex.progressKey, ex);
    res.once("close", () => {
      if (res.writableFinished || ex.res !== res) return;
      ex.res = null;
      this.lastUsed = Date.now(); // the idle timeout counts from the drop
      // Legacy era: a dropped connection is not a cancellation (2025-06-18 says a server SHOULD
      // NOT take it for one): the answer is kept for a client that resumes with Last-Event-ID.
      // Modern era (2026-07-28): closing the response stream IS the cancellation, and the client
      // sends no notifications/cancelled (the v2 SDK aborts the POST; the standard says a server
      // MUST take the disconnect as cancelling that request). Nor can a modern client resume:
      // it has no session id to GET with. Kept open, a call the client gave up on while it
      // waited for a human would run once approved, and its exchange held until the answer.
      if (this.era === "modern" && this.exchanges.get(ex.wire) === ex) this.disconnected(ex, msg);
    });
    this.hooks?.deliver(
      JSON.stringify({ ...msg, id: wire }),
      this.idTexts.standInText(ex.clientId) ?? JSON.stringify(ex.clientId),
      text,
    );
  }

  /**
   * A client notification or an answer to a server request: accepted (202) and passed on.
   * `origin`: the connection it came on (which request a cancellation means).
   */
  notify(message: object, text?: string, origin: Socket | null = null): void {
    let msg = message as Msg;
    this.lastUsed = Date.now();
    if (msg.method === "notifications/cancelled" && msg.params && "requestId" in msg.params) {
      const ex = this.cancelled(msg.params.requestId, text, origin);
      if (!ex) return; // it names no open request of this client, or none that can be told
      msg = { ...msg, params: { ...msg.params, requestId: ex.wire } };
      this.dropExchange(ex);
    }
    this.hooks?.deliver(JSON.stringify(msg));
  }

  /**
   * A modern-era request whose connection closed before its answer went out: cancelled, as a
   * `notifications/cancelled` naming it would cancel it (the gateway stops a wait for a human, or
   * tells the server), under the request's own envelope (a modern server wants it on every
   * message). It gets no answer.
   */
  private disconnected(ex: Exchange, request: Msg): void {
    this.dropExchange(ex);
    // nothing of it can be resumed (no session id to resume with): its kept events go now
    if (ex.stream) this.drop(ex.stream);
    const meta = request.params?._meta;
    const envelope: Record<string, unknown> = {};
    if (meta)
      for (const [k, v] of Object.entries(meta))
        if (k.startsWith("io.modelcontextprotocol/")) envelope[k] = v;
    this.hooks?.deliver(
      JSON.stringify({
        jsonrpc: "2.0",
        method: "notifications/cancelled",
        params: {
          requestId: ex.wire,
          reason: "the client closed the request's HTTP stream",
          ...(Object.keys(envelope).length > 0 ? { _meta: envelope } : {}),
        },
      }),
    );
  }

  /** The client's answer to the server's request `id` was refused before it was read (see SessionHooks). */
  answerRefused(id: Id, problem: RefusedAnswer): void {
    if (this.ended) return;
    this.lastUsed = Date.now();
    this.hooks?.answerRefused(id, problem);
  }

  /**
   * The open request a cancellation names, by the id as JSON compares ids ("a\/b" names "a/b").
   * When two are open under that id (two clients of one process share a modern-era session):
   * the one sent on the cancellation's own connection. Else, when that connection carried a
   * request with that id here and it is over, the cancellation came late for it (it crossed the
   * answer) and names no other. Else the only one open under the id. Two or more sent on other
   * connections cannot be told apart, and a wrong guess would take another client's answer from
   * it, so none is cancelled: each still gets its answer (the client that cancelled ignores its
   * own), and the front says so on its log.
   */
  private cancelled(requestId: unknown, text: string | undefined, origin: Socket | null): Exchange | null {
    if (typeof requestId !== "string" && typeof requestId !== "number") return null;
    const key = idKeyOf(requestId, cancelledIdText(requestId, text));
    const open = this.openById.get(key);
    if (!open) return null;
    const own = origin === null ? undefined : open.find((ex) => ex.origin === origin);
    if (own) return own;
    if (origin !== null && this.carried.get(origin)?.includes(key)) return null;
    if (open.length === 1) return open[0]!;
    this.log?.warn(
      `http: a cancellation named an id that ${open.length} open requests of one ${this.era}-era session carry, none sent on the cancellation's connection; which one it meant cannot be told, so none is cancelled`,
    );
    return null;
  }

  /**
   * GET with `Last-Event-ID`: the stream resumes on `res`, which replaces a connection still
   * holding it (the client says it lost that one; only the process that opened the session gets
   * here). False when the id names no event this session's streams sent: an id made up by the
   * client (`0.0`, a number past the last event) resumes nothing, and so cannot take over the
   * GET stream that a plain second GET is refused (409).
   */
  resume(stream: string, seq: number, res: ServerResponse): boolean {
    const s = this.streams.get(stream);
    if (!s?.issued(seq)) return false;
    this.lastUsed = Date.now();
    const replaced = s.connection;
    s.attach(res, seq);
    // the connection the client says it lost, if it was behind: what waits on it is for no one,
    // and ended gently it would hold the session's server unread until the socket times out
    if (replaced !== null && replaced !== res && this.backedUp.has(replaced)) replaced.destroy();
    this.watchBacklog(res); // what was kept of the stream is written at once
    return true;
  }

  /** GET without `Last-Event-ID`: the standalone stream (one at a time); false when one is open. */
  openStandalone(res: ServerResponse): boolean {
    if (this.standalone.attached) return false;
    this.lastUsed = Date.now();
    this.standalone.attach(res, this.standalone.lastWritten);
    this.watchBacklog(res);
    return true;
  }

  // ───────────────────────── gateway → client ─────────────────────────

  send(message: unknown): void {
    if (this.ended) return;
    const msg = message as Msg;
    if (msg.method === undefined && msg.id !== undefined) {
      const ex = typeof msg.id === "number" ? this.exchanges.get(msg.id) : undefined;
      if (!ex) return; // answers a request this session no longer holds
      if (ex.wire === this.initializeWire) {
        this.initializeWire = null;
        const v = msg.result?.protocolVersion;
        if (typeof v === "string") this.negotiated = v;
      }
      this.finishExchange(ex, this.restore(msg, ex));
      return;
    }
    const sub = msg.params?._meta?.[SUBSCRIPTION_ID_META];
    const bySub = typeof sub === "number" ? this.exchanges.get(sub) : undefined;
    if (bySub) {
      this.deliver(bySub, JSON.stringify(this.restore(msg, bySub)), false);
      return;
    }
    this.toClient(msg, JSON.stringify(msg));
  }

  /**
   * As `send`, for a message the gateway passes on as the server wrote it (an answer with its id
   * put back, a notification): sent as that text, so what the gateway could not write again
   * exactly (an integer beyond 2^53) reaches the client as written. Read here only to find where
   * it goes, and, of an answer to `initialize`, the version the session keeps; one that names a
   * subscription (whose id this session writes back: the gateway sends none such as text), or
   * text whose id cannot be put back in place, is sent as read.
   */
  sendText(text: string): void {
    if (this.ended) return;
    const msg = JSON.parse(text) as Msg;
    const named =
      msg.params?._meta?.[SUBSCRIPTION_ID_META] !== undefined ||
      msg.result?._meta?.[SUBSCRIPTION_ID_META] !== undefined;
    if (named || /[\r\n]/.test(text)) {
      this.send(msg);
      return;
    }
    if (msg.method === undefined && msg.id !== undefined) {
      const ex = typeof msg.id === "number" ? this.exchanges.get(msg.id) : undefined;
      if (!ex) return; // answers a request this session no longer holds
      const span = plainIdSpan(text);
      if (span === null) {
        this.send(msg);
        return;
      }
      if (ex.wire === this.initializeWire) {
        this.initializeWire = null;
        const v = msg.result?.protocolVersion;
        if (typeof v === "string") this.negotiated = v;
      }
      this.forget(ex);
      this.deliver(ex, spliceId(text, span, JSON.stringify(ex.clientId)), true);
      return;
    }
    this.toClient(msg, text);
  }

  /**
   * A message that answers nothing (`text`: `msg` as it goes): on the stream of the request its
   * progress token names, else of the oldest open request, else on the standalone stream.
   */
  private toClient(msg: Msg, text: string): void {
    const token = msg.params?.progressToken;
    const byToken = token === undefined ? undefined : this.byProgress.get(JSON.stringify(token));
    const target = byToken ?? this.oldestOpen();
    if (target) this.deliver(target, text, false);
    else {
      this.standalone.write(text);
      this.watchBacklog(this.standalone.connection);
      this.trim();
    }
  }

  /** The gateway ended the client connection. */
  close(): void {
    void this.end();
  }

  /**
   * Ends the session: what the gateway owes an answer of its own (a call waiting for a human, a
   * request held) gets it first and is recorded, each listen still open gets the end of a
   * server's shutdown, every exchange still open then gets an error answer, then the server
   * behind stops. Called again meanwhile: the same end.
   */
  end(): Promise<void> {
    // started a microtask later, so that `ending` is set before any of it runs: an end() called
    // again from within (a hook that ends the session) gets this end, never a second one
    this.ending ??= Promise.resolve().then(() => this.endOnce());
    return this.ending;
  }

  private async endOnce(): Promise<void> {
    try {
      await this.hooks?.answerWaiting?.();
    } catch (e) {
      // the session ends all the same: what is left open gets session_ended below
      this.log?.warn(
        `http: answering what session ${this.id.slice(0, 8)}… waits on failed: ${(e as Error).message}`,
      );
    }
    try {
      this.hooks?.endListens?.();
    } catch (e) {
      // the session ends all the same: a listen left open gets session_ended below
      this.log?.warn(
        `http: ending the listens of session ${this.id.slice(0, 8)}… failed: ${(e as Error).message}`,
      );
    }
    const ended = refuse.httpSessionEnded();
    for (const ex of [...this.exchanges.values()])
      this.finishExchange(ex, errorResponse(ex.clientId, ended.code, ended.message, ended.data));
    this.ended = true;
    for (const s of this.streams.values()) s.finish();
    this.onEnded(this);
    await this.hooks?.close();
  }

  /** Bounds memory: the oldest finished stream can no longer be resumed. */
  private forgetOneFinished(): void {
    for (const s of this.streams.values()) {
      if (s.done && s !== this.standalone) {
        this.drop(s);
        return;
      }
    }
  }

  private drop(s: SseStream): void {
    if (this.streams.get(s.id) !== s) return;
    this.streams.delete(s.id);
    s.release();
  }

  /**
   * Keeps what the streams hold for resumption within the session's byte budget. First to go:
   * streams whose answer already went out whole (resuming them gives nothing new), oldest first;
   * then the oldest events of any stream, an answer not yet delivered included. Never the event
   * just kept: one message larger than the budget is held until something newer comes.
   */
  private trim(): void {
    if (this.keptBytes > this.resumeBudget) {
      for (const s of [...this.streams.values()]) {
        if (this.keptBytes <= this.resumeBudget) break;
        if (s.delivered) this.drop(s);
      }
    }
    while (this.keptBytes > this.resumeBudget) {
      const s = this.oldestKept();
      if (!s || s.oldest === this.keptOrder) break;
      s.evictOldest();
      if (s.done && s.oldest === null) this.drop(s);
    }
    if (this.debug)
      this.debug(
        `http: session ${this.id.slice(0, 8)}… keeps ${this.keptBytes} bytes of SSE events for resumption (budget ${this.resumeBudget})`,
      );
  }

  /** The stream holding the session's oldest kept event. */
  private oldestKept(): SseStream | null {
    let found: SseStream | null = null;
    for (const s of this.streams.values()) {
      const o = s.oldest;
      if (o !== null && (found === null || o < (found.oldest ?? Infinity))) found = s;
    }
    return found;
  }

  /** Its answer went out whole on a live connection: kept a short while, for a broken ending. */
  private delivered(s: SseStream): void {
    setTimeout(() => this.drop(s), DELIVERED_GRACE_MS).unref();
  }

  private oldestOpen(): Exchange | undefined {
    for (const ex of this.exchanges.values()) if (!ex.listen) return ex;
    return undefined;
  }

  /** The message with the client's own id back, and a subscription id restored to the client's. */
  private restore(msg: Msg, ex: Exchange): Msg {
    let out: Msg = msg.method === undefined ? { ...msg, id: ex.clientId } : msg;
    if (out.params?._meta?.[SUBSCRIPTION_ID_META] !== undefined)
      out = {
        ...out,
        params: { ...out.params, _meta: { ...out.params._meta, [SUBSCRIPTION_ID_META]: ex.clientId } },
      };
    if (out.result?._meta?.[SUBSCRIPTION_ID_META] !== undefined)
      out = {
        ...out,
        result: { ...out.result, _meta: { ...out.result._meta, [SUBSCRIPTION_ID_META]: ex.clientId } },
      };
    return out;
  }

  private finishExchange(ex: Exchange, answer: unknown): void {
    this.forget(ex);
    this.deliver(ex, JSON.stringify(answer), true);
  }

  /**
   * The client cancelled the request: it gets no answer (an answer the gateway still sends is
   * dropped), and its HTTP exchange ends (an SSE stream is closed, a waiting POST gets 204).
   */
  private dropExchange(ex: Exchange): void {
    this.forget(ex);
    if (ex.stream) ex.stream.finish();
    else if (ex.res && !ex.res.headersSent) ex.res.writeHead(204).end();
  }

  /** Keeps the exchange findable by its id, and its id among those its connection carried. */
  private open(ex: Exchange): void {
    const same = this.openById.get(ex.idKey);
    if (same) same.push(ex);
    else this.openById.set(ex.idKey, [ex]);
    if (ex.origin === null || ex.idKey.length > CARRIED_KEY_CHARS) return;
    const carried = this.carried.get(ex.origin) ?? [];
    carried.push(ex.idKey);
    if (carried.length > CARRIED_PER_CONNECTION) carried.shift();
    this.carried.set(ex.origin, carried);
  }

  private forget(ex: Exchange): void {
    this.exchanges.delete(ex.wire);
    const same = this.openById.get(ex.idKey);
    const at = same ? same.indexOf(ex) : -1;
    if (at !== -1) {
      same!.splice(at, 1);
      if (same!.length === 0) this.openById.delete(ex.idKey);
    }
    if (ex.progressKey !== null && this.byProgress.get(ex.progressKey) === ex)
      this.byProgress.delete(ex.progressKey);
  }

  private deliver(ex: Exchange, serialized: string, final: boolean): void {
    // the client's own id texts back where their stand-ins are
    const text = this.idTexts.restore(serialized);
    if (!ex.stream) {
      if (final) {
        // the answer came first: one JSON body
        if (ex.res && !ex.res.headersSent) {
          ex.res.writeHead(200, { "content-type": "application/json" });
          ex.res.end(text);
          this.watchBacklog(ex.res);
        }
        return;
      }
      ex.stream = new SseStream(String(this.nextStream++), this.budget, (s) => this.delivered(s));
      this.streams.set(ex.stream.id, ex.stream);
      if (this.streams.size > MAX_STREAMS) this.forgetOneFinished();
      if (ex.res) ex.stream.attach(ex.res, 0);
    }
    ex.stream.write(text);
    const conn = ex.stream.connection;
    if (final) ex.stream.finish();
    this.watchBacklog(conn);
    this.trim();
  }

  /**
   * Back-pressure: once more than BACKLOG_BYTES wait on a response (its client stopped reading,
   * or reads slower than the server talks), the session's server is left unread (`flow`) until
   * that response has drained, finished or closed, so the server's messages wait in the server
   * and its pipe (or, reached by URL, its connection), not in this process's memory: a server
   * flooding a client that did not read its stream grew the front by as much as it sent (about
   * 1 GB for 512 MiB). Nothing is dropped. The whole session waits, not only the stream that is
   * behind: the server's messages come in one order on one pipe, and reading past one for a
   * stream that cannot take it would mean holding it without bound. Other sessions are not held:
   * each has its own server (or upstream session), read as its own client reads.
   */
  private watchBacklog(res: ServerResponse | null): void {
    if (res === null || this.backedUp.has(res) || res.writableLength < BACKLOG_BYTES) return;
    this.backedUp.add(res);
    if (this.backedUp.size === 1) this.hooks?.flow?.(false);
    const recheck = () => {
      // 'drain' comes once the socket took what waited; 'finish' once an ended response's last
      // bytes were handed to the system (an ended response is not drained); 'close' once it broke
      const open = !res.destroyed && !res.writableFinished;
      if (open && res.writableLength >= BACKLOG_BYTES) return;
      res.off("drain", recheck).off("finish", recheck).off("close", recheck);
      this.backedUp.delete(res);
      if (this.backedUp.size === 0 && !this.ended) this.hooks?.flow?.(true);
    };
    res.on("drain", recheck).on("finish", recheck).on("close", recheck);
  }
}
