// What goes over a remote server's upstream session (src/supervisor/remote.ts): each message
// POSTed with its headers resolved at send time, its answer read (a JSON body or an SSE stream)
// and handed to the gateway, the server-to-client GET stream, and what initialize teaches (the
// session id, the protocol version; the server's description of itself: remoteEpoch.ts).
// Whatever ends the session is reported to the link, which owns the epochs.
import type { ClientRequest, IncomingMessage } from "node:http";
import { refuse } from "../guard/refusals.js";
import { elementTexts } from "../relay/batchText.js";
import { DEFAULT_MAX_MESSAGE_BYTES } from "../relay/framing.js";
import { writtenIdOf } from "../relay/rawSplice.js";
import { quotedCommand } from "../store/stateDir.js";
import { sha256Tag } from "../util/canonical.js";
import { cutShort } from "../util/cut.js";
import { envMs } from "../util/envMs.js";
import type { Logger } from "../util/log.js";
import { SparingWarnings } from "../util/sparingWarnings.js";
import type { EpochReason } from "./link.js";
import { noteSelf, type Queued, type RemoteGeneration, type ShownValues } from "./remoteEpoch.js";
import { type HeaderSpec, type ResolvedHeaders, resolveHeaders, type SecretLookup } from "./remoteHeaders.js";
import type { UpstreamConnections } from "./remoteTransport.js";
import {
  isAnswer,
  isObject,
  isResponseTo,
  readBody,
  saysSessionLost,
  unreadableAnswer,
  unsendableSessionId,
} from "./remoteWire.js";
import { SseReader } from "./sse.js";

/** What the session's exchanges need of the link's options (RemoteOptions, remote.ts). */
export interface SessionOptions {
  label: string;
  url: URL;
  headers: HeaderSpec[];
  configDigest: string;
  log: Logger;
  /**
   * A header secret's value, asked of the vault holder at each use; when it cannot be had, why:
   * the vault is locked, or it holds no secret by that name that may go to this server's host.
   */
  secret: SecretLookup;
  /** the values released to the server, taken out of what is kept and shown of its words */
  released?: ShownValues;
  /** the state directory, named in the commands a refusal gives when it is not the default */
  stateDir?: string;
  maxMessageBytes?: number;
  /**
   * How long the server has to answer initialize (default 15 s). Nothing else is sent to it
   * before: an initialize never answered ends the epoch instead of holding every later request.
   */
  initializeTimeoutMs?: number;
}

export type Message = { id?: unknown; method?: unknown; result?: unknown; error?: unknown };

/** What the exchanges report to the link that owns the epochs (RemoteSupervisor). */
export interface EpochOwner {
  /** `gen` is the link's current epoch */
  isCurrent(gen: RemoteGeneration): boolean;
  /** the link is shutting down */
  stopping(): boolean;
  /** the session is over: the epoch ends, and `next` is why the following one exists */
  lose(gen: RemoteGeneration, next: EpochReason, detail: string): void;
  /** one message for the gateway, as text: the server's, or (`own`) one written in its place */
  line(text: string, gen: RemoteGeneration, own?: boolean): void;
  /** a message over the size limit was dropped; `rawId`: the id of the request it answered */
  oversize(bytes: number, gen: RemoteGeneration, rawId: string | null): void;
  /**
   * `gen`'s initialize was answered by an HTTP front for a server it cannot reach (`why`): the
   * server is unreachable; how long to wait before the same initialize is sent again.
   */
  initializeRefused(gen: RemoteGeneration, why: string): number;
  /** `gen`'s initialize was answered by the server: it is reachable again */
  reached(gen: RemoteGeneration): void;
}

export class SessionExchanges {
  private readonly maxBytes: number;
  /** POSTs closed because the gateway gave up on their request: their end ends no epoch */
  private readonly givenUp = new WeakSet<ClientRequest>();
  /** a POST that carries no request was held open and closed: said once as a warning */
  private saidHeld = false;
  /** an answer that could not be used (upstreamUnreadable): said once as a warning */
  private saidUnreadable = false;
  /** the server's answers and streams being read: left unread while the client is backed up */
  private readonly reading = new Set<IncomingMessage>();
  private unread = false;
  /**
   * Events that are not JSON, said at once and then at most once a minute with a count: the
   * gateway's warnings are the one way a remote server writes to the host's log, and a line per
   * event let a stream of tiny garbage events write about nine times the bytes it sent there.
   */
  private readonly notJson: SparingWarnings;
  /** answers to no request asked (deliver), said as notJson is */
  private readonly strays: SparingWarnings;

  constructor(
    private readonly o: SessionOptions,
    private readonly connections: UpstreamConnections,
    private readonly owner: EpochOwner,
  ) {
    this.maxBytes = o.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
    this.notJson = new SparingWarnings((line) => o.log.warn(line));
    this.strays = new SparingWarnings((line) => o.log.warn(line));
  }

