import { refuse } from "../guard/refusals.js";
import {
  type Classified,
  errorResponse,
  type Id,
  INVALID_REQUEST,
  METHOD_NOT_FOUND,
  type Notification,
  PARSE_ERROR,
  parseLine,
  type Request,
  type Response,
  unparsedIdOf,
} from "../relay/jsonrpc.js";
import { type IdSpan, plainIdSpan } from "../relay/rawSplice.js";
import type { ServerLink } from "../supervisor/link.js";
import { MAX_MESSAGE_DEPTH } from "../util/jsonDepth.js";
import type { Logger } from "../util/log.js";
import { idTextOf, markRequest, markWrittenIntegers } from "./clientIdText.js";
import type { ClientSession } from "./clientSession.js";
import type { Downstream } from "./downstream.js";
import type { UrlElicitations } from "./elicitation.js";
import { type GuardedRequests, listensToTools, paramsProblem } from "./guardedRequests.js";
import type { InFlight } from "./inFlight.js";
import type { ProgressTokens } from "./progress.js";
import {
  isGuardedMethod,
  isGuardedMethodVariant,
  isRelayableNotification,
  isTaskMethod,
  listenResourceUris,
  listenWithKnownParams,
} from "./protocol.js";
import type { ServerRequests } from "./serverRequests.js";
import { cutShort, leftOutWords, preview } from "./text.js";
import { UnreadInput } from "./unreadInput.js";

/**
 * What was wrong with a client's answer to a server's request that the transport refused before
 * the gateway read it (over HTTP: its POST got 400 or 413).
 */
export type RefusedAnswer =
  | { kind: "too-large"; bytes: number }
  | { kind: "too-deep" }
  | { kind: "invalid"; reason: string };

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

export interface ClientMessagesPorts {
  log: Logger;
  /** a peer's line for a log line: scrubbed, then cut short */
  quote(text: string): string;
  downstream: Downstream;
  link: ServerLink;
  session: ClientSession;
  inFlight: InFlight;
  serverRequests: ServerRequests;
  guarded: GuardedRequests;
  elicitation: UrlElicitations;
  /** the client's progress tokens the gateway spoke under: a cancelled request's is freed */
  progress: ProgressTokens;
  /**
   * the client's first request other than a server/discover probe: the agent run begins (once).
   * Null when it has begun; else why it could not (the request is then refused).
   */
  beginRun(): string | null;
  /** starts the catalog fetch of the current generation if it needs one and the session allows it */
  catalogIfNeeded(): void;
}

/**
 * What the client says, read and routed: its requests (answered by the gateway, sent through the
 * guard, or relayed as written under a wire id), its notifications (a cancellation finds its
 * request wherever it is), its answers to the server's requests, and what cannot be read (too
 * large, too deep, not JSON-RPC), answered so that nobody waits for it.
 */
export class ClientMessages {
  /** lines that came before the first epoch, replayed in order once it is up */
  private early: { text: string; idText: string | undefined; written: string | undefined }[] | null = [];

  /** the client's notifications for a server that reads none of its input: dropped, not queued */
  private readonly unread: UnreadInput;

  constructor(private readonly p: ClientMessagesPorts) {
    this.unread = new UnreadInput(p.log);
  }

  /**
   * One line from the client. `idText`: a request's id as the client wrote it, when the line
   * carries another (over HTTP, the session's wire id): what the audit records the request under.
   * `written`: the request as the client wrote it, when `text` is it re-serialised (over HTTP).
   */
  onLine(text: string, idText?: string, written?: string): void {
    // traced as it arrives: a line kept for the first epoch (the client's `initialize`, nearly
    // always) is part of the conversation too
    if (this.p.log.debugging !== false) this.p.log.debug(`← client ${this.p.quote(text)}`);
    // The client may speak before the first server process is up (its identity is
    // captured before spawn): keep its words, in order, until then.
    if (this.early) {
      this.early.push({ text, idText, written });
      return;
    }
    const line = this.parseClientLine(text, idText, written);
    this.onMessage(line.c, line);
  }

  /** The first epoch is up: what the client said before it is handled now, in order. */
  firstEpochUp(): void {
    const early = this.early;
    if (!early) return;
    this.early = null;
    for (const { text, idText, written } of early) {
      const line = this.parseClientLine(text, idText, written);
      this.onMessage(line.c, line);
    }
  }

