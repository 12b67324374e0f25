import { refuse } from "../guard/refusals.js";
import { isNodeWatchNotice, underNodeWatch } from "../identity/index.js";
import { idJson } from "../relay/ids.js";
import {
  type ErrorObject,
  errorResponse,
  type Id,
  INVALID_REQUEST,
  type Notification,
  PARSE_ERROR,
  parseLine,
  type Response,
  unparsedIdOf,
} from "../relay/jsonrpc.js";
import { plainIdSpan, spliceId, writtenIdOf } from "../relay/rawSplice.js";
import type { LinkGeneration as Generation, ServerLink } from "../supervisor/link.js";
import { sameJson } from "../util/canonical.js";
import { MAX_MESSAGE_DEPTH } from "../util/jsonDepth.js";
import type { Logger } from "../util/log.js";
import { SparingWarnings } from "../util/sparingWarnings.js";
import type { ReleasedValues } from "../vault/scrub.js";
import { exactReadNumbers, transportRewrites, writtenAgain, writtenNumber } from "./asWritten.js";
import type { ClientSession } from "./clientSession.js";
import type { Downstream } from "./downstream.js";
import {
  GATEWAY_META_PREFIX,
  mayHideGatewayWords,
  resultWithoutGatewayMeta,
  withoutGatewayMeta,
} from "./gatewayMeta.js";
import type { ClientPending, InFlight } from "./inFlight.js";
import type { ProgressTokens } from "./progress.js";
import {
  acknowledgedParams,
  advertiseListChanged,
  honouredListChanges,
  SUBSCRIPTION_ID_META,
  withoutTasks,
} from "./protocol.js";
import type { ServerRequests } from "./serverRequests.js";
import {
  attributedInputRequests,
  attributedProgress,
  marksOfGateway,
  passesForGateway,
  undeclaredInputRequest,
  unreadableInputRequests,
} from "./serverWords.js";
import { cutShort } from "./text.js";

export interface ServerMessagesPorts {
  log: Logger;
  /** a peer's line for a log line: scrubbed, then cut short */
  quote(text: string): string;
  /** JSON text of a peer's (an id as written) for a log line: scrubbed, then cut short, not quoted again */
  shown(text: string): string;
  /** credential values released to the server: scrubbed from everything it says (src/vault/scrub.ts) */
  released?: ReleasedValues;
  downstream: Downstream;
  link: ServerLink;
  session: ClientSession;
  inFlight: InFlight;
  serverRequests: ServerRequests;
  /** the client's progress tokens the gateway spoke under (its values stay increasing) */
  progress: ProgressTokens;
  /** starts the catalog fetch of the current generation if it needs one and the session allows it */
  catalogIfNeeded(): void;
  /** fetches `gen`'s tool list again (the server says it changed) */
  refreshCatalog(gen: Generation): void;
  /** the generation whose process the gateway vouches for now */
  current(): Generation | null;
}

/**
 * What the server says, read and routed: answers go to whoever asked (the client under its own
 * id, byte-exact when nothing in them is rewritten or recorded; the gateway's own requests),
 * its requests and notifications go on to the client, and what cannot be read (too large, too
 * deep, not JSON-RPC) is answered so that nobody waits for it.
 */
export class ServerMessages {
  /**
   * A server's messages dropped unread (too deep, invalid, too large, answering no request, not
   * scrubbable; notifications by position, from an ended process, or with a number that cannot
   * be passed on as written): each kind said at once, then at most once a minute with a count. A server writes to the
   * host's log through these lines (a server reached by URL through nothing else), and one line
   * per message let it write there many times the bytes it sent.
   */
  private readonly dropped: SparingWarnings;

  constructor(private readonly p: ServerMessagesPorts) {
    this.dropped = new SparingWarnings((line) => p.log.warn(line));
  }