  /**
   * Queues one message for `gen`'s session, in order; false when it cannot be sent there (a
   * second initialize: it ends the epoch).
   */
  send(gen: RemoteGeneration, m: Message, text: string): boolean {
    if (m.method === "initialize" && (gen.sessionId !== null || gen.older !== null)) {
      // A second initialize would open a second session on the same epoch: it gets an epoch of its own.
      queueMicrotask(() =>
        this.owner.lose(gen, "new-session", "a new initialize starts a new upstream session"),
      );
      return false;
    }
    const body = Buffer.from(text, "utf8");
    const queued: Queued = { m, dropped: false };
    if (m.method !== "initialize") gen.waiting.add(queued);
    gen.queue = gen.queue
      .then(() => {
        gen.waiting.delete(queued);
        if (!queued.dropped) return this.post(gen, m, body);
      })
      .catch((e) => {
        // the code only: a message about a request can quote what was in its headers
        this.o.log.warn(
          `a request to ${this.o.url.host} could not be made (${(e as NodeJS.ErrnoException).code ?? "error"})`,
        );
        if (gen.alive) this.owner.lose(gen, "new-session", "a request could not be made");
      });
    // once the cancellation itself is on its way: the server is told why before the connection drops
    const given = m.method === "notifications/cancelled" ? cancelledId(m) : undefined;
    if (given !== undefined) gen.queue = gen.queue.then(() => this.giveUp(gen, given));
    return true;
  }

  /**
   * The gateway gave up on its request `id` (its own past a timeout, or one the client cancelled)
   * and told the server so. Its POST is closed, with the SSE stream of its answer if one was
   * opened: a server that obeys the cancellation never answers it (the official SDKs' servers
   * then leave that stream open for good), and one that never meant to answer would otherwise
   * hold a connection of the gateway's per request given up on. Its end is not the session's:
   * the epoch stays, and other requests, each on its own connection, go on. One not sent yet is
   * not sent.
   */
  private giveUp(gen: RemoteGeneration, id: unknown): void {
    for (const q of gen.waiting)
      if (q.m.id === id && typeof q.m.method === "string") {
        q.dropped = true;
        gen.waiting.delete(q);
      }
    const req = gen.posts.get(id);
    if (req === undefined) return;
    gen.posts.delete(id);
    this.givenUp.add(req);
    req.destroy();
  }

  /** The headers of every request: the configured ones (vault values released now), the session's. */
  private async headersFor(gen: RemoteGeneration): Promise<ResolvedHeaders> {
    const out = await resolveHeaders(this.o.headers, this.o.secret);
    if ("withheld" in out) return out;
    // the older transport has neither header: its session is its stream
    if (gen.older !== null) return out;
    if (gen.sessionId !== null) out.headers["mcp-session-id"] = gen.sessionId;
    if (gen.facts.protocolVersion !== null) out.headers["mcp-protocol-version"] = gen.facts.protocolVersion;
    return out;
  }

  /**
   * `on` false: the client reads slower than the server sends (its output is backed up), so
   * nothing more of what the server sends is read until `on` again; it waits in the server and
   * in the connection's buffers, which makes the server's own writes wait. Before, a server
   * that streamed without end (notifications on a call's stream or on the server-to-client
   * stream) grew the gateway's memory until it aborted: one read of a socket takes in up to
   * 32 chunks of 64 KiB while one write to a pipe gives out 64 KiB, so even a client that reads
   * at once fell behind.
   */
  setReading(on: boolean): void {
    this.unread = !on;
    for (const res of this.reading) {
      if (on) res.resume();
      else res.pause();
    }
  }

  /** `res`'s body is read from now on: also left unread while the client is backed up. */
  private reads(res: IncomingMessage): void {
    this.reading.add(res);
    res.once("close", () => this.reading.delete(res));
    if (this.unread) res.pause();
  }

  /** Tells the server the session is over (DELETE), best effort and briefly. */
  async deleteSession(gen: RemoteGeneration): Promise<void> {
    if (gen.sessionId === null) return;
    const headers = await this.headersFor(gen).catch(() => null);
    if (headers === null || "withheld" in headers) return;
    await this.connections.deleteSession(headers.headers, gen.facts.certificateChainSha256);
  }

  private async post(gen: RemoteGeneration, m: Message, body: Buffer): Promise<void> {
    if (!gen.alive) return;
    const isRequest = typeof m.method === "string" && m.id !== undefined;
    const headers = await this.headersFor(gen);
    if (!gen.alive) return;
    if ("withheld" in headers) {
      this.o.log.warn(
        `not sent to ${this.o.url.host}: the header secret "${headers.withheld}" cannot be released (${headers.missing ?? "the vault is locked"})`,
      );
      if (isRequest) {
        // no tool is involved: the connection itself needs the header (initialize included)
        const e =
          headers.missing === null
            ? refuse.headerVaultLocked(headers.withheld, quotedCommand("unlock", this.o.stateDir))
            : refuse.headerCredentialMissing(headers.withheld, headers.missing);
        this.answer(gen, m.id, e.code, e.message, e.data, false);
      }
      return;
    }
    let answered = () => {};
    const answer = new Promise<void>((resolve) => {
      answered = resolve;
    });
    // over the older transport the answer comes on the session's stream (olderTransport)
    if (gen.older !== null && m.method === "initialize") gen.olderInit = { m, answered };
    const req = this.request(
      gen,
      "POST",
      {
        ...headers.headers,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
        "content-length": String(body.length),
      },
      // an answer node cannot read (headers over its limit, a character no header may hold):
      // the request's own error, as a bad answer is; not a lost session, so nothing is retried
      (why) => {
        this.unusable(gen, m, isRequest, why);
        answered();
      },
      gen.older?.endpoint,
    );
    if (isRequest) {
      gen.posts.set(m.id, req);
      req.on("close", () => {
        if (gen.posts.get(m.id) === req) gen.posts.delete(m.id);
      });
    } else this.closeWhenDue(req, m);
    // The body goes out only once the connection's certificate chain is the epoch's. From then on
    // the request is asked: an answer to its id before that answers nothing the gateway sent.
    this.whenVerified(gen, req, () => {
      // (its id and method only: the params, a call's arguments, are not kept for its answer)
      if (isRequest) gen.asked.set(m.id, { m: { id: m.id, method: m.method }, answered });
      req.end(body);
    });
    /** why a front, not the server, answered this initialize (see onPostResponse) */
    let refusedByFront: string | null = null;
    /** the 4xx to this initialize was the older transport's: whether the epoch switched to it */
    let older: Promise<boolean> | null = null;
    req.on("response", (res) =>
      this.onPostResponse(
        gen,
        m,
        isRequest,
        req,
        res,
        answered,
        (why) => {
          refusedByFront = why;
        },
        (switched) => {
          older = switched;
        },
      ),
    );
    // Nothing else is sent until initialize is answered: the session id and the protocol version
    // are learned from it.
    if (m.method !== "initialize") return;
    await this.untilAnswered(gen, req, answer);
    if (older !== null) {
      // sent again, to the endpoint the server's stream named, and answered on that stream
      if ((await older) && gen.alive && !this.owner.stopping()) return this.post(gen, m, body);
      return;
    }
    if (refusedByFront === null || !gen.alive || this.owner.stopping()) return;
    // No session was opened, so the epoch stays what it is: minted, recorded, and nothing sent
    // under it but this initialize, which is sent again once the wait is over. A new epoch per
    // attempt would only grow the store and the audit while the server is down.
    this.dropWaiting(gen, refusedByFront);
    await waitFor(this.owner.initializeRefused(gen, refusedByFront));
    return this.post(gen, m, body);
  }

