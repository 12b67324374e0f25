import type { CatalogSnapshot } from "../catalog/index.js";
import type { ApprovedCall, AuthorizationPort, decide, ReadFacts, ServerView } from "../guard/guard.js";
import { type EndedBy, refuse } from "../guard/refusals.js";
import {
  type ErrorObject,
  errorResponse,
  type Id,
  INTERNAL_ERROR,
  INVALID_PARAMS,
  type Request,
  type Response,
} from "../relay/jsonrpc.js";
import type { LinkGeneration as Generation } from "../supervisor/link.js";
import type { Logger } from "../util/log.js";
import { SparingWarnings } from "../util/sparingWarnings.js";
import type { CatalogSync } from "./catalogSync.js";
import {
  type CallName,
  callOf,
  idTextOf,
  newCallName,
  progressTokenProblem,
  respelledIntegerOf,
} from "./clientIdText.js";
import type { ClientSession, OpenListen, ResourceSubscription } from "./clientSession.js";
import { Deciding } from "./deciding.js";
import type { Downstream } from "./downstream.js";
import type { UrlElicitations } from "./elicitation.js";
import { withoutGatewayMeta } from "./gatewayMeta.js";
import { HeldRequests } from "./held.js";
import {
  type ForwardExtra,
  type InFlight,
  type ListenRead,
  type ListenToReopen,
  sendListsChanged,
} from "./inFlight.js";
import type { ProgressTokens } from "./progress.js";
import {
  callParamsForServer,
  listenResourceUris,
  listenWith,
  plainRequest,
  readFacts,
  readWithKnownParams,
  SUBSCRIPTION_ID_META,
  toolWithoutTasks,
} from "./protocol.js";
import type { GatewayRecords } from "./records.js";
import { cutShort, leftOutWords, metaProblem, preview } from "./text.js";
import { NotWritten } from "./unreadInput.js";

export interface GuardedRequestsPorts {
  log: Logger;
  downstream: Downstream;
  session: ClientSession;
  catalog: CatalogSync;
  records: GatewayRecords;
  elicitation: UrlElicitations;
  inFlight: InFlight;
  /** the client's progress tokens the gateway spoke under (its values stay increasing) */
  progress: ProgressTokens;
  holdTimeoutMs: number;
  /** the guard's decision (src/guard/guard.ts); replaced only by the guard-off benchmark */
  decide: typeof decide;
  /** the credential scopes a forwarded call may have released by the egress proxy while it runs */
  callScopes?: (call: ApprovedCall) => readonly string[];
  /** the generation that answers now: null before the first epoch */
  current(): Generation | null;
  /**
   * server_unavailable while no server can answer: none runs until its files change (a crash
   * loop under a watcher), or a remote server cannot be reached; null otherwise
   */
  serverDown(): ErrorObject | null;
  /**
   * server_unavailable while the launched server reads none of its input (ServerLink.notReading),
   * or while as many of the client's requests as may wait there wait for its answer
   * (InFlight.tooManyAtServer); null otherwise
   */
  notReading?(): ErrorObject | null;
  view(): ServerView;
  /** the approval layer of the agent run, once it began */
  auth(): AuthorizationPort | null;
  /** whether the client connection was ended */
  ended(): boolean;
  /** starts the catalog fetch of the current generation if it needs one and the session allows it */
  catalogIfNeeded(): void;
  /**
   * Looked at right before a guarded request is written: false when the code that would read it
   * is not the decided epoch's for sure now (a replacement found, a reader gone, a change being
   * judged); the request is then decided again, never sent.
   */
  mayForward(): boolean;
  /** why requests wait though the epoch's catalog is verified (see mayForward); null: no such reason */
  heldWhy(): string | null;
}

/**
 * The client's requests that wait on the verified catalog: tools/list, served from it, and
 * tools/call and the guarded reads (resources/read, resources/subscribe, prompts/get,
 * completion/complete), decided against it by the guard and forwarded with their intent
 * recorded. Held while the server's identity is pending; a call being decided can be cancelled.
 */
export class GuardedRequests {
  /** tools/call (and other recorded requests) and tools/list requests held while identity-pending */
  private readonly heldCalls: HeldRequests;
  private readonly heldLists: HeldRequests;
  /** the lines of requests refused because too many are held, said sparingly (the client decides how many) */
  private readonly thinned: SparingWarnings;
  /**
   * calls between "received" and "written or refused", by the client's id, so a cancellation can
   * find them; one the client cancelled is no longer here (its id is free at once) but stays in
   * `underWay` until its decision returns
   */
  private readonly deciding = new Map<string, Deciding>();
  /** every decision under way, cancelled ones included: the connection's end waits for them */
  private readonly underWay = new Set<Deciding>();
  /**
   * The client's subscriptions/listen with resource subscriptions that wait to be re-opened on a
   * new process, not decided for its epoch yet (its catalog not verified, a decision cut short):
   * still open for the client (their ids in use, a cancellation ends them), by id
   */
  private readonly waitingListens = new Map<string, ListenToReopen>();
  /** why the gateway ends the connection, once it does (endDecisions) */
  private ending: string | null = null;
  /** why waits for a human are cut short, once the connection ends (abortDecisions) */
  private cutShort: string | null = null;
  /**
   * How the connection's end answered what was held, once it did (answerHeldAtEnd): nothing serves a
   * held request after that, so a request that would be held from then on, and a decision that
   * returns from then on (one stalled past the end's bounded wait, by a store another process
   * keeps locked), is answered so at once and recorded, never held nor sent (`over`).
   */
  private heldAnsweredAs: EndAnswer | null = null;

  constructor(private readonly p: GuardedRequestsPorts) {
    this.heldCalls = new HeldRequests(p.holdTimeoutMs, (msg) => this.answerPending(msg));
    this.heldLists = new HeldRequests(p.holdTimeoutMs, (msg) => this.answerPending(msg));
    this.thinned = new SparingWarnings((line) => p.log.warn(line));
  }

  /** A tools/call, through the guard. */
  call(msg: Request): void {
    if (this.refusedBeforeInitialize(msg) || this.refusedAtEnd(msg) || this.refusedNotReading(msg)) return;
    this.handled(msg, this.handleCall(msg));
  }

  /** A guarded read, through the guard. */
  read(msg: Request): void {
    if (this.refusedBeforeInitialize(msg) || this.refusedAtEnd(msg) || this.refusedNotReading(msg)) return;
    this.handled(msg, this.handleRecorded(msg));
  }

  /**
   * A subscriptions/listen that asks for resource subscriptions (`resourceSubscriptions`), through
   * the guard: each uri decided as a resources/subscribe of it would be.
   */
  listen(msg: Request): void {
    if (
      this.refusedTooManyUris(msg) ||
      this.refusedBeforeInitialize(msg) ||
      this.refusedAtEnd(msg) ||
      this.refusedNotReading(msg)
    )
      return;
    this.handled(msg, this.handleListen(msg));
  }

  /**
   * Answers `msg` at once, -32602, when its `resourceSubscriptions` names more than
   * MAX_LISTEN_URIS uris: each uri of a listen refused is one audit record, so one message of the
   * client's could otherwise write as many as the 64 MiB line limit holds uris. Checked first,
   * before any refusal that records them (not initialized, the connection's end, a server that
   * reads nothing): nothing of it is decided, recorded or sent.
   */
  private refusedTooManyUris(msg: Request): boolean {
    const uris = listenResourceUris(msg);
    if (!Array.isArray(uris) || uris.length <= MAX_LISTEN_URIS) return false;
    // said sparingly: the client decides how often
    this.thinned.say(
      "listen-uris",
      `refused a subscriptions/listen of the client's: it names ${uris.length} resource uris, more than the ${MAX_LISTEN_URIS} portcullis takes in one listen`,
    );
    this.p.downstream.send(
      errorResponse(
        msg.id,
        INVALID_PARAMS,
        `subscriptions/listen: notifications.resourceSubscriptions names ${uris.length} resource uris; portcullis takes at most ${MAX_LISTEN_URIS} in one listen (nothing of this one was decided, recorded or sent): split them over several listens.`,
      ),
    );
    return true;
  }