  /** `own`: a message the link wrote itself in the server's place (a remote server's HTTP error), not the server's */
  onLine(text: string, gen: Generation, own = false): void {
    // Every message from the server passes here first: a released credential value it echoes
    // (raw, base64, URL-encoded) never reaches the client, the catalog in the store, or a log.
    const released = this.p.released;
    if (released !== undefined && released.size > 0) {
      try {
        text = released.scrubLine(text);
      } catch {
        this.unscrubbable(text, gen);
        return;
      }
    }
    if (this.p.log.debugging !== false) this.p.log.debug(`← server ${this.p.quote(text)}`);
    const c = parseLine(text);
    if (c.kind === "invalid" && c.tooDeep) {
      this.dropped.say(
        "too-deep",
        `dropped a message from the server nested deeper than ${MAX_MESSAGE_DEPTH} levels`,
      );
      if (c.id === null) return;
      this.answerDropped(gen, c.id, writtenIdOf(text, c.id), c.tooDeep.hasMethod, {
        request: refuse.requestTooDeep(MAX_MESSAGE_DEPTH, "dropped"),
        response: refuse.responseTooDeep(MAX_MESSAGE_DEPTH, "server"),
      });
      return;
    }
    if (c.kind === "invalid") {
      // `node --watch` writes its own notices ("Restarting 'server.js'") to the stdout it shares
      // with its worker: no fault of the server's, so not warned of as one. Only the log's
      // wording depends on the line's words (a server can print them); it is dropped either way.
      if (c.unparsed && isNodeWatchNotice(text) && underNodeWatch(gen.record))
        this.p.log.info(
          `node --watch (node's watch mode) said: ${this.p.quote(text)} (not a message; dropped)`,
        );
      else
        this.dropped.say(
          `invalid: ${c.reason}`,
          `dropped an invalid message from the server: ${c.reason}: ${this.p.quote(text)}`,
        );
      // a malformed answer or request that names an id: whoever waits on it is answered, never
      // left waiting (a call's end recorded as an error); of a line that is not even JSON, only
      // its id is read
      const named = c.unparsed
        ? unparsedIdOf(text)
        : c.meant !== undefined && c.id !== null
          ? { id: c.id, rawId: writtenIdOf(text, c.id), meant: c.meant }
          : null;
      if (named)
        this.answerDropped(gen, named.id, named.rawId, named.meant === "request", {
          request: invalidMessage(c.reason, c.unparsed ? PARSE_ERROR : INVALID_REQUEST),
          response: refuse.responseInvalid(c.reason, "server"),
        });
      return;
    }
    if (c.kind === "response") this.onResponse(c.msg, gen, text, own);
    else if (c.kind === "request") this.p.serverRequests.relay(c.msg, gen, text);
    else this.onNotification(c.msg, gen, text);
  }

  /**
   * A server message the scrubber failed on: never shown nor relayed (it may hold a released
   * value), the gateway goes on. Whoever waits on its id is answered with an error, as for a
   * message that cannot be read; its id is read from the unscrubbed text only to route that
   * error (the requester's own id goes to the client, the server's back to the server).
   */
  private unscrubbable(text: string, gen: Generation): void {
    this.dropped.say(
      "unscrubbable",
      "dropped a message from the server: it could not be scrubbed of the values released to it",
    );
    const reason = "it could not be scrubbed of the credential values released to the server";
    try {
      const c = parseLine(text);
      const id = c.kind === "invalid" ? null : "id" in c.msg ? c.msg.id : null;
      if (c.kind === "notification" || id === null || id === undefined) return;
      this.answerDropped(gen, id, writtenIdOf(text, id), c.kind === "request", {
        request: invalidMessage(reason, INVALID_REQUEST),
        response: refuse.responseInvalid(reason, "server"),
      });
    } catch {
      /* nothing more can be said: the message is dropped */
    }
  }

  /**
   * A server message over the size limit was dropped unread. A response (no method) to a
   * request the gateway wrote becomes an error to the requester, with its own id; a request
   * of the server gets an error back; a notification is only logged.
   */
  onOversize(bytes: number, gen: Generation, rawId: string | null, hasMethod: boolean): void {
    this.dropped.say("too-large", `dropped a ${bytes}-byte message from the server (over the size limit)`);
    if (rawId === null) return;
    this.answerDropped(gen, JSON.parse(rawId) as Id, rawId, hasMethod, {
      request: refuse.requestTooLarge(bytes, "dropped"),
      response: refuse.responseTooLarge(bytes, "server"),
    });
  }