  /**
   * What was queued behind a refused initialize is not held until the server is back: its
   * requests are answered server_unavailable now (what a client sends meanwhile is refused by
   * the link), its notifications dropped, as an ended epoch's would be.
   */
  private dropWaiting(gen: RemoteGeneration, why: string): void {
    for (const q of gen.waiting) {
      q.dropped = true;
      if (typeof q.m.method === "string" && q.m.id !== undefined) {
        const e = refuse.serverUnreachable(why);
        this.answer(gen, q.m.id, e.code, e.message, e.data, false);
      }
    }
    gen.waiting.clear();
  }

  /**
   * A POST that carries no request (a notification, an answer to the server's request) is owed
   * nothing back but its status: MCP's answer is 202 Accepted with no body. One the server keeps
   * open (an SSE stream, a body that never ends, no status at all) is closed after
   * NO_ANSWER_OWED_MS; its end ends no epoch. Before, each such POST held a connection of the
   * gateway's for good, one per notification the client sent.
   */
  private closeWhenDue(req: ClientRequest, m: Message): void {
    const dueMs = noAnswerOwedMs();
    const timer = setTimeout(() => {
      this.givenUp.add(req);
      req.destroy();
      const said = `${this.o.url.host} held the POST of a ${String(m.method ?? "response")} open for ${seconds(dueMs)}; closed it (nothing is owed back for one)`;
      if (this.saidHeld) this.o.log.debug(said);
      else this.o.log.warn(said);
      this.saidHeld = true;
    }, dueMs);
    timer.unref();
    req.once("close", () => clearTimeout(timer));
  }

  /**
   * Waits for the initialize answer, not for its connection to close: a server may keep the SSE
   * stream of its answer open (the standard says it should close it, not that it must). An
   * answer that never comes ends the epoch (its requester gets epoch_transition) once the
   * initialize timeout has passed.
   */
  private async untilAnswered(
    gen: RemoteGeneration,
    req: ClientRequest,
    answer: Promise<void>,
  ): Promise<void> {
    const ms = this.o.initializeTimeoutMs ?? 15_000;
    let timer: NodeJS.Timeout | undefined;
    const outcome = await Promise.race([
      answer.then(() => "answered" as const),
      // over the older transport the POST is only accepted (202): the answer comes on the stream
      new Promise<"closed">((resolve) => {
        if (gen.older === null) req.once("close", () => resolve("closed"));
      }),
      new Promise<"timeout">((resolve) => {
        timer = setTimeout(() => resolve("timeout"), ms);
        timer.unref();
      }),
    ]);
    clearTimeout(timer);
    if (outcome !== "timeout" || !gen.alive || this.owner.stopping()) return;
    req.destroy();
    this.owner.lose(gen, "new-session", `the server did not answer initialize within ${seconds(ms)}`);
  }

  /**
   * A request of `gen`'s: destroyed when the epoch ends; its failure ends the epoch, except an
   * answer whose head node could not read (`unreadable`, with why: unreadableAnswer). Before,
   * that ended the epoch too, the next epoch's initialize got the same answer, and after five
   * supervision gave up saying the server had dropped five sessions.
   */
  private request(
    gen: RemoteGeneration,
    method: string,
    headers: Record<string, string>,
    unreadable?: (why: string) => void,
    to?: URL,
  ): ClientRequest {
    const u = this.o.url;
    const req = this.connections.request(method, headers, to);
    gen.requests.add(req);
    let responded = false;
    req.once("response", () => {
      responded = true;
    });
    req.on("close", () => gen.requests.delete(req));
    req.on("error", (e) => {
      if (!gen.alive || this.owner.stopping() || this.givenUp.has(req)) return;
      const why = unreadable && !responded ? unreadableAnswer(e) : null;
      if (why !== null) return unreadable!(why);
      this.owner.lose(
        gen,
        "new-session",
        `the connection to ${u.host} failed (${(e as NodeJS.ErrnoException).code ?? e.message})`,
      );
    });
    return req;
  }