  /**
   * Answers `msg` at once when the legacy client has not sent initialize: no catalog is fetched
   * before the handshake, so holding it would only make it wait out the hold timeout for an
   * identity_pending that blames a fetch nobody started. Not recorded: nothing was decided.
   */
  private refusedBeforeInitialize(msg: Request): boolean {
    if (!this.p.session.awaitsInitialize) return false;
    const lost = this.p.session.lostInitialize;
    this.p.log.warn(
      `refused ${msg.method} ${cutShort(idTextOf(msg))}: ${lost ? "the client's initialize was lost to an epoch change and it has not sent initialize again" : "the client has not sent initialize"}`,
    );
    const e = refuse.notInitialized(msg.method, lost);
    this.p.downstream.send(errorResponse(msg.id, e.code, e.message, e.data));
    return true;
  }

  /** Whether a call, read or tools/list under `id` is held or being decided. */
  has(id: Id): boolean {
    const key = `${typeof id}:${id}`;
    return (
      this.deciding.has(key) ||
      this.waitingListens.has(key) ||
      this.heldCalls.has(id) ||
      this.heldLists.has(id)
    );
  }

  /** Whether approval.resources is "per-call": every recorded read asks a human. */
  private readsAskHuman(): boolean {
    return this.p.auth()?.readsAskHuman?.() === true;
  }

  /** A listen to re-open that was not decided for this epoch: kept for the next verified catalog. */
  keepListen(listen: ListenToReopen): void {
    this.waitingListens.set(`${typeof listen.request.id}:${listen.request.id}`, listen);
  }

  /** The listens kept to re-open (keepListen), with the epoch that last held each, no longer kept. */
  takeWaitingListens(): ListenToReopen[] {
    const out = [...this.waitingListens.values()];
    this.waitingListens.clear();
    return out;
  }

  /**
   * The client cancelled `id`: a decision under way stops waiting (and nothing it allows is
   * sent); a held request, a call or read or a tools/list, is forgotten (true: nothing of it
   * reached the server). A cancelled request gets no answer, and its id is free at once.
   */
  cancel(id: Id): boolean {
    const key = `${typeof id}:${id}`;
    const d = this.deciding.get(key);
    if (d) {
      d.cancelled = true;
      d.abort();
      // a listen being re-opened is over now, not when its decision returns: by then the client
      // may have opened another listen under this id, which that late end must not close
      this.p.session.listenEnded(d.listen);
      // Its id is free now, not once the decision returns (a wait for a human, an intent being
      // written): a request the client sends under it right after the cancellation, in the same
      // write even, is not refused as "already in use". The decision sends nothing once it returns.
      this.deciding.delete(key);
    }
    // a listen waiting to be re-opened: over, nothing of it is at any live process
    if (this.waitingListens.delete(key)) {
      this.p.session.listenClosed(id);
      return true;
    }
    return this.heldCalls.cancel(id) || this.heldLists.cancel(id);
  }

  /** Requests held or being decided. */
  get unanswered(): number {
    return this.heldCalls.size + this.heldLists.size + this.deciding.size;
  }

  get decidingCount(): number {
    return this.underWay.size;
  }

  /**
   * The connection ends (`why`, the signal's reason, which the wait's log line gives): calls
   * waiting for a human stop waiting, each answered with its refusal; so does any call decided
   * from now on (a held call released by its catalog) rather than wait for a human nobody can
   * answer it for.
   */
  abortDecisions(why: string): void {
    this.cutShort = why;
    for (const d of this.underWay) d.abort(why);
  }

  /** A decision under way, as the connection stands: cut short from the start once it ends. */
  private newDeciding(): Deciding {
    const made = new Deciding();
    if (this.cutShort !== null) made.abort(this.cutShort);
    return made;
  }

  /**
   * The gateway ends the connection (`why`): calls waiting for a human stop waiting and are
   * answered with their refusal, as when the client closes its input; a decision that ends
   * otherwise (allowed, held) sends nothing and is answered as a held request is at the end.
   * A request that arrives from now on is answered so at once, never decided.
   */
  endDecisions(why: string): void {
    this.ending = why;
    this.abortDecisions("the connection ends");
  }

  /**
   * Answers `msg` at once when the connection is over for what waits (the gateway ends it, or the
   * end answered what was held: a signal, an HTTP session's end): nothing is decided or sent.
   */
  private refusedAtEnd(msg: Request): boolean {
    const end = this.over();
    if (end === null) return false;
    this.answerOver(msg, end);
    return true;
  }

  /**
   * How a request is answered that the connection's end came before: the gateway ends the
   * connection (`end`), or the end already answered what was held (answerHeldAtEnd); else null. From
   * then on nothing is held or sent: a request held now would never be answered, nor recorded.
   */
  private over(): EndAnswer | null {
    if (this.p.ended()) return { ending: this.ending ?? GATEWAY_ENDED, by: "gateway" };
    return this.heldAnsweredAs;
  }

  /** Answers `msg` as the end answered what was held (`end`); recorded unless `record` is false. */
  private answerOver(msg: Request, end: EndAnswer, record = true): void {
    if (end.ending === undefined) this.answerPending(msg, record);
    else this.answerAtEnd(msg, end.ending, end.by, record);
  }

  /**
   * A decision ended after the gateway began ending the connection (not cancelled by the client):
   * a refusal is answered as decided (false: go on); anything else sends nothing and gets the
   * answer a held request gets at the end, its intent (if one was written) closed.
   */
  private endedMeanwhile(
    msg: Request,
    verdict: Awaited<ReturnType<typeof decide>>,
    end: EndAnswer,
    tool?: string,
  ): boolean {
    if (verdict.action === "refuse") return false;
    if (verdict.action !== "forward") {
      // held (or its arguments judged): nothing of it is in the audit yet, its refusal is recorded
      this.answerOver(msg, end);
      return true;
    }
    const method = msg.method === "tools/call" ? undefined : msg.method;
    this.p.records.callInterrupted(
      callOf(msg),
      tool,
      verdict.call.epoch,
      // the gateway ended the connection (a signal, onChange: disconnect): not the client's cancel
      "connection_ended",
      "not_forwarded",
      method,
    );
    // its intent and that end are its records: no refusal is recorded beside them
    this.answerOver(msg, end, false);
    return true;
  }

  /**
   * Every held request is answered identity_pending (the connection ends). `ending`: why the
   * gateway ends the connection, when it does (`by` "client": the client closed its input, and no
   * new server process is brought in for it). That is then the reason given: what held the
   * request (a change being judged, say) is over and the session is closing, so "wait and retry"
   * would be stale.
   */
  answerHeld(ending?: string, by?: EndedBy): void {
    for (const msg of [...this.heldLists.drain(), ...this.heldCalls.drain()])
      this.answerOver(msg, { ending, by });
  }

  /**
   * The connection's end answers what is held, for good (answerHeld): after its bounded wait for
   * the decisions under way (a signal, the client's input closed, an HTTP session's end) or as the
   * gateway ends the connection. Nothing serves a held request after that, so a request that would
   * be held from then on, or a decision that returns from then on, is answered so too and
   * recorded, never held nor sent (`over`). (The first end's answer stands.)
   */
  answerHeldAtEnd(ending?: string, by?: EndedBy): void {
    this.heldAnsweredAs ??= { ending, by };
    this.answerHeld(ending, by);
  }

  serveToolsList(msg: Request): void {
    if (this.refusedBeforeInitialize(msg)) return;
    const v = this.p.view();
    const { catalog, session } = this.p;
    const snapshot = catalog.snapshot;
    if (v.state !== "ready" || !snapshot) {
      this.holdForCatalog(msg, this.heldLists);
      return;
    }
    const cursor = (msg.params as { cursor?: unknown } | undefined)?.cursor;
    if (cursor !== undefined) {
      // The whole verified snapshot is served in one page; no cursor was ever issued.
      this.p.downstream.send(
        errorResponse(msg.id, INVALID_PARAMS, "Unknown cursor: tools/list is served in one page."),
      );
      return;
    }
    if (catalog.revision !== null) {
      session.listed(catalog.revision, snapshot);
    }
    // The list is the gateway's: nothing of the server's results but the tools (whose fingerprint
    // the revision is) reaches the client, not their `_meta`, `cacheScope` or any member a later
    // revision adds, none of which the revision covers (docs/catalog.md, "What is served").
    // Modern clients cache a list for ttlMs: 0 makes them re-list whenever we say it changed; it
    // was verified for this session, so it is no list to share across principals ("private").
    const envelope =
      session.era === "modern" ? { resultType: "complete", ttlMs: 0, cacheScope: "private" } : {};
    this.p.downstream.send({
      jsonrpc: "2.0",
      id: msg.id,
      result: { ...envelope, tools: servedTools(snapshot) },
    });
    this.p.records.catalogServed(this.p.current()?.epoch, catalog.revision, snapshot.fingerprint);
  }