  /**
   * A server message the gateway will not read (too large, nested too deep, or not valid
   * JSON-RPC), from the process of `gen`, with its id (`written`: as the server wrote it): a
   * request of the server gets `errors.request` back; a response to a request the gateway wrote
   * to that process gives its requester `errors.response` instead, under the requester's own id
   * (a call's end recorded as an error).
   */
  private answerDropped(
    gen: Generation,
    id: Id,
    written: string,
    hasMethod: boolean,
    errors: { request: ErrorObject; response: ErrorObject },
  ): void {
    if (hasMethod) {
      const e = errors.request;
      this.p.serverRequests.reply(errorResponse(id, e.code, e.message, e.data), written);
      return;
    }
    if (this.notItsOwn(id, gen)) return;
    const entry = this.p.inFlight.take(id, gen);
    if (!entry) return;
    const e = errors.response;
    if (entry.origin === "gateway") {
      entry.resolve(errorResponse(id, e.code, e.message, e.data));
      return;
    }
    // A late answer to a request the client cancelled touches nothing of the client's: its id
    // may name a newer request by now, whose progress token must not be ended here.
    if (this.lateForCancelled(entry)) return;
    this.listenAnswered(entry);
    this.p.progress.ended(entry.clientId);
    this.p.inFlight.resulted(entry, "error");
    this.p.downstream.send(errorResponse(entry.clientId, e.code, e.message, e.data));
  }

  /**
   * An answer to the client's subscriptions/listen ends it (the server closed it, or refused it):
   * over for the gateway as when the client cancels it, so that none of its own list_changed goes
   * out under its id any more. Handled as the answer arrives, while the id is still that listen's
   * (the client's id is in use until then); its entry is already taken, so it is not re-opened.
   */
  private listenAnswered(entry: ClientPending): void {
    if (entry.listen !== undefined) this.p.session.listenClosed(entry.clientId);
  }