  /**
   * Runs `then` once `req`'s socket is known to present the epoch's certificate chain. A
   * socket is looked at once (a kept-alive one was seen before); a different chain ends the
   * epoch before a byte of the request is written.
   */
  private whenVerified(gen: RemoteGeneration, req: ClientRequest, then: () => void): void {
    this.connections.whenVerified(req, gen.facts.certificateChainSha256, then, (digest) => {
      if (gen.alive)
        this.owner.lose(
          gen,
          "certificate-changed",
          `the server presented a different TLS certificate chain (${digest ?? "none"})`,
        );
    });
  }

  /** `onAnswered`: called once the request's answer (or what stands for it) has been delivered. */
  private onPostResponse(
    gen: RemoteGeneration,
    m: Message,
    isRequest: boolean,
    req: ClientRequest,
    res: IncomingMessage,
    onAnswered: () => void,
    onRefusedByFront: (why: string) => void = () => {},
    onOlder: (switched: Promise<boolean>) => void = () => {},
  ): void {
    if (!gen.alive) return void res.destroy();
    const status = res.statusCode ?? 0;
    if (m.method === "initialize" && status === 200) {
      const sid = res.headers["mcp-session-id"];
      const unsendable = typeof sid === "string" ? unsendableSessionId(sid) : null;
      if (unsendable !== null) {
        // sent back changed (or refused by node), it names no session the server knows: every
        // request would end the epoch. Its answer is dropped, as one whose version cannot be sent.
        res.resume();
        this.unusable(gen, m, isRequest, unsendable);
        onAnswered();
        return;
      }
      if (typeof sid === "string" && sid !== "") {
        gen.sessionId = sid;
        gen.facts = { ...gen.facts, session: sha256Tag(sid) };
      }
      // the epoch's record says which transport it speaks (before the answer completes it)
      if (gen.older === null) gen.facts = { ...gen.facts, transport: "streamable-http" };
    }
    // over the older transport a 404 from the endpoint is the same: the session is its stream's
    if (status === 404 && (gen.sessionId !== null || gen.older !== null)) {
      res.resume();
      this.sessionLost(gen, m, isRequest, 404);
      return;
    }
    // The session is initialized: open the server-to-client stream (requests, notifications, and
    // the first sign of a server that went away between calls).
    if (m.method === "notifications/initialized" && status >= 200 && status < 300) this.openStream(gen);
    const type = String(res.headers["content-type"] ?? "").toLowerCase();
    if (status === 202 && isRequest && gen.older === null && gen.stream === null) {
      // MCP answers a request's POST with JSON or an SSE stream; 202 is for notifications and
      // answers. Accepted with no stream of the server's open for a later answer, the request
      // would wait for ever (its intent open): its requester is told now, its outcome unknown.
      res.resume();
      const e = refuse.upstreamAcceptedUnanswered(String(m.method));
      this.answer(gen, m.id, e.code, e.message, e.data);
      onAnswered();
      return;
    }
    if (status === 202 || (status >= 200 && status < 300 && !isRequest && !type)) {
      res.resume();
      return;
    }
    if (status >= 200 && status < 300 && type.startsWith("text/event-stream")) {
      let done = !isRequest;
      const answer = () => {
        if (done) return;
        done = true;
        onAnswered();
        // MCP has the server close the stream after its answer (SHOULD): one left open would hold
        // a connection and a descriptor per answered request for as long as the server likes,
        // until the gateway ran out of them and took that for the session's loss. Closed if still
        // open a moment later: a server that ends it right after its answer keeps its connection
        // alive for the next request (destroyed at once, a TLS server would pay a handshake a call).
        setTimeout(() => this.closeIfLeftOpen(gen, res), LEFT_OPEN_GRACE_MS).unref();
      };
      // answered wherever its answer comes: on this stream, on another request's, on the GET stream
      if (isRequest) this.whenAnswered(gen, m.id, answer);
      this.readSse(
        gen,
        res,
        () => {
          if (!done && gen.alive && !this.owner.stopping() && !this.givenUp.has(req))
            this.owner.lose(
              gen,
              "new-session",
              `the server's stream ended without answering ${String(m.method)}`,
            );
        },
        (bytes) => {
          // Over the limit on a request's own stream: taken as its answer, so its requester gets
          // message_too_large with its own id (the stream ending then is no lost answer).
          const id = isRequest && gen.asked.delete(m.id) ? JSON.stringify(m.id) : null;
          this.owner.oversize(bytes, gen, id);
          if (id !== null) answer();
        },
      );
      return;
    }
    this.reads(res);
    // answered elsewhere (another request's stream, the GET stream): a body still coming is no
    // answer any more, and one held open holds a connection
    if (isRequest)
      this.whenAnswered(gen, m.id, () => {
        onAnswered();
        setTimeout(() => this.closeIfLeftOpen(gen, res), LEFT_OPEN_GRACE_MS).unref();
      });
    readBody(res, this.maxBytes, (text, bytes) => {
      if (!gen.alive) return;
      if (status === 400 && gen.sessionId !== null && text !== null && saysSessionLost(text)) {
        // the server does not know the session this was sent on: it was not run there, and what
        // answers next is another session (a restarted server), so another epoch
        this.sessionLost(gen, m, isRequest, 400);
        return onAnswered();
      }
      if (text === null) {
        this.owner.oversize(bytes, gen, isRequest && gen.asked.delete(m.id) ? JSON.stringify(m.id) : null);
        return onAnswered();
      }
      const ok = status >= 200 && status < 300;
      let parsed: unknown;
      try {
        parsed = text ? JSON.parse(text) : undefined;
      } catch {
        parsed = undefined;
      }
      let answered = false;
      for (const [one, written] of messagesOf(parsed, text)) {
        if (isRequest && isResponseTo(one, m.id)) answered = true;
        if (ok || isResponseTo(one, m.id)) this.deliver(gen, one, m, written);
      }
      if (m.method === "initialize" && !answered && status >= 500 && gen.reason !== "launch") {
        // The gateway's own initialize of a new epoch, answered for a server that is not there
        // (an HTTP front's 502 while the server restarts behind it): no session, and not the
        // server refusing one. Answered as an error, it would end the gateway; it is sent again
        // instead, under the same epoch, once the server has had time to come back (post).
        // (At launch the client's own initialize gets the error: it is told, and nothing was
        // opened yet.)
        onRefusedByFront(
          `${this.o.url.href} answered initialize with HTTP ${status} (is the server behind it down?)`,
        );
        return onAnswered();
      }
      if (m.method === "initialize" && !answered && gen.older === null && mayBeOlderTransport(status)) {
        // MCP's backward compatibility: a 4xx to the initialize POST may come from a server of the
        // older HTTP+SSE transport (2024-11-05), whose GET of the same URL opens an SSE stream
        // that begins with an `endpoint` event. Looked for: found, the epoch speaks that
        // transport and the initialize is sent again there (post); refused, its requester is
        // told why; else it gets the plain HTTP error.
        onOlder(
          this.olderTransport(gen).then((found) => {
            if (found !== true) {
              const e =
                found === false
                  ? refuse.upstreamHttpError(status)
                  : refuse.upstreamOlderTransport(status, this.o.url.href, found);
              if (found !== false)
                this.o.log.warn(
                  `${this.o.url.href} speaks the older HTTP+SSE transport (MCP 2024-11-05), and it is not used: ${found}`,
                );
              this.answer(gen, m.id, e.code, e.message, e.data);
            }
            onAnswered();
            return found === true;
          }),
        );
        return;
      }
      if (isRequest && !answered && isRedirect(status)) {
        const e = refuse.upstreamRedirect(
          status,
          redirectTarget(this.o.url, res.headers.location, this.o.released),
        );
        this.answer(gen, m.id, e.code, e.message, e.data);
      } else if (isRequest && !answered) {
        const e = refuse.upstreamHttpError(status);
        this.answer(gen, m.id, e.code, e.message, e.data);
      } else if (!ok && !isRequest) {
        this.o.log.warn(
          `the remote server refused a ${cutShort(String(m.method ?? "response"))} (HTTP ${status})`,
        );
      }
      onAnswered();
    });
  }