  private async handleCall(given: Request): Promise<void> {
    const { session, elicitation, records, downstream } = this.p;
    // A modern retry answering the gateway's own input_required: those fields are the gateway's.
    const { msg, answered } =
      session.era === "modern" ? elicitation.takeRetry(given) : { msg: given, answered: true };
    const params = (msg.params ?? {}) as { name?: unknown; arguments?: unknown };
    if (typeof params.name !== "string") {
      downstream.send(errorResponse(msg.id, INVALID_PARAMS, "tools/call needs params.name (a string)."));
      return;
    }
    const badMeta = paramsProblem(msg);
    if (badMeta !== null) {
      downstream.send(errorResponse(msg.id, INVALID_PARAMS, `tools/call: ${badMeta}`));
      return;
    }
    const tool = params.name;
    const key = `${typeof msg.id}:${msg.id}`;
    const mark = this.newDeciding();
    this.deciding.set(key, mark);
    this.underWay.add(mark);
    const progress = this.progressFor(msg, mark);
    let inputRequired: Record<string, unknown> | null = null;
    let verdict: Awaited<ReturnType<typeof decide>>;
    try {
      verdict = await this.p.decide({
        server: () => this.p.view(),
        facts: { tool, args: params.arguments ?? {}, seen: session.seen, respelled: respelledIntegerOf(msg) },
        auth: this.p.auth(),
        intent: {
          intent: (call, condition) => records.toolCalled(callOf(msg), params.arguments, call, condition),
        },
        hooks: {
          progress,
          get signal() {
            return mark.signal;
          },
          waiting: (id) => {
            if (session.era !== "modern") return elicitation.offer(id, { tool });
            // Modern: the call is answered at once with input_required (no server→client requests).
            // Not once the connection's end cut the wait short: no retry can follow.
            if (answered || mark.endedBy !== undefined) return;
            inputRequired = elicitation.inputRequired(id, { tool });
            if (inputRequired) mark.abort();
          },
        },
      });
    } catch (e) {
      if (mark.cancelled) return this.faultAfterCancel(msg, e);
      throw e;
    } finally {
      // (a request under the same id may be deciding by now, if this one was cancelled)
      if (this.deciding.get(key) === mark) this.deciding.delete(key);
      this.underWay.delete(mark);
    }
    if (mark.cancelled) {
      // An intent written for a call that will not be sent is closed, never left open.
      if (verdict.action === "forward")
        records.callInterrupted(callOf(msg), tool, verdict.call.epoch, "cancelled", "not_forwarded");
      return;
    }
    const end = this.over();
    if (end !== null && this.endedMeanwhile(msg, verdict, end, tool)) return;
    // The connection ended after the call was sent to the console but before its answer went out:
    // the retry input_required invites cannot come, so the call gets the refusal of a wait cut
    // short (authorization_required) and its request closes with the run.
    if (inputRequired && verdict.action === "refuse" && mark.endedBy === undefined) {
      this.recordDenied(msg, tool, params.arguments, "input_required");
      downstream.send({ jsonrpc: "2.0", id: msg.id, result: inputRequired });
      return;
    }
    switch (verdict.action) {
      case "hold":
        return this.hold(msg);
      case "refuse":
        this.recordDenied(msg, tool, params.arguments, verdict.reason);
        downstream.send(errorResponse(msg.id, verdict.error.code, verdict.error.message, verdict.error.data));
        return;
      case "invalid-arguments":
        this.recordDenied(msg, tool, params.arguments, "invalid_arguments");
        downstream.send({
          jsonrpc: "2.0",
          id: msg.id,
          result: {
            content: [
              {
                type: "text",
                text: `Invalid arguments for tool "${tool}" (checked against catalog revision ${this.p.catalog.revision}):\n- ${verdict.errors.join("\n- ")}`,
              },
            ],
            isError: true,
            ...(session.era === "modern" ? { resultType: "complete" } : {}),
          },
        });
        return;
      case "forward": {
        // What goes out is exactly what was validated, recorded and approved (the effective
        // arguments: `null` or absent arguments become `{}`, schema defaults filled in), as a
        // plain call: a `task` would make the server answer with a handle, and the outcome the
        // audit records would not be the call's (the gateway offers no tasks).
        const { params, dropped } = callParamsForServer(
          (msg.params ?? {}) as Record<string, unknown>,
          verdict.call.effective,
        );
        const { msg: out, dropped: beside } = plainRequest(msg, params);
        const stray = [...beside, ...dropped.filter((key) => key !== "task")];
        if (stray.length > 0) this.warnLeftOut(`tools/call ${preview(tool)}`, stray);
        // Checked before its decision, and again now: every call decided meanwhile passed that
        // first check at once, and written, all of them would wait behind what the server does not
        // read. Its intent is closed, and the client told as the first check tells it.
        if (this.notReadingAfterDecision(msg, tool, verdict.call.epoch)) return;
        const scopes = verdict.call.grant !== null ? (this.p.callScopes?.(verdict.call) ?? []) : [];
        // a revoke of the session grant it goes under stops what the egress proxy releases for it
        const holds = scopes.length > 0 ? this.p.auth()?.holding?.(verdict.call) : undefined;
        if (
          verdict.call.epoch !== this.p.current()?.epoch ||
          !this.p.mayForward() ||
          !this.p.inFlight.forward(out, {
            tool,
            scopes,
            ...(holds ? { holds } : {}),
            intent: true,
            call: callOf(msg),
          })
        ) {
          // never written: safe to evaluate again against the new state; its intent is closed
          // (the decision made again writes its own)
          records.callInterrupted(callOf(msg), tool, verdict.call.epoch, "redecided", "not_forwarded");
          return this.hold(msg);
        }
      }
    }
  }

  /** Says on stderr which params members of the client's request (`what`) were left out, by name. */
  private warnLeftOut(what: string, dropped: string[]): void {
    this.p.log.warn(`${what}: ${leftOutWords(dropped)}: the server gets only what was decided and recorded`);
  }