  /** `text`: the line as the server wrote it, already scrubbed of released values. */
  private onResponse(msg: Response, gen: Generation, text?: string, own = false): void {
    if (this.notItsOwn(msg.id, gen)) return;
    const entry = this.p.inFlight.take(msg.id, gen);
    if (!entry) {
      const late = this.p.inFlight.lateAnswer(msg.id, gen);
      if (late !== undefined) {
        // its own request it gave up on (and cancelled): nobody waits for this answer any more
        this.p.log.info(
          `dropped the server's late answer to the gateway's ${late} (id ${msg.id}): it stopped waiting for it`,
        );
        return;
      }
      // The id as written: the one thing scrubLine keeps so, and the log scrubs every line. Read
      // back, a number of more than 15-17 digits is rounded, and a value it holds is no longer
      // found in it while most of its digits would be logged.
      // Cut short: a string id may be as long as a line (64 MiB).
      const id = text === undefined || msg.id === null ? JSON.stringify(msg.id) : writtenIdOf(text, msg.id);
      this.dropped.say(
        "unknown-id",
        `dropped a response from the server with an unknown id ${this.p.shown(id)}`,
      );
      return;
    }
    if (entry.origin === "gateway") {
      entry.resolve(msg, text);
      return;
    }
    if (!gen.settled) this.p.link.settle(gen);
    if (this.lateForCancelled(entry)) return;
    this.listenAnswered(entry);
    this.p.progress.ended(entry.clientId);
    // An error of the server's that could pass for one of the gateway's (a code of its refusal
    // range, a data.error) goes on inside the gateway's server_error, which says whose it is.
    // So does a result with the marks of the gateway's own input_required, and an embedded
    // elicitation that speaks as the gateway's is said to be the server's.
    const imitates = own ? null : msg.error ? passesForGateway(msg.error) : marksOfGateway(msg.result);
    if (imitates !== null) {
      this.p.log.warn(
        `the server answered ${cutShort(entry.method)} with ${msg.error ? "an error" : "a result"} that ${imitates}: passed on to the client as the server's (server_error, data.server)`,
      );
      const e = msg.error
        ? refuse.serverError(msg.error, imitates)
        : refuse.serverResult(msg.result, imitates);
      msg = { jsonrpc: "2.0", id: msg.id, error: e };
    }
    // An input_required whose input requests the gateway cannot read (by position): the client
    // gets response_invalid in its place, never a request it would read otherwise than the gateway.
    const unreadable =
      own || msg.error
        ? null
        : (unreadableInputRequests(msg.result) ??
          undeclaredInputRequest(msg.result, this.p.session.clientCapabilities()));
    if (unreadable !== null) {
      this.p.log.warn(
        `replaced the server's answer to ${cutShort(entry.method)} with an error: ${unreadable}`,
      );
      msg = { jsonrpc: "2.0", id: msg.id, error: refuse.responseInvalid(unreadable, "server") };
    }
    const attributed = own || msg.error ? null : attributedInputRequests(msg.result);
    if (attributed !== null) msg = { ...msg, result: attributed };
    // what the server wrote under the gateway's own _meta keys is the gateway's to say: taken out
    // (and out of each listed item's _meta in a relayed list: a resource's, a prompt's)
    const unmarked = own || msg.error ? null : resultWithoutGatewayMeta(entry.method, msg.result);
    if (unmarked !== null) {
      this.tookGatewayMeta(`answer to ${cutShort(entry.method)}`, unmarked.taken);
      msg = { ...msg, result: unmarked.part };
    }
    // The answer that ends a subscriptions/listen names the subscription in its result's _meta by
    // the listen's id: at the server that is the gateway's wire id, so the client's own id goes
    // there, as on the acknowledgement and the notifications under the listen (and over HTTP).
    const renamed = entry.listen !== undefined && !own ? withClientSubscriptionId(msg, entry.clientId) : null;
    if (renamed !== null) msg = renamed;
    // relayed as written only when the gateway neither rewrites it (initialize, an error that
    // passes for the gateway's) nor acts on or records what it read in it (what a server says it
    // supports; a call's outcome): the gateway and the client must read the same message. (Where
    // re-serialising would change a number, the rule below lets it go as written all the same,
    // and what the gateway reads of a handshake keeps that number's exact value.)
    const handshake = entry.method === "initialize" || entry.method === "server/discover";
    const transport = transportRewrites(this.p.downstream, msg);
    let asWritten =
      !handshake &&
      !entry.intent &&
      imitates === null &&
      unreadable === null &&
      attributed === null &&
      renamed === null &&
      unmarked === null &&
      transport === null &&
      !mayHideGatewayWords(msg, text);
    // A number that re-serialising would change (`9007199254740993`, `12345678901234567891`,
    // `1e-400`): the answer goes on as written when nothing rewrites it (`writtenNumber`); else the
    // client gets an error in its place, never another number. initialize's and server/discover's
    // results go on so too: the gateway's own change to them (listChanged advertised, tasks taken
    // out, below) is written into the server's text with every other number as written
    // (`writtenAgain`), and what the gateway reads there (protocolVersion, capabilities) is kept
    // with such numbers' exact values, to compare a new process's answer with as the client read
    // it (`exactReadNumbers`). (One regex test of the line in the common case.)
    if (!asWritten && text !== undefined && !own && this.p.downstream.sendText !== undefined) {
      const rewrites =
        imitates !== null ||
        unreadable !== null ||
        attributed !== null ||
        renamed !== null ||
        unmarked !== null
          ? "the gateway rewrites the answer"
          : transport;
      const written = writtenNumber(text, msg, rewrites, true);
      if (written !== null) {
        if (written.cannot === null) asWritten = true;
        else {
          const reason = `a number in it that the gateway would pass on as another (at ${written.where}) cannot be passed on as written: ${written.cannot}`;
          this.p.log.warn(
            `replaced the server's answer to ${cutShort(entry.method)} with an error: ${reason}`,
          );
          msg = { jsonrpc: "2.0", id: msg.id, error: refuse.responseInvalid(reason, "server") };
        }
      }
    }
    // what goes to the client as written: the server's text, or its handshake answer rewritten
    let written = asWritten ? text : undefined;
    if (handshake && msg.result !== undefined) {
      // (a number re-serialising would change is in what the gateway reads only when the answer goes as written)
      const exact = exactReadNumbers(written);
      const initialize = entry.method === "initialize";
      if (initialize) this.p.session.noteNegotiated(msg.result, entry.initializes, exact);
      else this.p.session.noteDiscovered(msg.result, exact);
      const shown = initialize ? withoutTasks(advertiseListChanged(msg.result)) : withoutTasks(msg.result);
      if (!sameJson(shown, msg.result)) {
        msg = { ...msg, result: shown };
        if (written !== undefined) written = writtenAgain(msg, written);
      }
      if (initialize) queueMicrotask(() => this.p.catalogIfNeeded());
    }
    if (entry.intent || entry.listenReads?.length) {
      const result = msg.result as { isError?: unknown } | undefined;
      this.p.inFlight.resulted(entry, msg.error ? "error" : result?.isError === true ? "tool-error" : "ok");
    }
    // a level the process accepted: set again on the next one (Gateway.reconnect)
    if (entry.setsLevel && !msg.error) this.p.session.levelSet(entry.setsLevel);
    // a subscription the process accepted: re-opened on the next one (Gateway.reopenSubscriptions)
    if (entry.subscribes && !msg.error)
      this.p.session.subscribed({
        ...entry.subscribes,
        idText: entry.call?.idText ?? JSON.stringify(entry.clientId),
        gen: entry.gen,
      });
    this.sendDownstream(msg, entry.clientId, written);
  }