  /** Lines kept for the first epoch (each a request not answered yet, or a message to pass on). */
  get waiting(): number {
    return this.early?.length ?? 0;
  }

  /**
   * The line's message, its id swapped for a stand-in where the client's text must survive, and
   * for a request the gateway may relay as written, where its id lies (`plainIdSpan`: one scan
   * that also gives the raw id, so it is not looked for twice).
   */
  private parseClientLine(text: string, idText?: string, written?: string): ClientLine {
    const parsed = parseLine(text);
    const span =
      parsed.kind === "request" && !NOT_RELAYED_AS_WRITTEN.has(parsed.msg.method) ? plainIdSpan(text) : null;
    const ids = this.p.downstream.clientIds;
    const rawId = span ? text.slice(span.start, span.end) : undefined;
    const c = ids ? ids.adopt(parsed, text, rawId, this.isOpen) : parsed;
    // the id the audit names the request by: the client's own, never a stand-in or a wire id;
    // and its call key, which joins its intent to its end (clientIdText.ts)
    if (c.kind === "request") {
      markRequest(c.msg, idText ?? ids?.standInText(c.msg.id) ?? undefined);
      // an integer of its arguments that would reach the server as another one: refused (guard step 5)
      markWrittenIntegers(c.msg, written ?? text);
    }
    return { c, text, span };
  }

  /** Whether a request of the client held under `id` is open (held, being decided, or at the server). */
  private readonly isOpen = (id: Id): boolean => this.p.guarded.has(id) || this.p.inFlight.carries(id);

  /**
   * A client message over the size limit was dropped unread; nothing is left unanswered.
   * A request is answered with an error carrying its own id (`rawId`, read from the passing
   * bytes), so the client does not wait for its timeout; a line with no id gets the error with
   * id null, as a parse error would. A response (no method) to a server's request is turned
   * into an error to that server.
   */
  onOversize(bytes: number, rawId: string | null, hasMethod: boolean): void {
    this.p.log.warn(`dropped a ${bytes}-byte message from the client (over the size limit)`);
    if (!hasMethod && rawId !== null) {
      this.p.serverRequests.answerInstead(JSON.parse(rawId) as Id, refuse.responseTooLarge(bytes, "client"));
      return;
    }
    const e = refuse.requestTooLarge(bytes, "not forwarded");
    this.p.downstream.send(errorResponse(this.clientIdOf(rawId), e.code, e.message, e.data));
  }

  /**
   * The client's answer to the server's request `id` (the gateway's id for it at the client) was
   * refused by the transport before the gateway read it (over HTTP, its POST got 400 or 413 and
   * the client knows it did not go through). The server's request is answered with the error the
   * same answer gets on stdio, under its own id, rather than left waiting for an answer that is
   * not coming.
   */
  answerRefused(id: Id, problem: RefusedAnswer): void {
    this.p.log.warn(
      `refused the client's answer to the server's request ${cutShort(JSON.stringify(id))} (${problem.kind})`,
    );
    const e =
      problem.kind === "too-large"
        ? refuse.responseTooLarge(problem.bytes, "client")
        : problem.kind === "too-deep"
          ? refuse.responseTooDeep(MAX_MESSAGE_DEPTH, "client")
          : refuse.responseInvalid(problem.reason, "client");
    this.p.serverRequests.answerInstead(id, e);
  }

  /** The id the gateway uses for a raw client id text (a stand-in when the text must survive byte-exact). */
  private clientIdOf(rawId: string | null): Id | null {
    if (rawId === null) return null;
    const value = JSON.parse(rawId) as Id;
    return this.p.downstream.clientIds ? this.p.downstream.clientIds.standIn(value, rawId) : value;
  }