  /**
   * The older HTTP+SSE transport (MCP 2024-11-05), as the standard's backward-compatibility
   * section has a client look for it: a GET of the server's URL (the configured headers, on a
   * connection whose certificate chain is the epoch's) answered with an SSE stream whose first
   * event, `endpoint`, names where to POST messages. That endpoint must be on the URL's own
   * origin (scheme, host, port), without user credentials: the configured headers (vault values
   * among them) go to that origin only, and what the server says never decides where they go.
   * Found (true): the epoch speaks that transport from now on. Its stream is its session: every
   * answer and server message comes on it, read as a call's SSE stream is (bounded per event,
   * left unread while the client is backed up), and its end ends the epoch, as a lost session
   * does. The first event is waited for OLDER_PROBE_MS and OLDER_PROBE_BYTES at most. False:
   * not such a server (the stream is closed). A string: such a server, refused for that reason
   * (nothing of the event is quoted).
   */
  private async olderTransport(gen: RemoteGeneration): Promise<boolean | string> {
    const headers = await this.headersFor(gen).catch(() => null);
    if (headers === null || "withheld" in headers || !gen.alive) return false;
    return new Promise<boolean | string>((resolve) => {
      const req = this.connections.request("GET", { ...headers.headers, accept: "text/event-stream" });
      gen.requests.add(req);
      req.on("close", () => gen.requests.delete(req));
      let settled = false;
      const done = (found: boolean | string) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (found !== true) req.destroy();
        resolve(found);
      };
      const timer = setTimeout(() => done(false), OLDER_PROBE_MS);
      timer.unref();
      req.on("error", () => done(false));
      req.on("close", () => done(false));
      this.whenVerified(gen, req, () => req.end());
      req.on("response", (res) => {
        const type = String(res.headers["content-type"] ?? "").toLowerCase();
        if (res.statusCode !== 200 || !type.startsWith("text/event-stream")) return done(false);
        let open = false;
        const reader = new SseReader(
          (e) => {
            if (!open) {
              if (e.event !== "endpoint") return done(false);
              const endpoint = sameOrigin(e.data, this.o.url);
              if (typeof endpoint === "string") return done(endpoint);
              open = true;
              gen.older = { endpoint };
              // the session's identity: the endpoint names it (the SDK's carries ?sessionId=)
              // and the transport, which the epoch's record names (completed at the initialize answer)
              gen.facts = { ...gen.facts, session: sha256Tag(endpoint.href), transport: "http+sse" };
              gen.stream = req;
              this.o.log.status(
                `${this.o.url.href} speaks the older HTTP+SSE transport (MCP 2024-11-05): messages are posted to the endpoint its stream named, on the same origin, and answered on that stream`,
              );
              return done(true);
            }
            if (e.event !== "message" || !gen.alive) return;
            this.olderEvent(gen, e.data);
          },
          (bytes) => {
            if (open) this.owner.oversize(bytes, gen, null);
            else done(false);
          },
          this.maxBytes,
        );
        let ended = false;
        const end = () => {
          if (ended) return;
          ended = true;
          reader.end();
          if (!open) return done(false);
          if (gen.alive && !this.owner.stopping())
            this.owner.lose(gen, "new-session", "the server's SSE stream (older HTTP+SSE transport) ended");
        };
        // before the endpoint is known, a few KiB at most: not a whole message's worth
        let before = 0;
        res.on("data", (b: Buffer) => {
          if (!open) before += b.length;
          if (!open && before > OLDER_PROBE_BYTES) return done(false);
          reader.push(b);
        });
        res.on("end", end);
        res.on("close", end);
        res.on("error", end);
        this.reads(res);
      });
    });
  }

  /** One `message` event of the older transport's stream: an answer, or the server's own message. */
  private olderEvent(gen: RemoteGeneration, data: string): void {
    let msg: unknown;
    try {
      msg = JSON.parse(data);
    } catch {
      this.notJson.say("not-json", "dropped an event from the remote server that is not JSON");
      return;
    }
    for (const [one, written] of messagesOf(msg, data)) {
      const init = gen.olderInit;
      if (init !== null && isResponseTo(one, init.m.id)) {
        gen.olderInit = null;
        this.deliver(gen, one, init.m, written);
        init.answered();
      } else this.deliver(gen, one, null, written);
    }
  }

  /**
   * The server's answer to `m` cannot be used (`why`: unreadableAnswer, unsendableSessionId): a
   * request gets upstream_response_unreadable, under the same epoch; said once on stderr (then on
   * the debug log), since the next request is likely to get the same.
   */
  private unusable(gen: RemoteGeneration, m: Message, isRequest: boolean, why: string): void {
    const said = `the answer of ${this.o.url.host} to ${String(m.method ?? "a response")} could not be used: ${why}`;
    if (this.saidUnreadable) this.o.log.debug(said);
    else this.o.log.warn(said);
    this.saidUnreadable = true;
    if (!isRequest) return;
    const e = refuse.upstreamUnreadable(why);
    this.answer(gen, m.id, e.code, e.message, e.data);
  }

  /**
   * The server answered `m` for a session it no longer knows: it did not run it. The epoch ends;
   * a request's refusal says it was not run (InFlight.endGeneration reads `gen.notRun`).
   */
  private sessionLost(gen: RemoteGeneration, m: Message, isRequest: boolean, status: number): void {
    if (isRequest) gen.notRun.set(m.id, status);
    this.owner.lose(gen, "new-session", `the server no longer knows our session (HTTP ${status})`);
  }

  /**
   * `then` runs once the request `id` is answered, on whichever stream; at once when it was
   * answered before its own POST's response came.
   */
  private whenAnswered(gen: RemoteGeneration, id: unknown, then: () => void): void {
    const asked = gen.asked.get(id);
    if (asked === undefined) return void then();
    const before = asked.answered;
    asked.answered = () => {
      before();
      then();
    };
  }

  /**
   * An answer to no request asked: dropped, said at once and then at most once a minute with a
   * count (the gateway's warnings are the one way a remote server writes to the host's log).
   */
  private strayAnswer(gen: RemoteGeneration, id: string | number, text: string): void {
    if (gen.initializeAnswered && id === gen.initializeId) {
      // the gateway took the first (see below): said as such, since this one would have
      // rewritten the record
      this.strays.say("initialize", `dropped a second answer to initialize from ${this.o.url.host}`);
      return;
    }
    const written = writtenIdOf(text, id);
    const shown = this.o.released === undefined ? written : String(this.o.released.scrubValue(written));
    this.strays.say("unknown-id", `dropped a response from the server with an unknown id ${cutShort(shown)}`);
  }

  /**
   * The stream that carried the initialize answer is still open a second later: said once, since
   * nothing waits on it (what else the server sends on it is still read and delivered).
   */
  private closeIfLeftOpen(gen: RemoteGeneration, res: IncomingMessage): void {
    if (res.complete || res.destroyed) return;
    res.destroy();
    if (gen.warnedLeftOpen || !gen.alive || this.owner.stopping()) return;
    gen.warnedLeftOpen = true;
    this.o.log.warn(
      `${this.o.url.host} keeps the SSE stream of a request open after answering it; portcullis closes it (the server should, once its answer is sent)`,
    );
  }

  /**
   * The server-to-client stream: requests and notifications the server sends outside a call, and
   * the sign of a server lost between calls (the stream ends, and looking again finds the session
   * unknown). Refused for a passing reason (a front's 502 while the server restarts, a 503), it
   * is looked for again with backoff (`retryMs`, doubled up to STREAM_RETRY_MAX_MS): given up, a
   * restarted server would be noticed only by the next call.
   */
  private openStream(gen: RemoteGeneration, opened = Date.now(), retryMs = STREAM_RETRY_MS): void {
    if (!gen.alive || this.owner.stopping() || gen.stream || gen.older !== null) return;
    void this.headersFor(gen).then((headers) => {
      if (!gen.alive || this.owner.stopping() || "withheld" in headers) return;
      const req = this.request(gen, "GET", { ...headers.headers, accept: "text/event-stream" }, (why) => {
        // not looked for again: the same GET would get the same answer
        gen.stream = null;
        this.o.log.warn(
          `the server-to-client stream of ${this.o.url.host} could not be read (${why}); it is not opened again in this session`,
        );
      });
      gen.stream = req;
      this.whenVerified(gen, req, () => req.end());
      req.on("response", (res) => {
        const status = res.statusCode ?? 0;
        // 405: the server offers no such stream; sessions are checked per request. A 404 when
        // the server gave no session is the same: there is no session it could have forgotten,
        // and a server that keeps none, whose web framework has no route for GET, answers 404.
        // Taken for a lost session, each new epoch lost its own at once, until supervision gave
        // up on a server that was working.
        if (status === 405 || (status === 404 && gen.sessionId === null)) {
          gen.stream = null;
          return void res.resume();
        }
        if (status === 404 || (status === 400 && gen.sessionId !== null)) {
          res.resume();
          this.owner.lose(gen, "new-session", `the server no longer knows our session (HTTP ${status})`);
          return;
        }
        if (status !== 200) {
          gen.stream = null;
          res.resume();
          if (retryMs === STREAM_RETRY_MS)
            this.o.log.info(
              `${this.o.url.host} refused the server-to-client stream (HTTP ${status}); looking again with backoff`,
            );
          const next = Math.min(retryMs * 2, STREAM_RETRY_MAX_MS);
          setTimeout(() => this.openStream(gen, Date.now(), next), retryMs).unref();
          return;
        }
        this.readSse(gen, res, () => {
          gen.stream = null;
          if (!gen.alive || this.owner.stopping()) return;
          // Ended: the server may only be pruning streams, or it may be gone. Look again.
          const wait = Date.now() - opened < 1000 ? 1000 : 0;
          setTimeout(() => this.openStream(gen), wait).unref();
        });
      });
    });
  }

  private readSse(
    gen: RemoteGeneration,
    res: IncomingMessage,
    ended: () => void,
    oversize: (bytes: number) => void = (bytes) => this.owner.oversize(bytes, gen, null),
  ): void {
    const reader = new SseReader(
      (e) => {
        if (e.event !== "message" || !gen.alive) return;
        let msg: unknown;
        try {
          msg = JSON.parse(e.data);
        } catch {
          this.notJson.say("not-json", "dropped an event from the remote server that is not JSON");
          return;
        }
        for (const [one, written] of messagesOf(msg, e.data)) this.deliver(gen, one, null, written);
      },
      oversize,
      this.maxBytes,
    );
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      reader.end();
      ended();
    };
    res.on("data", (b: Buffer) => reader.push(b));
    res.on("end", finish);
    res.on("close", finish);
    res.on("error", finish);
    this.reads(res);
  }

  /**
   * One message from the server to the gateway; an initialize result completes the record.
   * `text`: the message as the server wrote it, which the gateway reads for itself. An answer is
   * matched to the request it answers by its id among the requests asked (`sent` is then that
   * request, whatever stream carried it) and taken once; one whose id names no request asked
   * (never sent, or answered already: a second answer, one on another stream after the first)
   * is dropped here, said sparingly. Before, one that came on another request's stream was not
   * read as an answer to its request: not to initialize or server/discover (what the server says
   * of itself went unchecked), and its request's own stream, ending with nothing on it, ended the
   * epoch as if the session were lost (test/http/hostile-remote-crossed-answers.test.ts).
   */
  private deliver(
    gen: RemoteGeneration,
    msg: unknown,
    sent: Message | null,
    text: string,
    own = false,
  ): void {
    if (!gen.alive || !this.owner.isCurrent(gen)) return;
    // (an id that is no id, 1e400 or null, matches nothing: the gateway says what is wrong with it)
    if (!own && isAnswer(msg) && isPlainId(msg.id)) {
      const asked = gen.asked.get(msg.id);
      if (asked === undefined) return void this.strayAnswer(gen, msg.id, text);
      gen.asked.delete(msg.id);
      sent = asked.m;
      if (sent.method === "initialize") gen.initializeId = msg.id;
      asked.answered();
    }
    if (sent?.method === "initialize" && isResponseTo(msg, sent.id)) {
      // One answer is the answer: the gateway takes the first and would drop another as an
      // answer to nobody. Read here, a second one (a batch of two, another event on the stream)
      // rewrote the epoch's record (protocol version and capabilities, in its identity) and the
      // MCP-Protocol-Version sent from then on, to what the client never negotiated.
      if (gen.initializeAnswered) {
        this.o.log.warn(`dropped a second answer to initialize from ${this.o.url.host}`);
        return;
      }
      gen.initializeAnswered = true;
      // the server itself answered initialize: reachable, before the gateway reads the answer and
      // sends what follows it
      this.owner.reached(gen);
      const why = unsendableVersion((msg as { result?: unknown }).result);
      if (why !== null) {
        // Every later request carries it in MCP-Protocol-Version: one that cannot be a header
        // value failed each request before it was made, each failure ended the epoch, and
        // supervision gave up blaming lost sessions. Its requester is told instead.
        const e = refuse.upstreamVersionInvalid(why);
        const error = { jsonrpc: "2.0", id: sent.id, error: e };
        this.owner.line(JSON.stringify(error), gen, true);
        return;
      }
    }
    if ((sent?.method === "initialize" || sent?.method === "server/discover") && isResponseTo(msg, sent.id)) {
      const result = (msg as { result?: unknown }).result;
      if (isObject(result) && !noteSelf(this.o, gen, result, sent.method === "initialize", text)) {
        this.owner.lose(gen, "server-info-changed", "the server describes itself differently (serverInfo)");
        return;
      }
    }
    this.owner.line(text, gen, own);
  }

  /**
   * A JSON-RPC error to the gateway for a request the server did not answer. `posted`: the
   * request went to the server, so it is answered only while still asked (its answer may have
   * come on another stream: then there is nothing to say).
   */
  private answer(
    gen: RemoteGeneration,
    id: unknown,
    code: number,
    message: string,
    data: unknown,
    posted = true,
  ): void {
    if (posted && !gen.asked.delete(id)) return;
    const msg = { jsonrpc: "2.0", id, error: { code, message, data } };
    // the gateway's own words, in the server's place: never taken for the server's (ServerMessages)
    this.deliver(gen, msg, null, JSON.stringify(msg), true);
  }
}