  /**
   * Said when a server's message (`what`) had `taken` keys under the gateway's own `_meta` prefix
   * taken out: sparingly, as a server may write them on every message (its keys are not quoted).
   */
  private tookGatewayMeta(what: string, taken: number): void {
    this.dropped.say(
      "gateway-meta",
      `took ${taken} _meta key(s) beginning "${GATEWAY_META_PREFIX}" out of the server's ${what}: those keys are portcullis's own words, never the server's`,
    );
  }

  /**
   * Whether `wire` names a request that the process of `gen` may not answer (nor speak for as a
   * subscription): written to another process, or a subscription whose process went away
   * (InFlight.heldElsewhere). Such a message is dropped, and logged: the request stays where it
   * is, for its own process's answer or that process's end. The server's own words never decide
   * which request they answer; only the process that sent them does. (The id is the gateway's
   * own number: bounded, nothing of the server's text is quoted.)
   */
  private notItsOwn(wire: Id | null, gen: Generation, what = "a response"): boolean {
    const owner = this.p.inFlight.heldElsewhere(wire, gen);
    if (owner === null) return false;
    if (owner === gen)
      // (debug: a process being stopped at shutdown closes its subscriptions as it goes, too)
      this.p.log.debug(
        `dropped ${what} from the server under id ${wire}: it names a subscription of epoch=${gen.epoch}, whose process went away (it is re-opened on the next)`,
      );
    else
      this.p.log.warn(
        `dropped ${what} from the server process of epoch=${gen.epoch} under id ${wire}: that id was written to another server process (epoch=${owner.epoch})`,
      );
    return true;
  }

  /**
   * An answer to a request the client cancelled: dropped. The client waits for none (MCP), may
   * already use its id again, and the call's end was written when it was cancelled.
   */
  private lateForCancelled(entry: ClientPending): boolean {
    if (!entry.cancelled) return false;
    this.p.log.debug(
      `dropped the server's answer to ${cutShort(entry.method)} ${cutShort(JSON.stringify(entry.clientId))}: the client cancelled it`,
    );
    return true;
  }