  /** `line`: the line as the client wrote it, for a request relayed as written (`InFlight.forward`). */
  private onMessage(c: Classified, line?: ClientLine): void {
    if (c.kind === "invalid" && c.tooDeep) {
      this.onTooDeep(c.id, c.tooDeep.hasMethod);
      return;
    }
    if (c.kind === "invalid") {
      this.p.log.warn(`invalid message from the client: ${c.reason}`);
      // a malformed answer to a server's request: that server is answered, never left waiting
      const answers = answeredServerRequest(c, line?.text);
      if (answers !== null)
        this.p.serverRequests.answerInstead(answers, refuse.responseInvalid(c.reason, "client"));
      // the client's bad line itself: a line that is not JSON gets -32700 under id null (its id
      // could not be read as JSON-RPC reads one; and a response is never answered under its id,
      // which is the gateway's, not a request of the client's)
      const code = c.unparsed ? PARSE_ERROR : INVALID_REQUEST;
      // a batch's requests are each refused under their own id (one the client has open already
      // is not: an answer under it would pass for that request's); a batch without one, under null
      const batch = (c.batch ?? []).filter((id) => !this.isOpen(id));
      if (batch.length > 0) {
        for (const id of batch)
          this.p.downstream.send(
            errorResponse(id, INVALID_REQUEST, `Invalid JSON-RPC message: ${c.reason}.`),
          );
        return;
      }
      this.p.downstream.send(errorResponse(c.id, code, `Invalid JSON-RPC message: ${c.reason}.`));
      return;
    }
    if (c.kind === "response") this.onResponse(c.msg);
    else if (c.kind === "notification") this.onNotification(c.msg);
    else this.onRequest(c.msg, line);
  }

  /**
   * A client message nested deeper than MAX_MESSAGE_DEPTH, dropped: a request is answered with
   * its own id, an answer to a server's request becomes an error to that server (as for a
   * message over the size limit), a notification is only logged.
   */
  private onTooDeep(id: Id | null, hasMethod: boolean): void {
    this.p.log.warn(`dropped a message from the client nested deeper than ${MAX_MESSAGE_DEPTH} levels`);
    if (hasMethod) {
      if (id === null) return; // a notification
      const e = refuse.requestTooDeep(MAX_MESSAGE_DEPTH, "not forwarded");
      this.p.downstream.send(errorResponse(id, e.code, e.message, e.data));
      return;
    }
    if (id !== null)
      this.p.serverRequests.answerInstead(id, refuse.responseTooDeep(MAX_MESSAGE_DEPTH, "client"));
  }