/**
 * The messages of what the server wrote (`text`, parsed as `parsed`), each with its own text as
 * written: the elements of a batch are cut out of it (batchText.ts), never written again from
 * their parsed value, so ids reach the gateway as the server spelled them and every message is
 * read there by the same checks (the shared id check, the depth limit). Nothing when there was
 * nothing to read.
 */
function messagesOf(parsed: unknown, text: string): [unknown, string][] {
  if (parsed === undefined) return [];
  if (!Array.isArray(parsed)) return [[parsed, text]];
  const texts = elementTexts(text);
  // a parsed array always splits into as many texts; anything else would be a bug here
  if (texts === null || texts.length !== parsed.length) return [];
  return parsed.map((one, i) => [one, texts[i]!]);
}

/**
 * What makes an initialize result's protocolVersion unfit for the MCP-Protocol-Version header,
 * or null: a version is a short token of visible ASCII ("2025-06-18"). One that is not a string
 * is left to the client, which gets the answer and judges it: no header is sent for it.
 */
function unsendableVersion(result: unknown): string | null {
  const v = isObject(result) ? result.protocolVersion : undefined;
  if (typeof v !== "string") return null;
  if (v.length === 0 || v.length > MAX_VERSION_CHARS) return `${v.length} characters long`;
  if (!/^[\x21-\x7e]+$/.test(v)) return "not printable ASCII without spaces";
  return null;
}