  /**
   * Answers the client under its own id. With the server's (scrubbed) line and a transport that
   * takes serialised messages, that line goes on with only its id replaced by the client's id as
   * the client wrote it, when the splice is safe (`plainIdSpan`); otherwise it is serialised again.
   */
  private sendDownstream(msg: Response, clientId: Id, text: string | undefined): void {
    const down = this.p.downstream;
    if (text !== undefined && down.sendText) {
      const span = plainIdSpan(text);
      if (span) {
        const json = idJson(clientId);
        down.sendText(spliceId(text, span, down.clientIds ? down.clientIds.restore(json) : json));
        return;
      }
    }
    down.send({ ...msg, id: clientId });
  }

  private onNotification(msg: Notification, gen: Generation, text: string): void {
    if (gen !== this.p.current() || !gen.alive) {
      // A process whose epoch is over (its grace after its stdin closed on a restart): its open
      // requests were cancelled for the client, and what it says now is said by code the gateway
      // no longer vouches for, as its requests are (ServerRequests.relay).
      this.dropped.say(
        "epoch-over",
        `dropped the server's ${this.p.quote(msg.method)}: the server process of epoch=${gen.epoch} that sent it is over`,
      );
      return;
    }
    const read = msg;
    const meta = (msg.params as { _meta?: Record<string, unknown> } | undefined)?._meta;
    const subscription = meta?.[SUBSCRIPTION_ID_META];
    if (msg.method === "notifications/tools/list_changed") {
      // A signal to re-list, never evidence of identity: the gateway fetches the
      // list itself and tells the client only when the revision changed.
      this.p.log.debug("server says its tool list changed; fetching it");
      this.p.refreshCatalog(gen);
      return;
    }
    if (msg.method === "notifications/tasks/status") {
      // A task's status goes from the receiver that runs it to the requestor that created it. The
      // client is offered no tasks (the capability, taskSupport and params.task are taken out), so
      // no task of the client's runs at the server: a status the server sends names a task made
      // some other way, which the client never asked for and could only follow up with the
      // tasks/* requests the gateway refuses. Dropped, never relayed.
      this.p.log.debug("dropped the server's notifications/tasks/status: the client was offered no tasks");
      return;
    }
    if (Array.isArray(msg.params)) {
      // By position: MCP gives every notification its params by name (an object), as it does every
      // request (ServerRequests.relay). By position nothing the gateway reads in one (a listen's
      // subscription id in _meta, a progress token, a cancellation's requestId) is there to read,
      // while a lenient client could map the array onto those names: never relayed.
      this.dropped.say(
        "positional",
        `dropped the server's ${this.p.quote(msg.method)}: its params are by position (an array), which MCP does not allow`,
      );
      return;
    }
    if (subscription === undefined && msg.method === "notifications/subscriptions/acknowledged") {
      // An acknowledgement acknowledges a listen, which it names: one that names none is no
      // server's answer to a listen of the client's, and a client that takes it for its own would
      // read as honoured what the guard took out of that listen (acknowledgedParams).
      this.dropped.say(
        "unnamed-acknowledgement",
        "dropped the server's notifications/subscriptions/acknowledged: it names no subscription",
      );
      return;
    }
    // what the server wrote under the gateway's own _meta keys is the gateway's to say: taken out
    // (an acknowledgement's refusals are written in below, by the gateway, when it refused any)
    const unmarked = withoutGatewayMeta(msg.params);
    if (unmarked !== null) {
      this.tookGatewayMeta(this.p.quote(msg.method), unmarked.taken);
      msg = { ...msg, params: unmarked.part };
    }
    if (subscription !== undefined) {
      if (this.notItsOwn(subscription as Id, gen, `a notification (${this.p.quote(msg.method)})`)) return;
      const entry = this.p.inFlight.subscription(subscription as Id, gen);
      if (!entry) {
        // (cut short: a subscription id is whatever JSON the server wrote there)
        this.p.log.debug(
          `dropped a notification for an unknown subscription ${this.p.shown(JSON.stringify(subscription) ?? "")}`,
        );
        return;
      }
      // the acknowledgement ends the records of the listen's resource subscriptions: each one the
      // server honours is open now
      let params = msg.params;
      if (msg.method === "notifications/subscriptions/acknowledged") {
        if (entry.listenReads?.length) {
          const honoured = (msg.params as { notifications?: { resourceSubscriptions?: unknown } } | undefined)
            ?.notifications?.resourceSubscriptions;
          this.p.inFlight.listenAcknowledged(entry, Array.isArray(honoured) ? honoured : []);
        }
        // the prompt and resource lists it honours: the client is told they changed when the
        // listen is re-opened on a new process (InFlight.reopenListens, GuardedRequests.reopenListen)
        if (entry.listen) entry.listenLists = honouredListChanges(msg.params, entry.listen);
        // the uris the guard took out of the listen, named with their refusals (the gateway's words)
        params = acknowledgedParams(msg.params, entry.listenRefused);
      }
      msg = {
        ...msg,
        params: {
          ...params,
          _meta: { ...(params?._meta as object | undefined), [SUBSCRIPTION_ID_META]: entry.clientId },
        },
      };
    }
    if (msg.method === "notifications/cancelled") {
      const relayed = this.p.serverRequests.cancelled(msg, text, gen);
      if (relayed === null) return;
      msg = relayed;
    }
    if (msg.method === "notifications/progress") {
      // Only of a request of the client's at this process: not of a call held for a human (the
      // gateway speaks under its token then), answered, cancelled, or sent to another process.
      const token = (msg.params as { progressToken?: unknown } | undefined)?.progressToken;
      if (
        (typeof token !== "string" && typeof token !== "number") ||
        !this.p.inFlight.carriesToken(token, gen)
      ) {
        this.p.log.debug(
          "dropped the server's notifications/progress: its token names no request of the client's at it",
        );
        return;
      }
      // a message that could be read as the gateway's (under a token it spoke under, or in its
      // words) is said to be the server's
      const attributed = attributedProgress(msg.params, this.p.progress.spokeUnder(token));
      msg = this.p.progress.relayed(msg);
      if (attributed !== null)
        msg = { ...msg, params: { ...(msg.params as object), message: attributed.message } };
    }
    // A number that re-serialising would change, still in what is sent (a cancellation's
    // requestId the gateway replaced is not): the notification goes on as written when the gateway
    // rewrote nothing in it (`writtenNumber`); else it is dropped with a log line, never passed on
    // with another number. (One regex test of the line in the common case.)
    const down = this.p.downstream;
    if (down.sendText !== undefined) {
      const written = writtenNumber(
        text,
        msg,
        msg === read ? null : "the gateway rewrites the notification",
        false,
      );
      if (written !== null) {
        if (written.cannot === null) {
          down.sendText(text);
          return;
        }
        this.dropped.say(
          "notification-number",
          `dropped the server's ${this.p.quote(msg.method)}: a number in it that the gateway would pass on as another (at ${written.where}) cannot be passed on as written (${written.cannot})`,
        );
        return;
      }
    }
    down.send(msg);
  }
}

/**
 * `msg`, an answer to the client's subscriptions/listen, with the client's listen id (`clientId`)
 * in its result's `_meta[SUBSCRIPTION_ID_META]` in place of whatever the server wrote there; null
 * when it names no subscription there (an error, or a result without the key), left as it is.
 */
function withClientSubscriptionId(msg: Response, clientId: Id): Response | null {
  const result = msg.result as { _meta?: unknown } | undefined;
  const meta = result?._meta;
  if (typeof meta !== "object" || meta === null || Array.isArray(meta)) return null;
  if ((meta as Record<string, unknown>)[SUBSCRIPTION_ID_META] === undefined) return null;
  return { ...msg, result: { ...result, _meta: { ...meta, [SUBSCRIPTION_ID_META]: clientId } } };
}

/**
 * The standard error for a request that is not valid JSON-RPC (`reason`: what is wrong with it;
 * `code`: -32700 for one that is not JSON at all, -32600 otherwise).
 */
function invalidMessage(reason: string, code: number): ErrorObject {
  return { code, message: `Invalid JSON-RPC message: ${reason}.` };
}