  private onRequest(msg: Request, line?: ClientLine): void {
    const { session, inFlight, guarded } = this.p;
    if (this.idInUse(msg)) return;
    session.onRequest(msg);
    if (msg.method !== "server/discover") {
      // a store that cannot take the run's row: answered like any store failure, never a crash
      const unrecorded = this.p.beginRun();
      if (unrecorded !== null) {
        const e = refuse.auditUnavailable(unrecorded);
        this.p.downstream.send(errorResponse(msg.id, e.code, e.message, e.data));
        return;
      }
    }
    if (session.era === "modern" && !session.eraByProbeOnly) {
      // No handshake in this era: the first real request is when the gateway can
      // fetch the catalog (a server/discover probe alone does not need one, nor a ping after it:
      // the client may still fall back to initialize, ClientSession.onRequest).
      this.p.catalogIfNeeded();
    }
    // A watcher may have swapped its worker, or the server exec'd other code, since the last
    // look: find out before a request whose answer depends on which code runs is handled (a few
    // /proc reads). What passes unguarded (a ping, a list of prompts) grants nothing and is not
    // recorded per call: it is left to the idle poll, which keeps relaying it cheap.
    // Before the server's first answer every request gets the look: the process tree is observed
    // while it starts (Supervisor.checkEarly), and a worker swapped meanwhile is seen.
    if (isGuardedMethod(msg.method) || this.p.link.current?.settled === null) this.p.link.checkReplacement();
    switch (msg.method) {
      case "initialize":
        session.keepInitialize(msg);
        // its params become the handshake replayed to a new process only once a server answers them
        inFlight.forward(msg, { initializes: (msg.params ?? {}) as Record<string, unknown> });
        return;
      case "tools/list":
        guarded.serveToolsList(msg);
        return;
      case "tools/call":
        guarded.call(msg);
        return;
      case "resources/read":
      case "resources/subscribe":
      case "prompts/get":
      case "completion/complete":
        guarded.read(msg);
        return;
      case "subscriptions/listen": {
        // only the members the protocol gives a listen go on, decided or not: one it does not
        // have (a `resourceSubscription`, uris beside the filter) is decided by no one, and a
        // lenient server may subscribe to the resources it names
        const { msg: listen, dropped } = listenWithKnownParams(msg);
        if (dropped.length > 0) this.warnListenLeftOut(listen, dropped);
        // resource subscriptions are decided as resources/subscribe of each uri would be; params
        // or a `_meta` a guarded read is refused for (params that are no object, whose uris the
        // gateway cannot read; a `_meta` that is no object; a progress token that is neither a
        // string nor a number, or would reach the server as another number) are refused there,
        // whether the listen names resources or not, never relayed as they are
        if (listenResourceUris(listen) !== undefined || paramsProblem(listen) !== null) {
          guarded.listen(listen);
          return;
        }
        const open = listensToTools(listen) ? session.listenOpened(listen.id) : undefined;
        // not sent (no live process: answered server_unavailable): no listen of the client's,
        // so the gateway's own list_changed does not go out under its id
        if (!inFlight.forward(listen, { listen })) session.listenEnded(open);
        return;
      }
      default:
        if (isTaskMethod(msg.method)) {
          // The gateway offers no tasks, so no task of this client's exists behind it; a server
          // that made tasks some other way would hand out results past the call records.
          this.p.log.warn(`refused ${preview(msg.method)}: portcullis does not offer tasks`);
          this.p.downstream.send(
            errorResponse(
              msg.id,
              METHOD_NOT_FOUND,
              `Method not found: ${JSON.stringify(msg.method)} (portcullis does not offer tasks: every tools/call through it is answered with its result, so there is no task to ask about).`,
            ),
          );
          return;
        }
        if (isGuardedMethodVariant(msg.method)) {
          // Not byte-for-byte a guarded method, but a lenient server might take it for one:
          // never forwarded, so it can never skip the guard.
          this.p.log.warn(`refused ${preview(msg.method)}: not a known method, too close to a guarded one`);
          this.p.downstream.send(
            errorResponse(msg.id, METHOD_NOT_FOUND, `Method not found: ${JSON.stringify(msg.method)}.`),
          );
          return;
        }
        // not re-opened on a new process any more, whatever this process answers
        if (msg.method === "resources/unsubscribe")
          session.unsubscribed((msg.params as { uri?: unknown } | undefined)?.uri);
        // only relayed, nothing of it recorded or rewritten: its own bytes go on, with the wire id
        inFlight.forward(msg, setLevelOf(msg), line);
        return;
    }
  }

  /** Says on stderr which members of the client's subscriptions/listen were left out, by name. */
  private warnListenLeftOut(listen: Request, dropped: string[]): void {
    this.p.log.warn(
      `subscriptions/listen ${cutShort(idTextOf(listen))}: ${leftOutWords(dropped)}: the server gets only the filter the protocol defines, its resource uris decided`,
    );
  }

  /**
   * A request, whatever its method, whose id a request of this client still in flight carries
   * (held, being decided, or at the server; not one it cancelled), however either spelled it (JSON's
   * equality: `1.0` is `1`, as a cancellation reads it), is refused, never handled. The
   * gateway holds requests by that id: a relayed ping under a call's id would take the call's
   * place in the table of requests at the server, and its answer would free the id while the call
   * still runs. (The audit pairs a call's intent and end by its call key, not by this id.)
   * JSON-RPC asks ids to be unique among requests in flight; clients that number their requests
   * never hit this.
   */
  private idInUse(msg: Request): boolean {
    // the same id spelled otherwise (`1.0` for `1`) is the same id: a cancellation names both
    const inUse =
      this.isOpen(msg.id) || this.p.downstream.clientIds?.sameIdOpen(msg.id, this.isOpen) === true;
    if (!inUse) return false;
    // named as the client wrote it: a stand-in's prefix is the process's own, never shown
    const id = idTextOf(msg);
    // cut in the gateway's line (the client's answer names it whole: it is the client's own id)
    this.p.log.warn(
      `refused ${cutShort(msg.method)} ${cutShort(id)}: that id is already in use by a request in flight`,
    );
    this.p.downstream.send(
      errorResponse(
        msg.id,
        INVALID_REQUEST,
        `Invalid request: id ${id} is already in use by a request in flight; send it with a new id.`,
      ),
    );
    return true;
  }