/** An id a request of the gateway's can have: a string or a finite number. */
function isPlainId(id: unknown): id is string | number {
  return typeof id === "string" || (typeof id === "number" && Number.isFinite(id));
}

/** The longest protocolVersion taken ("2025-06-18" has 10 characters). */
const MAX_VERSION_CHARS = 64;

/** The request a `notifications/cancelled` names, or undefined when it names none. */
function cancelledId(m: Message): unknown {
  const params = (m as { params?: unknown }).params;
  return isObject(params) ? params.requestId : undefined;
}

/**
 * Redirects are not followed. The epoch's record names the URL the calls go to; a redirect would
 * send them, the session id and the configured headers (vault secrets among them) to another URL,
 * perhaps another server, that the record and the approvals given under it do not name. The
 * operator decides whether the new location is the same server, and configures it.
 */
function isRedirect(status: number): boolean {
  return status === 301 || status === 302 || status === 303 || status === 307 || status === 308;
}

/**
 * Where a redirect points, resolved against the URL, without its query or user info (they may
 * carry a credential); null when it says nowhere. Its host as the URL parser writes it, lower
 * case, has the released values taken out in any case: every later scrub of the refusal is of
 * the values as they are, and a server could put its credential into the host name it names.
 */
function redirectTarget(base: URL, location: string | undefined, released?: ShownValues): string | null {
  if (!location) return null;
  try {
    const u = new URL(location, base);
    if (u.origin === "null" || !released || released.size === 0) return `${u.origin}${u.pathname}`;
    return `${u.protocol}//${released.scrubHost(u.host)}${u.pathname}`;
  } catch {
    return null;
  }
}