  /**
   * Requests that read the server's data without being tool calls: held while the server's
   * identity is pending (like a call), approved by a human when `approval.resources` asks for it
   * (the same guard and authorizer as a call, as a pseudo-tool named by method and target),
   * recorded durably with run, epoch, grant and a digest of their parameters, then forwarded as
   * they are.
   */
  private async handleRecorded(given: Request, retried = false): Promise<void> {
    const { records, session, elicitation } = this.p;
    // A modern retry answering the gateway's own input_required (a read or a prompt: the two reads
    // the 2026-07-28 era lets a server answer so): those fields are the gateway's, taken out.
    const multiRound = session.era === "modern" && INPUT_REQUIRED_READS.has(given.method);
    const taken = multiRound ? elicitation.takeRetry(given) : { msg: given, answered: false };
    // decided, recorded and sent with only the members its method has (a lenient server could
    // take its target from another one, which no grant of this target covers)
    const { msg, dropped } = readWithKnownParams(taken.msg);
    if (dropped.length > 0) this.warnLeftOut(msg.method, dropped);
    const answered = retried || taken.answered;
    const badMeta = paramsProblem(msg);
    if (badMeta !== null) {
      this.p.downstream.send(errorResponse(msg.id, INVALID_PARAMS, `${msg.method}: ${badMeta}`));
      return;
    }
    const read = readFacts(msg);
    const key = `${typeof msg.id}:${msg.id}`;
    const mark = this.newDeciding();
    this.deciding.set(key, mark);
    this.underWay.add(mark);
    let inputRequired: Record<string, unknown> | null = null;
    let verdict: Awaited<ReturnType<typeof decide>>;
    try {
      // With approval.resources "session" or "per-call", a human approves it first, exactly as a tool call.
      verdict = await this.p.decide({
        server: () => this.p.view(),
        facts: { tool: msg.method, args: msg.params ?? {}, seen: null },
        read,
        auth: this.p.auth(),
        intent: {
          intent: (call, condition) =>
            records.requestForwarded(callOf(msg), msg.method, msg.params, call, condition),
        },
        hooks: {
          progress: this.progressFor(msg, mark),
          get signal() {
            return mark.signal;
          },
          waiting: (id) => {
            if (session.era !== "modern") return elicitation.offer(id, { read });
            // Modern: no server→client requests. A read or a prompt is answered at once with
            // input_required, as a call is (not once the connection's end cut the wait short: no
            // retry can follow); a subscription or a completion, which may not be, just waits.
            if (!multiRound || answered || mark.endedBy !== undefined) return;
            inputRequired = elicitation.inputRequired(id, { read });
            if (inputRequired) mark.abort();
          },
        },
      });
    } catch (e) {
      if (mark.cancelled) return this.faultAfterCancel(msg, e);
      throw e;
    } finally {
      // (a request under the same id may be deciding by now, if this one was cancelled)
      if (this.deciding.get(key) === mark) this.deciding.delete(key);
      this.underWay.delete(mark);
    }
    const end = this.over();
    if (end !== null && !mark.cancelled && this.endedMeanwhile(msg, verdict, end)) return;
    // sent to the console: the client retries once it has shown the page, and the retry waits on
    // the same request (as a call's does)
    if (inputRequired && !mark.cancelled && verdict.action === "refuse" && mark.endedBy === undefined) {
      this.recordDenied(msg, `${read.method} ${read.target}`, read.params, "input_required");
      this.p.downstream.send({ jsonrpc: "2.0", id: msg.id, result: inputRequired });
      return;
    }
    if (mark.cancelled) {
      // A read recorded but not sent is closed, never left open (as a call is).
      if (verdict.action === "forward")
        records.callInterrupted(
          callOf(msg),
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
        this.p.downstream.send(
          errorResponse(msg.id, verdict.error.code, verdict.error.message, verdict.error.data),
        );
        return;
      case "invalid-arguments":
        return; // never for a read: its arguments are not checked
      case "forward":
        // a new epoch since it was recorded (or its code is no longer known for sure): decided and
        // recorded again against it, never sent to code it was not recorded (nor approved) for;
        // the first record is closed
        if (verdict.call.epoch !== this.p.current()?.epoch || !this.p.mayForward()) {
          records.callInterrupted(
            callOf(msg),
            undefined,
            verdict.call.epoch,
            "redecided",
            "not_forwarded",
            msg.method,
          );
          return this.handleRecorded(msg, answered);
        }
        // as a call is: not written behind what the server does not read (checked again now)
        if (this.notReadingAfterDecision(msg, undefined, verdict.call.epoch, msg.method)) return;
        // not sent (no live process: answered server_unavailable there): its record is closed
        if (!this.p.inFlight.forward(msg, { intent: true, call: callOf(msg), ...subscriptionOf(msg, read) }))
          records.callInterrupted(
            callOf(msg),
            undefined,
            verdict.call.epoch,
            "server_unavailable",
            "not_forwarded",
            msg.method,
          );
    }
  }

  /**
   * decideListen under a deciding mark kept by the listen's id while it runs (a cancellation of the
   * client's listen sets it), for the client's own listen (`first`) and for its re-open. What is
   * decided is kept in `out` as it is decided (a fault part way leaves the intents written there).
   */
  private async decideListenMarked(
    msg: Request,
    uris: string[],
    first: boolean,
    out: ListenDecision,
  ): Promise<Deciding> {
    const key = `${typeof msg.id}:${msg.id}`;
    const mark = this.newDeciding();
    out.mark = mark;
    mark.listen = out.open;
    this.deciding.set(key, mark);
    this.underWay.add(mark);
    try {
      await this.decideListen(msg, uris, mark, first, out);
      return mark;
    } finally {
      if (this.deciding.get(key) === mark) this.deciding.delete(key);
      this.underWay.delete(mark);
    }
  }

  /**
   * A client's subscriptions/listen with resource subscriptions. Each uri is decided in turn as the
   * client's resources/subscribe of it would be (held while the server's identity is pending; with
   * approval.resources asking for one, a human approves `resources/subscribe URI`, so one grant
   * covers both forms), recorded `request_forwarded` (method subscriptions/listen, the uri's
   * params) before anything is sent, and the acknowledgement ends each record. A uri refused is
   * recorded `authorization_denied` and taken out of the listen before it is sent (the server never
   * sees it); the rest of the listen (the other uris, toolsListChanged …) is sent, and its
   * acknowledgement tells the client which uris were refused and why (REFUSED_SUBSCRIPTIONS_META).
   * Only a listen left asking for nothing is answered, with the refusal of its first uri refused.
   */
  private async handleListen(msg: Request): Promise<void> {
    const badMeta = paramsProblem(msg);
    const uris = listenUris(msg);
    if (badMeta !== null || uris === null) {
      const why = badMeta ?? "notifications.resourceSubscriptions must be a list of resource uris (strings)";
      this.p.downstream.send(errorResponse(msg.id, INVALID_PARAMS, `subscriptions/listen: ${why}`));
      return;
    }
    const decision = newListenDecision();
    try {
      await this.decideClientListen(msg, uris, decision);
    } catch (e) {
      // As a fault while it is re-opened (reopenListen): the records it leaves open are closed, the
      // listen is no longer open, and the client is told so, unless it cancelled the listen.
      this.listenFaulted(decision);
      if (decision.mark?.cancelled) return this.faultAfterCancel(msg, e);
      this.p.log.warn(
        `could not open the client's subscriptions/listen ${preview(idTextOf(msg))}: ${String((e as Error)?.message ?? e)}; it is answered with an internal error`,
      );
      this.answer(
        msg,
        errorResponse(
          msg.id,
          INTERNAL_ERROR,
          "The gateway failed while deciding this subscriptions/listen, so no subscription was opened (nothing of it was sent); see the gateway's log, and listen again to subscribe.",
        ),
      );
    }
  }

  /**
   * A fault while deciding `msg` (a bug, or the store failing under the decision) after the client
   * cancelled it: logged, never answered. Its id was freed by the cancellation and may name the
   * client's next request already, which an internal error under it would answer in its place.
   */
  private faultAfterCancel(msg: Request, e: unknown): void {
    this.p.log.warn(
      `could not handle ${msg.method} ${preview(idTextOf(msg))}, which the client had cancelled: ${String((e as Error)?.message ?? e)}; not answered`,
    );
  }

  private async decideClientListen(msg: Request, uris: string[], d: ListenDecision): Promise<void> {
    const mark = await this.decideListenMarked(msg, uris, true, d);
    if (mark.cancelled) {
      // (not opened yet: nothing of it is in the session, and its id may be the client's next listen's)
      this.closeListenReads(d, "cancelled");
      return;
    }
    // (a wait for a human cut short as the client closes its input: as when the gateway ends it)
    const end = this.over();
    if (end !== null || mark.endedBy !== undefined) {
      // the uris the end came before (not decided, or held): refused with the listen, recorded
      // as a held listen's uris are at the end, so each uri of it has one end in the audit
      const undecided = undecidedUris(uris, d);
      this.closeListenReads(d, "connection_ended");
      const first = this.recordRefused(d);
      for (const uri of undecided)
        this.recordUriDenied(
          uri === uris[0] ? callOf(msg) : newCallName(idTextOf(msg)),
          uri,
          "identity_pending",
        );
      if (first) this.answer(msg, errorResponse(msg.id, first.code, first.message, first.data));
      else this.answerOver(msg, end ?? { ending: this.ending ?? GATEWAY_ENDED, by: "gateway" }, false);
      return;
    }
    if (d.stopped) {
      this.closeListenReads(d, "redecided");
      this.holdForCatalog(msg, this.heldCalls);
      return;
    }
    // a new epoch since they were recorded (or its code no longer known for sure): decided again
    const gen = this.p.current();
    if (d.reads.some((r) => r.epoch !== gen?.epoch) || !this.p.mayForward()) {
      this.closeListenReads(d, "redecided");
      return this.handleListen(msg);
    }
    const first = this.recordRefused(d);
    const out = listenWith(msg, new Set(d.reads.map((r) => r.uri)));
    if (out === null) {
      // every uri refused, and nothing else asked for: no subscription is left to open
      if (first === null) throw new Error("a subscriptions/listen with none of its uris decided");
      this.answer(msg, errorResponse(msg.id, first.code, first.message, first.data));
      return;
    }
    if (listensToTools(out)) d.open = this.p.session.listenOpened(msg.id);
    const reads = d.reads;
    d.reads = [];
    // (refused there too while the server reads none of its input: every listen decided meanwhile
    // passed the check before its decision)
    if (!this.p.inFlight.forward(out, { listen: out, listenReads: reads, ...refusedOf(d) })) {
      this.closeListenReads({ reads }, "server_unavailable");
      this.p.session.listenEnded(d.open);
    }
  }

  /**
   * Each of `uris` decided in turn for `msg`'s listen, into `out`: the uris allowed (`reads`, their
   * intents written), the uris refused (`refused`, nothing recorded yet: the caller records them
   * once the listen's outcome is known), until one is held (`stopped`: the whole listen is decided
   * again later) or the decision is cut short (cancelled, the connection ending).
   * `client`: the client's own listen (its first uri is recorded under the request's call key),
   * else one the gateway re-opens (every record gets a key of its own, no client waits to be told).
   */
  private async decideListen(
    msg: Request,
    uris: string[],
    mark: Deciding,
    client: boolean,
    out: ListenDecision,
  ): Promise<void> {
    const { records } = this.p;
    const method = "resources/subscribe";
    for (const [i, uri] of uris.entries()) {
      const name = client && i === 0 ? callOf(msg) : newCallName(idTextOf(msg));
      const read: ReadFacts = { method, target: uri, params: { uri }, via: "subscriptions/listen" };
      const verdict = await this.p.decide({
        server: () => this.p.view(),
        facts: { tool: method, args: { uri }, seen: null },
        read,
        auth: this.p.auth(),
        intent: {
          intent: (call, condition) =>
            records.requestForwarded(name, "subscriptions/listen", { uri }, call, condition),
        },
        hooks: client
          ? {
              progress: this.progressFor(msg, mark),
              get signal() {
                return mark.signal;
              },
              waiting: (id) => this.p.elicitation.offer(id, { read }),
            }
          : {
              get signal() {
                return mark.signal;
              },
            },
      });
      if (verdict.action === "forward") out.reads.push({ name, uri, epoch: verdict.call.epoch });
      else if (verdict.action === "refuse")
        out.refused.push({ uri, name, error: verdict.error, reason: verdict.reason });
      else {
        out.stopped = verdict;
        return;
      }
      if (mark.cancelled || mark.endedBy !== undefined || this.over() !== null) return;
    }
  }

  /**
   * The refusals of a listen's uris, each recorded `authorization_denied` (as the resources/subscribe
   * of it would be) under the name its decision used; the first refusal, or null when none.
   */
  private recordRefused(d: ListenDecision): ErrorObject | null {
    for (const r of d.refused) if (r.name) this.recordUriDenied(r.name, r.uri, r.reason);
    return d.refused[0]?.error ?? null;
  }

  /** A listen's uri refused, recorded `authorization_denied` as the resources/subscribe of it would be. */
  private recordUriDenied(name: CallName, uri: string, reason: string): void {
    const at = { epoch: this.p.current()?.epoch ?? null, revision: this.p.catalog.revision };
    this.p.records.denied(name, `resources/subscribe ${uri}`, { uri }, at, reason);
  }

  /** The records of a listen's resource subscriptions that were not sent: each closed, `reason`. */
  private closeListenReads(
    d: { reads: ListenRead[] },
    reason: "cancelled" | "connection_ended" | "redecided" | "server_unavailable" | "gateway_error",
  ): void {
    const reads = d.reads;
    d.reads = [];
    for (const r of reads)
      this.p.records.callInterrupted(
        r.name,
        undefined,
        r.epoch,
        reason,
        "not_forwarded",
        "subscriptions/listen",
      );
  }

  /**
   * A fault (a bug, or the store failing under the decision) while a listen was decided: the
   * records it wrote are closed `gateway_error` (nothing was sent), and the listen is no longer
   * open for the gateway's own list_changed. The caller answers the client.
   */
  private listenFaulted(d: ListenDecision): void {
    this.closeListenReads(d, "gateway_error");
    this.p.session.listenEnded(d.open);
  }

  /**
   * Re-opens on the current process a client's subscriptions/listen with resource subscriptions
   * that an earlier process held: each uri decided again against this epoch as `reopen` decides a
   * legacy subscription (no client request waits: no progress, no elicitation; each record a call
   * key of its own), then the listen is forwarded again under the client's id, as a listen without
   * resource subscriptions is re-opened at once. A uri refused is taken out of it, as from the
   * client's own listen (reopenNarrowed). "open": sent; "refused": nothing of it was left to open
   * (every uri refused, nothing else asked for), or the gateway failed while re-opening it, and the
   * client's listen is answered with why (its subscription ended: the client listens again,
   * through the guard, if it still wants to); "later": not decided for this epoch (kept by the
   * caller for the next verified catalog). Every path that ends the listen answers it.
   */
  async reopenListen(listen: ListenToReopen): Promise<"open" | "refused" | "later"> {
    const { request: msg, epoch } = listen;
    // the client's listen as the session holds it, taken now, while `msg.id` is surely its id
    const d: ListenDecision = {
      ...newListenDecision(),
      open: this.p.session.listenOf(msg.id),
      ...(listen.lists ? { lists: listen.lists } : {}),
    };
    try {
      return await this.decideReopen(msg, epoch, d);
    } catch (e) {
      this.listenFaulted(d);
      this.p.log.warn(
        `could not re-open the client's subscriptions/listen ${preview(idTextOf(msg))} on the new server process: ${String((e as Error)?.message ?? e)}; it is answered with an internal error`,
      );
      // a listen the client cancelled meanwhile gets no answer
      if (d.mark?.cancelled) return "refused";
      this.answer(
        msg,
        errorResponse(
          msg.id,
          INTERNAL_ERROR,
          "The gateway failed while re-opening this subscriptions/listen on a new server process, so the subscription is over (nothing of it was sent); see the gateway's log, and listen again to subscribe.",
        ),
      );
      return "refused";
    }
  }

  private async decideReopen(
    msg: Request,
    epoch: string,
    d: ListenDecision,
  ): Promise<"open" | "refused" | "later"> {
    const uris = listenUris(msg) ?? [];
    if (this.readsAskHuman()) {
      // As a legacy subscription is not (reopen): its uris are not re-opened, and the client
      // subscribes again if it still wants to (a human is then asked, for a request of the agent's).
      this.p.log.status(
        `the client's subscriptions/listen ${preview(idTextOf(msg))} was not re-opened on the new server process with its resource subscriptions: approval.resources is "per-call", and no request of the agent's waits for a human to approve them`,
      );
      const e = refuse.epochTransition(epoch, this.p.current()?.epoch ?? null);
      // not decided, so not recorded (as for a legacy subscription)
      d.refused = uris.map((uri) => ({ uri, name: null, error: e, reason: "epoch_transition" }));
      return this.reopenNarrowed(msg, d);
    }
    // the client's listen is still open: a cancellation of it stops the decision (and its id stays in use)
    const mark = await this.decideListenMarked(msg, uris, false, d);
    if (mark.cancelled) {
      // (its listen ended when the client cancelled it: see cancel)
      this.closeListenReads(d, "cancelled");
      return "refused";
    }
    if (this.over() !== null || mark.endedBy !== undefined || d.stopped) {
      this.closeListenReads(d, this.over() !== null ? "connection_ended" : "redecided");
      return "later";
    }
    const gen = this.p.current();
    if (gen === null || d.reads.some((r) => r.epoch !== gen.epoch) || !this.p.mayForward()) {
      this.closeListenReads(d, "redecided");
      return "later";
    }
    this.recordRefused(d);
    for (const r of d.refused)
      this.p.log.status(
        `the client's subscriptions/listen ${preview(idTextOf(msg))} was re-opened on the new server process without its subscription to ${preview(r.uri)}: ${r.error.message}`,
      );
    return this.reopenNarrowed(msg, d);
  }

  /**
   * The re-open of `msg` sent without the uris `d` refused. Nothing left to listen to: the listen
   * is answered with the first refusal. Else it is forwarded, its acknowledgement names the uris
   * refused (as the client's own listen's does), and the client is sent
   * `notifications/resources/updated` for each on the listen's stream: a client that took the first
   * acknowledgement as the last (the v2 SDK does) reads the resource again, through the guard,
   * rather than wait for updates that no longer come.
   */
  private reopenNarrowed(msg: Request, d: ListenDecision): "open" | "refused" {
    const first = d.refused[0]?.error;
    const out = listenWith(msg, new Set(d.reads.map((r) => r.uri)));
    if (out === null) {
      if (first === undefined) throw new Error("a subscriptions/listen with none of its uris decided");
      this.p.session.listenEnded(d.open);
      this.answer(msg, errorResponse(msg.id, first.code, first.message, first.data));
      return "refused";
    }
    const reads = d.reads;
    d.reads = [];
    const lists = d.lists ? { listenLists: d.lists } : {};
    if (!this.p.inFlight.forward(out, { listen: out, listenReads: reads, ...refusedOf(d), ...lists })) {
      this.closeListenReads({ reads }, "server_unavailable");
      this.p.session.listenEnded(d.open);
      return "refused";
    }
    // the prompt and resource lists its acknowledgement honoured: the new process's may differ
    sendListsChanged(this.p.downstream, msg.id, d.lists);
    for (const r of d.refused)
      this.p.downstream.send({
        jsonrpc: "2.0",
        method: "notifications/resources/updated",
        params: { uri: r.uri, _meta: { [SUBSCRIPTION_ID_META]: msg.id } },
      });
    return "open";
  }

  /**
   * Re-opens on the current process a resource subscription the client holds on an earlier one (a
   * new process holds none): decided now as the client's own resources/subscribe of it would be,
   * against this epoch (held while its identity is pending; a grant of an older epoch is stale),
   * recorded `request_forwarded` under the client's id text
   * with a call key of its own, then sent as the gateway's own request, its answer recorded as its
   * end. Not under approval.resources "per-call": a human would be asked for a subscription
   * nobody requested now (the agent did once, for a process that is gone), at a moment no request
   * of the agent's explains, and nothing waits for the answer; it is "refused" without a decision.
   * "open": the process accepted it; "refused": the guard or the process refused it, or "per-call"
   * (the caller tells the client); "later": not decided for this epoch (not ready, gone meanwhile, the
   * connection ending): the subscription stays as it was, tried again with the next verified catalog.
   */
  async reopen(sub: ResourceSubscription): Promise<"open" | "refused" | "later"> {
    const { records } = this.p;
    const method = "resources/subscribe";
    const read = readFacts({ jsonrpc: "2.0", id: 0, method, params: sub.params });
    if (this.readsAskHuman()) {
      this.p.log.status(
        `the client's subscription to ${preview(read.target)} was not re-opened on the new server process: approval.resources is "per-call", and no request of the agent's waits for a human to approve it (the client is told the resource changed, and reads it again through the guard)`,
      );
      return "refused";
    }
    const name = newCallName(sub.idText);
    const mark = this.newDeciding();
    this.underWay.add(mark);
    let verdict: Awaited<ReturnType<typeof decide>>;
    try {
      verdict = await this.p.decide({
        server: () => this.p.view(),
        facts: { tool: method, args: sub.params, seen: null },
        read,
        auth: this.p.auth(),
        intent: {
          intent: (call, condition) => records.requestForwarded(name, method, sub.params, call, condition),
        },
        hooks: {
          get signal() {
            return mark.signal;
          },
        },
      });
    } finally {
      this.underWay.delete(mark);
    }
    switch (verdict.action) {
      case "hold":
      case "invalid-arguments": // (never for a read)
        return "later";
      case "refuse":
        // the connection's end cut a wait for a human short: nothing was decided for this epoch
        if (mark.endedBy !== undefined || this.over() !== null) return "later";
        records.denied(
          name,
          `${read.method} ${read.target}`,
          read.params,
          { epoch: this.p.current()?.epoch ?? null, revision: this.p.catalog.revision },
          verdict.reason,
        );
        this.p.log.status(
          `the client's subscription to ${preview(read.target)} was not re-opened on the new server process: ${verdict.error.message}`,
        );
        return "refused";
      case "forward": {
        const gen = this.p.current();
        const epoch = verdict.call.epoch;
        if (this.over() !== null || gen === null || epoch !== gen.epoch || !this.p.mayForward()) {
          records.callInterrupted(name, undefined, epoch, "redecided", "not_forwarded", method);
          return "later";
        }
        let res: Response | null;
        try {
          res = await this.p.inFlight.request(gen, method, sub.params);
        } catch (e) {
          // The server reads none of its input: not sent (subscriptions re-opened together were
          // all decided before any was written; written, each would wait there as long as the
          // process lives). Its record is closed, and the client is told the resource changed, so
          // that it reads it again (refused while the server does not read) and subscribes again.
          if (!(e instanceof NotWritten)) throw e;
          records.callInterrupted(name, undefined, epoch, "server_unavailable", "not_forwarded", method);
          this.p.log.status(
            `the client's subscription to ${preview(read.target)} was not re-opened on the new server process: ${e.message}`,
          );
          return "refused";
        }
        if (res === null) {
          records.callInterrupted(name, undefined, epoch, "epoch_transition", "unknown", method);
          return "later";
        }
        records.toolResult(name, undefined, epoch, res.error ? "error" : "ok", method);
        if (!res.error) return "open";
        this.p.log.status(
          `the client's subscription to ${preview(read.target)} was not re-opened: the new server process refused it`,
        );
        return "refused";
      }
    }
  }

  /**
   * While a human decides, a client that gave a progress token hears about it. The values go on
   * from the last the client saw under that token (a call decided again after being held keeps
   * counting up), and the server's own values after them are moved past them (ProgressTokens).
   * Nothing once `mark` is aborted: the client cancelled the request (which freed its token: a
   * value sent now would start again from 1), was answered input_required, or the connection ends.
   * The decision may still be between two steps then (storing its request behind another
   * process's lock, say) and reach a point that would tell of its wait.
   */
  private progressFor(msg: Request, mark: Deciding): ((message: string) => void) | undefined {
    const token = (msg.params as { _meta?: { progressToken?: unknown } } | undefined)?._meta?.progressToken;
    if (typeof token !== "string" && typeof token !== "number") return undefined;
    return (message: string) => {
      if (mark.isAborted) return;
      this.p.downstream.send({
        jsonrpc: "2.0",
        method: "notifications/progress",
        params: { progressToken: token, progress: this.p.progress.own(token, msg.id), message },
      });
    };
  }

  private recordDenied(msg: Request, tool: string, args: unknown, reason: string): void {
    this.p.records.denied(
      callOf(msg),
      tool,
      args,
      { epoch: this.p.current()?.epoch ?? null, revision: this.p.catalog.revision },
      reason,
    );
  }

  private hold(msg: Request): void {
    if (this.refusedForCatalog(msg)) return;
    const gen = this.p.current();
    this.p.log.info(
      `holding tools/call ${cutShort(String(JSON.stringify((msg.params as { name?: unknown } | undefined)?.name)))}${this.holdReason(gen)}`,
    );
    this.heldCalls.hold(msg, this.heldSize(msg));
    // After a failed fetch a call is the next attempt, as a list is. Only then: while a new
    // epoch is being brought up its first fetch is the reconnection's (a list or read starts
    // none either while its replayed handshake is under way: Gateway.mayFetch).
    if (gen && this.p.catalog.failure(gen) !== null) this.p.catalogIfNeeded();
  }

  /**
   * What a held call waits for, as the log says it: the reason calls wait though the catalog may
   * be verified (the epoch's code not known for sure, a file change being judged) when there is
   * one, since that is what ends the hold; else the catalog's verification.
   */
  private holdReason(gen: Generation | null): string {
    const why = this.p.heldWhy();
    if (why !== null) return `: ${why}`;
    return ` until the catalog of ${gen?.alive ? `epoch ${gen.epoch}` : "the next epoch"} is verified`;
  }

  /**
   * Keeps `msg` until the current epoch's catalog is verified, and starts the fetch that verifies
   * it if none runs: after a failed fetch, that is the next attempt (a transient failure heals on
   * the next list or call). Too soon after a failure, the request is refused at once instead.
   */
  private holdForCatalog(msg: Request, held: HeldRequests): void {
    if (this.refusedForCatalog(msg)) return;
    held.hold(msg, this.heldSize(msg));
    this.p.catalogIfNeeded();
  }

  /**
   * Answers `msg` at once when holding it cannot help: server_unavailable while supervision is
   * paused (no server runs until its files change) or the remote server cannot be reached,
   * catalog_unavailable when the current epoch's
   * catalog just failed to come, identity_pending when as many as may be held already are
   * (refusedHeldFull).
   */
  private refusedForCatalog(msg: Request): boolean {
    // the connection's end answered what was held: nothing would answer this one any more
    if (this.refusedAtEnd(msg)) return true;
    const down = this.p.serverDown();
    if (down !== null) {
      this.answerDown(msg, down);
      return true;
    }
    const gen = this.p.current();
    const why = gen ? this.p.catalog.failedRecently(gen) : null;
    if (why !== null) {
      this.answerUnavailable(msg, why);
      return true;
    }
    return this.refusedHeldFull(msg);
  }

  /**
   * Answers `msg` at once, not held, when MAX_HELD requests or more than MAX_HELD_BYTES already
   * wait for the catalog: until the hold timeout they are all kept, however many the client
   * sends meanwhile (a client's pipe carries gigabytes in that time). Said on stderr sparingly;
   * recorded for each call or guarded read refused (identity_pending), as the refusals of a server
   * that answers nothing are: one record per request the client sent, never more (a listen: one
   * per uri, as when its uris are decided).
   */
  private refusedHeldFull(msg: Request): boolean {
    const count = this.heldCalls.size + this.heldLists.size;
    const bytes = this.heldCalls.bytes + this.heldLists.bytes;
    if (count < MAX_HELD && bytes <= MAX_HELD_BYTES) return false;
    const why = `${count} requests of the client's (${(bytes / (1024 * 1024)).toFixed(1)} MiB) already wait for the server's catalog, the most portcullis holds`;
    this.thinned.say("held-full", `refused a request of the client's, not held: ${why}`);
    const e = refuse.tooManyHeld(this.p.current()?.epoch ?? null, why);
    this.recordRefusedUndecided(msg, "identity_pending");
    this.answer(msg, errorResponse(msg.id, e.code, e.message, e.data));
    return true;
  }

  /**
   * What a held request counts toward MAX_HELD_BYTES: its JSON text's length, measured only for a
   * request about to be held (what was parsed has no length of its own).
   */
  private heldSize(msg: Request): number {
    return JSON.stringify(msg).length;
  }

  /**
   * Answers `msg` at once while the server reads none of its input: decided and forwarded, it
   * would only wait behind what the server does not read, in the gateway's memory. Recorded as a
   * refusal while the server is down is (server_unavailable).
   */
  private refusedNotReading(msg: Request): boolean {
    const e = this.p.notReading?.() ?? null;
    if (e === null) return false;
    this.answerDown(msg, e);
    return true;
  }

  /**
   * A call or read decided and recorded to be forwarded, while the server reads none of its input:
   * not sent; its record is closed (server_unavailable, not_forwarded) and the client gets the
   * refusal it would have got before the decision. False when the server reads: forward it.
   */
  private notReadingAfterDecision(
    msg: Request,
    tool: string | undefined,
    epoch: string,
    method?: string,
  ): boolean {
    const e = this.p.notReading?.() ?? null;
    if (e === null) return false;
    this.p.records.callInterrupted(callOf(msg), tool, epoch, "server_unavailable", "not_forwarded", method);
    this.answer(msg, errorResponse(msg.id, e.code, e.message, e.data));
    return true;
  }

  /**
   * Refuses `msg` with `e` (server_unavailable) because no server can answer: none runs until its
   * files change, or the remote cannot be reached. A call or guarded read refused so is recorded
   * as the guard's refusals are (authorization_denied, reason server_unavailable): the audit
   * shows what the agent asked while the server was down, not only what ran.
   */
  private answerDown(msg: Request, e: ErrorObject): void {
    this.recordRefusedUndecided(msg, "server_unavailable");
    this.answer(msg, errorResponse(msg.id, e.code, e.message, e.data));
  }

  /**
   * Records the refusal of `msg`, refused before (or instead of) a decision, `authorization_denied`
   * with `reason`: a call by its tool and arguments, a guarded read by its method and target, and a
   * subscriptions/listen by each of its resource uris, as the guard's refusal of that uri would be
   * (recordRefused). A tools/list is not recorded (it asks for nothing of the server's), nor a call
   * without a string name (no tool to record it under; a held call always has one: it was checked
   * before its hold), nor a listen whose uris are no list of strings (no uri to record it under).
   */
  private recordRefusedUndecided(msg: Request, reason: UndecidedRefusal): void {
    if (msg.method === "tools/call") {
      const params = (msg.params ?? {}) as { name?: unknown; arguments?: unknown };
      if (typeof params.name === "string") this.recordDenied(msg, params.name, params.arguments, reason);
    } else if (msg.method === "subscriptions/listen") {
      // by its uris: it has no `uri` of its own (read as a guarded read, its target is the text "null")
      for (const [i, uri] of (listenUris(msg) ?? []).entries())
        this.recordUriDenied(i === 0 ? callOf(msg) : newCallName(idTextOf(msg)), uri, reason);
    } else if (msg.method !== "tools/list") {
      const read = readFacts(msg);
      this.recordDenied(msg, `${read.method} ${read.target}`, read.params, reason);
    }
  }

  /**
   * Refuses `msg` catalog_unavailable (`why`: what failed): the current epoch's catalog could not
   * be fetched. A call, guarded read or listen for resources refused so is recorded as one refused
   * identity_pending is: the agent asked, and nothing was decided for it.
   */
  private answerUnavailable(msg: Request, why: string): void {
    const e = refuse.catalogUnavailable(this.p.current()?.epoch ?? null, why);
    this.recordRefusedUndecided(msg, "catalog_unavailable");
    this.answer(msg, errorResponse(msg.id, e.code, e.message, e.data));
  }

  /**
   * A call or guarded read being handled. A fault while handling it (a bug: what a peer sends is
   * checked before it gets here) answers that request with an internal error and is logged; it
   * does not end the gateway, and every other call with it, as an unhandled rejection would.
   */
  private handled(msg: Request, work: Promise<void>): void {
    // answered by the gateway (neither held, nor being decided, nor at the server): its progress
    // token, if the gateway spoke under it, is free again
    work = work.then(() => {
      const { progress, inFlight } = this.p;
      if (progress.spoke(msg.id) && !this.has(msg.id) && !inFlight.carries(msg.id)) progress.ended(msg.id);
    });
    work.catch((e: unknown) => {
      this.p.log.warn(
        `could not handle ${msg.method} (id ${cutShort(idTextOf(msg))}): ${String((e as Error)?.message ?? e)}`,
      );
      this.p.downstream.send(
        errorResponse(
          msg.id,
          INTERNAL_ERROR,
          `The gateway failed while handling this ${msg.method}; see its log.`,
        ),
      );
    });
  }

  /**
   * Answers `msg` identity_pending because the connection ends (`ending`, `by`: see answerHeld):
   * nothing of it was decided or sent. A call or guarded read refused so is recorded as one
   * refused at the hold timeout is (authorization_denied, reason identity_pending; a listen: one
   * record per uri), unless `record` is false: its records were written otherwise (an intent
   * closed connection_ended, a listen's uris recorded one by one). Written before the gateway's
   * shutdown closes the run and writes its last records (src/cli/serve.ts, shutdown).
   */
  private answerAtEnd(msg: Request, ending: string, by?: EndedBy, record = true): void {
    const e = refuse.identityPendingAtEnd(this.p.current()?.epoch ?? null, ending, by);
    if (record) this.recordRefusedUndecided(msg, "identity_pending");
    this.answer(msg, errorResponse(msg.id, e.code, e.message, e.data));
  }

  /**
   * A final answer to `msg` from the gateway itself. A held request answered when its hold ends
   * (timeout, a failed fetch, a pause, the connection's end) is past `handled`, which frees the
   * progress token of a request answered while it is handled: its token is freed here.
   */
  private answer(msg: Request, response: Response): void {
    this.p.progress.ended(msg.id);
    this.p.downstream.send(response);
  }

  /**
   * A held request whose hold ended without its catalog (the hold timeout, or a stop that answers
   * what is held): identity_pending, recorded for a call or guarded read; not_initialized, not
   * recorded, while the client has not sent notifications/initialized (no catalog was fetched).
   */
  private answerPending(msg: Request, record = true): void {
    if (this.p.session.awaitsInitializedNotice) {
      // held for a catalog no one fetches: the fetch waits on the client's notifications/initialized
      const e = refuse.initializedNotSent(msg.method);
      this.answer(msg, errorResponse(msg.id, e.code, e.message, e.data));
      return;
    }
    const gen = this.p.current();
    // "changed" only when there was an epoch before this one (the first one is a launch)
    const e = refuse.identityPending(
      gen?.epoch ?? null,
      gen !== null && gen.reason !== "launch",
      this.p.heldWhy(),
    );
    // the agent asked, and was refused: in the audit as any other refusal of a call or read is,
    // against the epoch whose catalog it waited for (the current one)
    if (record) this.recordRefusedUndecided(msg, "identity_pending");
    this.answer(msg, errorResponse(msg.id, e.code, e.message, e.data));
  }

  /**
   * The current epoch's catalog fetch ended: held requests are served once it is verified, or
   * told at once why it failed.
   */
  releaseHeld(): void {
    const down = this.p.serverDown();
    if (down !== null) {
      // no server runs until its files change, or the remote cannot be reached: held requests
      // are told so now
      for (const msg of [...this.heldLists.drain(), ...this.heldCalls.drain()]) this.answerDown(msg, down);
      return;
    }
    const gen = this.p.current();
    const failed = gen ? this.p.catalog.failure(gen) : null;
    if (failed !== null) {
      // the fetch failed: waiting for the hold timeout cannot help, the requests are told why now
      for (const msg of [...this.heldLists.drain(), ...this.heldCalls.drain()])
        this.answerUnavailable(msg, failed);
      return;
    }
    if (this.p.view().state !== "ready") return;
    for (const msg of this.heldLists.drain()) this.serveToolsList(msg);
    for (const msg of this.heldCalls.drain()) {
      if (msg.method === "tools/call") this.call(msg);
      else if (msg.method === "subscriptions/listen") this.listen(msg);
      else this.read(msg);
    }
  }
}

/**
 * What a client's resources/subscribe subscribes to, kept with it while it is at the server (and
 * once accepted, in the session: re-opened on the next process); nothing for any other read, or
 * for a uri that is not a string (the server refuses it).
 */
function subscriptionOf(msg: Request, read: ReadFacts): Pick<ForwardExtra, "subscribes"> {
  if (msg.method !== "resources/subscribe" || typeof read.params.uri !== "string") return {};
  return { subscribes: { uri: read.params.uri, params: read.params } };
}

/**
 * The snapshot's tools as the client is shown them, made once per snapshot: without task support
 * hints, and without what the server wrote under the gateway's own `_meta` keys in a tool's
 * `_meta` (a tool that says `"portcullis/approved": true` speaks in the gateway's place). The
 * snapshot, its fingerprints and the catalog keep what the server said.
 */
const served = new WeakMap<CatalogSnapshot, CatalogSnapshot["tools"]>();

function servedTools(snapshot: CatalogSnapshot): CatalogSnapshot["tools"] {
  let tools = served.get(snapshot);
  if (!tools) {
    tools = snapshot.tools.map((tool) => {
      const shown = toolWithoutTasks(tool);
      return (withoutGatewayMeta(shown)?.part as typeof shown | undefined) ?? shown;
    });
    served.set(snapshot, tools);
  }
  return tools;
}

/** Why a request was refused before (or instead of) a decision, as its record says. */
type UndecidedRefusal = "server_unavailable" | "identity_pending" | "catalog_unavailable";

/**
 * How the connection's end answers a request it came before (GuardedRequests.answerHeld):
 * `ending` why the connection ends (undefined: the refusal a hold's timeout gives), `by` who ended it.
 */
interface EndAnswer {
  ending?: string;
  by?: EndedBy;
}

/** Why a request is refused once the gateway ends the connection, when no reason was given. */
const GATEWAY_ENDED = "the gateway ended the connection";

/** A uri of a listen the guard refused (`name`: what its denial is recorded under; null: not decided, not recorded). */
interface RefusedUri {
  uri: string;
  name: CallName | null;
  error: ErrorObject;
  reason: string;
}

/** What a listen's decision came to, kept as it is made. */
interface ListenDecision {
  /** the uris allowed, their intents written and not yet handed on (sent, or closed) */
  reads: ListenRead[];
  /** the uris refused, in order */
  refused: RefusedUri[];
  /** the verdict that stopped the decision before every uri was decided (held): decided again later */
  stopped: Awaited<ReturnType<typeof decide>> | null;
  /** the decision's mark, once it began (whether the client cancelled the listen) */
  mark?: Deciding;
  /**
   * the listen as the session holds it (open to tool-list changes): the re-opened one's from the
   * start, the client's own once it is sent; what ends it names this, never its id
   */
  open?: OpenListen;
  /** a re-open's list_changed notifications its latest acknowledgement honoured (ClientPending.listenLists) */
  lists?: readonly string[];
}

function newListenDecision(): ListenDecision {
  return { reads: [], refused: [], stopped: null };
}

/** The uris (of `uris`, each once) `d` holds no outcome of: neither allowed (their intents written) nor refused. */
function undecidedUris(uris: string[], d: ListenDecision): string[] {
  const decided = new Set([...d.reads.map((r) => r.uri), ...d.refused.map((r) => r.uri)]);
  return uris.filter((uri) => !decided.has(uri));
}

/** The refused uris of `d` as the acknowledgement tells them (absent when none). */
function refusedOf(d: ListenDecision): Pick<ForwardExtra, "listenRefused"> {
  return d.refused.length === 0 ? {} : { listenRefused: d.refused.map(({ uri, error }) => ({ uri, error })) };
}

/**
 * The resource uris of a subscriptions/listen, each once, in order; null when they are not a list
 * of strings (refused: a lenient server might take another shape for a subscription).
 */
function listenUris(msg: Request): string[] | null {
  const uris = listenResourceUris(msg);
  if (uris === undefined) return [];
  if (!Array.isArray(uris) || !uris.every((u): u is string => typeof u === "string")) return null;
  return [...new Set(uris)];
}

/**
 * Why a guarded request's params or their `_meta` cannot be decided or sent as they are (null
 * when they can): what metaProblem says of them, or a progress token that would reach the server
 * as another number. A subscriptions/listen gets the same answer whether it names resources or not.
 */
export function paramsProblem(msg: Request): string | null {
  return metaProblem(msg.params) ?? progressTokenProblem(msg);
}

/** Whether a subscriptions/listen asks to be told of tool-list changes. */
export function listensToTools(msg: Request): boolean {
  return !!(msg.params as { notifications?: { toolsListChanged?: unknown } } | undefined)?.notifications
    ?.toolsListChanged;
}

/**
 * The guarded reads a 2026-07-28 server may answer with `input_required` (the multi round-trip
 * pattern lists them with tools/call); a subscription, a listen or a completion may not be.
 */
const INPUT_REQUIRED_READS: ReadonlySet<string> = new Set(["resources/read", "prompts/get"]);

/**
 * How many of the client's requests may be held for the catalog at once, and how large they may
 * be together (plus the one that passes it: a single request may be as large as the message
 * limit, 64 MiB). A real client sends a few before the catalog arrives (a list, a call or two);
 * past these a request is refused at once rather than kept until the hold timeout.
 */
export const MAX_HELD = 4096;
export const MAX_HELD_BYTES = 64 * 1024 * 1024;

/**
 * How many resource uris one subscriptions/listen may name (`resourceSubscriptions`, as written,
 * a uri named twice counted twice): each is decided, and recorded when refused, on its own. A
 * client subscribes to a handful; past this the listen is refused whole, before any record.
 */
export const MAX_LISTEN_URIS = 1000;