  private onNotification(msg: Notification): void {
    if (!isRelayableNotification(msg.method)) {
      this.p.log.warn(
        `dropped a notification of ${preview(msg.method)} from the client: only the protocol's notifications/… are relayed (a server would run any other method sent without an id as a request the guard never saw)`,
      );
      return;
    }
    if (msg.method === "notifications/initialized") {
      // after an initialize the gateway answered epoch_transition: no server answered it, so this
      // ends no handshake (and the next process must get its initialize first)
      if (this.p.session.lostInitialize) {
        this.p.log.debug(
          "dropped notifications/initialized: the client's initialize was lost to an epoch change",
        );
        return;
      }
      this.p.session.markInitialized();
      this.p.inFlight.notify(msg);
      this.p.catalogIfNeeded();
      return;
    }
    if (msg.method === "notifications/cancelled") {
      const requestId = (msg.params as { requestId?: Id } | undefined)?.requestId;
      if (requestId === undefined) return;
      // Over for the client wherever it is (held, being decided, at the server): it gets no answer,
      // and a server that obeys sends none, so no answer would free its progress token. A later
      // request under that token counts from its own first step, never from this one's values.
      const forwarded = this.p.guarded.cancel(requestId) ? undefined : this.p.inFlight.cancel(requestId);
      this.p.progress.ended(requestId);
      if (forwarded === undefined) return;
      if (forwarded.closedListen) this.p.session.listenClosed(requestId);
      if (forwarded.wire === null) return; // never sent (it waited for a replayed handshake), or an initialize
      // (the server would read it only after the request it cancels, if ever)
      if (this.unread.dropped(this.p.link, "a notification of the client's")) return;
      // False (ignored): nothing can take it. Its process is being stopped with the gateway (stdin
      // already closed; `down` comes when it exits or its grace ends: any other end of a process
      // sends `down` at once, which takes the request, and the cancellation finds nothing to
      // forward), or its stdin pipe broke (the process is stopped for that, `down` follows), or a
      // server reached by URL cannot be reached. The cancellation is already whole on this side
      // (inFlight.cancel above: its one end recorded, its id free, no answer owed to the client,
      // out of the release window, not waited for at shutdown); what stays is the entry that
      // drops a late answer, taken by that answer or by the epoch's `down`.
      this.p.inFlight.notify({ ...msg, params: { ...msg.params, requestId: forwarded.wire } });
      return;
    }
    if (this.unread.dropped(this.p.link, "a notification of the client's")) return;
    // (kept while a new process's replayed handshake is under way: sent once it is complete)
    this.p.inFlight.notify(msg);
  }

  private onResponse(msg: Response): void {
    if (this.p.elicitation.onResponse(msg)) return; // the answer to the gateway's own elicitation
    this.p.serverRequests.answered(msg);
  }
}

/**
 * What a client's logging/setLevel sets, kept with it while it is at the server (and once
 * accepted, in the session: sent again to a new process after its replayed handshake).
 */
function setLevelOf(msg: Request): { setsLevel?: Record<string, unknown> } {
  if (msg.method !== "logging/setLevel") return {};
  const params = msg.params;
  if (typeof params !== "object" || params === null || Array.isArray(params)) return {};
  const { _meta: _envelope, ...level } = params as Record<string, unknown>;
  return { setsLevel: level };
}

/**
 * The id of the server's request (the gateway's id for it at the client) that a malformed client
 * line answers, or null when it answers none. Of a line that is not even JSON (NaN or Infinity in
 * a result, a raw control character in a string), only its top-level id and whether it is a
 * response are read (`unparsedIdOf`), so that the server's request is answered instead of
 * waiting for ever; nothing else of such a line is trusted.
 */
function answeredServerRequest(
  c: Extract<Classified, { kind: "invalid" }>,
  text: string | undefined,
): Id | null {
  if (c.unparsed) {
    const named = text === undefined ? null : unparsedIdOf(text);
    return named?.meant === "response" ? named.id : null;
  }
  return c.meant === "response" ? c.id : null;
}