/**
 * A 4xx to initialize that may come from a server of the older HTTP+SSE transport (the standard
 * names 404 and 405): not one that says who may ask (401, 403, 407) or how often (429).
 */
function mayBeOlderTransport(status: number): boolean {
  return status >= 400 && status < 500 && ![401, 403, 407, 429].includes(status);
}

/** How long, and for how many bytes, the GET that looks for the older transport's endpoint event waits for it. */
const OLDER_PROBE_MS = 5_000;
const OLDER_PROBE_BYTES = 64 * 1024;
/** The longest endpoint taken (the SDK's: a path and a 36-character session id). */
const MAX_ENDPOINT_CHARS = 2048;

/**
 * The older transport's endpoint (an `endpoint` event's data, resolved against the URL), or why
 * it is refused: another origin than the URL's (the configured headers would go there), user
 * credentials in it, not a URL. Nothing of it is quoted.
 */
function sameOrigin(data: string, base: URL): URL | string {
  const text = data.trim();
  if (text.length === 0 || text.length > MAX_ENDPOINT_CHARS)
    return `its endpoint event is empty or longer than ${MAX_ENDPOINT_CHARS} characters`;
  let u: URL;
  try {
    u = new URL(text, base);
  } catch {
    return "its endpoint event does not name a URL";
  }
  if (u.origin !== base.origin)
    return `its endpoint event names another origin than ${base.origin} (the configured headers go to that origin only)`;
  if (u.username !== "" || u.password !== "") return "its endpoint event names a URL with user credentials";
  u.hash = "";
  return u;
}

/**
 * How long a request's SSE stream may stay open after its answer was read before the gateway
 * closes it (closeIfLeftOpen): long enough for a server that ends it right after the answer.
 */
const LEFT_OPEN_GRACE_MS = 1_000;

/**
 * How long a POST that carries no request may stay open (see closeWhenDue): its 202 takes
 * milliseconds; this is for a server that holds it. PORTCULLIS_HELD_POST_MS (for tests: the tests
 * of a held POST wait for it; read at each POST) replaces it.
 */
const NO_ANSWER_OWED_MS = 10_000;
const noAnswerOwedMs = (): number => envMs("PORTCULLIS_HELD_POST_MS", NO_ANSWER_OWED_MS);

/** The first wait before the server-to-client stream is looked for again after a refusal, and the longest. */
const STREAM_RETRY_MS = 1000;
const STREAM_RETRY_MAX_MS = 30_000;

function waitFor(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

function seconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
}
