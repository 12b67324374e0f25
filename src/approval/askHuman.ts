import { argumentsDigest } from "../audit/events.js";
import { quotedName } from "../catalog/text.js";
import type { ApprovedCall } from "../guard/guard.js";
import { refuse } from "../guard/refusals.js";
import type { ErrorObject } from "../relay/jsonrpc.js";
import { briefly, callWaitsFor, isBusy, lockIsFree, whenUnlocked } from "../store/db.js";
import { toolScopeNote } from "../vault/toolScopes.js";
import { type AuthorizerOptions, DEFAULT_HOLD_MS, DEFAULT_REQUEST_TTL_MS } from "./authorizerOptions.js";
import { CallWaits } from "./callWaits.js";
import { reviewDigest } from "./decision.js";
import { endGrants, type GrantRecord, getGrant } from "./grants.js";
import type { HonouredDecisions } from "./honoured.js";
import { notifyNewRequest } from "./notify.js";
import type { OlderEpochApprovals } from "./olderEpoch.js";
import { RequestExpiry } from "./requestExpiry.js";
import {
  type ApprovalRequest,
  type CallLeft,
  closeRequest,
  earlierRequest,
  expiredEvent,
  getRequest,
  insertRequest,
  newRequestId,
  pendingOfSameTool,
  type Review,
  type SameCall,
} from "./requests.js";
import { buildReview, renderTool, reviewArguments } from "./review.js";
import type { RunEndWatch } from "./runEndWatch.js";
import { letGo, vouchFor } from "./vouch.js";

/** What the gateway hears while a call waits for a human. */
export interface AskHooks {
  progress?: (message: string) => void;
  signal?: AbortSignal;
  /** the call now waits on approval request `id` (new, or joined by a retry) */
  waiting?: (request: string) => void;
}

/** What the asker takes from the Authorizer it works for. */
export interface AskerParts {
  /** the credential scopes a call uses (Authorizer.scopesOf) */
  scopesOf: (call: ApprovedCall) => string[];
  /**
   * best effort: an audit event (approval_requested; approval_denied when a grant was revoked
   * before its call could use it). A human's decision is recorded by the decider, not here. With
   * a `condition`, read under the audit log's write lock: false writes nothing.
   */
  emit: (e: { type: string; [k: string]: unknown }, condition?: () => boolean) => void;
  /** the decision rows this gateway honours, and the reviews it wrote */
  decisions: HonouredDecisions;
  /** a session grant of the call's epoch that covers it, on a fresh read */
  coveringNow: (call: ApprovedCall) => GrantRecord | null;
  /** approvals of this call bound to an older epoch, and the one-call grants handed to calls */
  olderEpoch: OlderEpochApprovals;
  /** the run's end by another process while this gateway serves it */
  runEnd: RunEndWatch;
}

/**
 * Step 7's other half: a human decision for a call no grant covers. The request is stored with
 * the review this gateway wrote; the call is held while the human decides, reading the request
 * row every `pollMs`; a decision counts only once it verifies (HonouredDecisions).
 */
/**
 * How many approval requests of one agent run may wait for a human at once: past it a call that
 * would make a new one is refused (one that joins a pending request still waits). Counted over the
 * requests the run's gateway made itself, never the store's rows naming the run.
 */
export const MAX_PENDING_PER_RUN = 50;

/** How many requests left pending by a cancelled call a gateway remembers (see `supersede`). */
const MAX_LEFT_REMEMBERED = 1_000;

export class HumanAsker {
  private readonly timeoutMs: number;
  private readonly requestTtlMs: number;
  private readonly pollMs: number;
  private readonly progressEveryMs: number;
  /** denials already returned to a call: a later retry of the same call asks a human again */
  private readonly deniedTold = new Set<string>();
  /**
   * Requests being stored, by the call they are for (sameCallKey): an identical call that asks
   * meanwhile joins the one being stored instead of making a second (the store is written with
   * the audit sink's next group, after an await, and later while another process holds its lock).
   */
  private readonly storing = new Map<string, Promise<string>>();
  private readonly expiry: RequestExpiry;
  /**
   * The requests this gateway wrote for its run (an agent run is one connection of one gateway:
   * no other process makes its requests) and has not yet seen leave the pending state: what
   * counts against MAX_PENDING_PER_RUN. Not the store's pending rows naming the run: any process
   * of the user can write those, and 50 forged ones stopped the gateway asking a human anything.
   * One this gateway sees decided, expired, cancelled or removed in the store is forgotten at the
   * next count (`stillPendingOf`); so at most MAX_PENDING_PER_RUN, and the requests in the making.
   */
  private readonly mine = new Set<string>();
  /** which of the given request IDs (a JSON array) are pending in the store */
  private readonly stillPendingOf: { all(ids: string): unknown[] };
  /**
   * Requests being made whose row is not in the store yet: counted beside the stored ones against
   * MAX_PENDING_PER_RUN (the `storing` map also holds requests already written, until the await
   * that stored them returns, and counted so a burst was refused before 50 were stored).
   */
  private unwritten = 0;
  /** the calls of this gateway waiting on each request now, as the requests' rows say too */
  private readonly waiters: CallWaits;
  /**
   * Pending requests whose waiting call the client cancelled (kept for a retry of the same
   * arguments): a session request among them gives way to a newer call of its tool (supersede).
   */
  private readonly leftByClient = new Set<string>();

  constructor(
    private readonly o: AuthorizerOptions,
    private readonly parts: AskerParts,
  ) {
    this.timeoutMs = o.timeoutMs ?? DEFAULT_HOLD_MS;
    this.requestTtlMs = o.requestTtlMs ?? DEFAULT_REQUEST_TTL_MS;
    this.pollMs = o.pollMs ?? 150;
    this.progressEveryMs = o.progressEveryMs ?? 3000;
    this.waiters = new CallWaits(o.db);
    this.stillPendingOf = o.db
      .prepare(
        "SELECT request FROM approval_requests WHERE state = 'pending' AND request IN (SELECT value FROM json_each(?))",
      )
      .pluck();
    this.expiry = new RequestExpiry({
      db: o.db,
      run: o.run.run,
      serverLabel: o.serverLabel,
      log: o.log,
      events: o.events,
    });
  }

  /**
   * A human decision for this call. A request outlives the call that raised it: when the call's
   * hold ends (or the client gives up) the request stays pending until its TTL, and a retry of
   * the same call (run, label, epoch, tool version, mode, argument digest) joins it instead of
   * asking again; once approved, the retry takes the grant at once (a one-call grant is consumed
   * by the one call that takes it).
   */
  async ask(
    call: ApprovedCall,
    mode: "session" | "per-call",
    hooks: AskHooks,
    holdUntil?: number,
  ): Promise<{ grant: string | null } | { error: ErrorObject }> {
    const { db, run, serverLabel } = this.o;
    const digest = argumentsDigest(call.effective);
    const subject = (id: string) => ({
      run: run.run,
      serverLabel,
      epoch: call.epoch,
      revision: call.revision,
      tool: call.tool,
      fingerprint: call.fingerprint,
      approvalRequest: id,
      credentialScope: this.parts.scopesOf(call),
    });
    const sameCall = {
      agentRun: run.run,
      serverLabel,
      executionEpoch: call.epoch,
      tool: call.tool,
      fingerprint: call.fingerprint,
      mode,
      argumentsDigest: digest,
    };
    // aborted once the connection ends (not when the client cancels): a write this call waits on
    // while another process holds the store's lock stops waiting then
    const ends = connectionEndSignal(hooks.signal);
    // (a pending request is joined only when this gateway wrote it: `mine`)
    const earlier = earlierRequest(db, sameCall, undefined, this.mine);
    let id: string;
    // this call stored the request, whose row says from the start that its maker waits on it
    let made = false;
    if (earlier && earlier.state !== "pending") {
      const settled = await this.settled(earlier, call, subject(earlier.request), {
        cancelled: false,
        retry: true,
        ends,
      });
      if (settled) return settled;
    }
    // No decision of this epoch to use: one of an older epoch for this same call is stale, and
    // the agent is told so (once) rather than that nobody approved.
    const stale = await this.parts.olderEpoch.refusal(call, mode, ends);
    if (stale) return { error: stale };
    // The awaits above let an identical call ask meanwhile: join the request it made, or is
    // storing, rather than make a second one (nothing awaits from here to `storing`).
    const pending =
      earlier?.state === "pending" ? earlier : earlierRequest(db, sameCall, undefined, this.mine);
    const key = sameCallKey(sameCall);
    const beingStored = this.storing.get(key);
    if (pending?.state === "pending") {
      id = pending.request;
      this.o.log.info(`a retry of ${quotedName(call.tool)} joins approval request ${id}, still pending`);
    } else if (beingStored) {
      try {
        id = await beingStored;
      } catch (e) {
        if (e instanceof RequestNotStored) return { error: answerCutShort("connection-ends", e.request, "") };
        throw e;
      }
      this.o.log.info(`a retry of ${quotedName(call.tool)} joins approval request ${id}, still pending`);
    } else {
      if (mode === "session") this.supersede(sameCall, call);
      // An agent that makes requests faster than a human decides them (a thousand distinct calls)
      // would bury the human's list and keep as many calls polling the store: past the bound, no
      // new request is made until some are decided or expire. Only the requests this gateway
      // made count (`mine`): rows another process wrote naming the run deny nothing.
      const waiting = this.pendingMine() + this.unwritten;
      if (waiting >= MAX_PENDING_PER_RUN) {
        this.o.log.warn(
          `${quotedName(call.tool)} not asked: ${MAX_PENDING_PER_RUN} approval requests of this run wait for a human already`,
        );
        return {
          error: refuse.tooManyPending(
            MAX_PENDING_PER_RUN,
            `portcullis approvals${this.o.stateDirFlag ?? ""}`,
          ),
        };
      }
      this.unwritten++;
      let unwritten = true;
      // (with the request's ID as its row is written: counted from then on among this gateway's own)
      const written = (request?: string) => {
        if (unwritten) this.unwritten--;
        unwritten = false;
        if (request !== undefined) this.mine.add(request);
      };
      const stored = this.newRequest(
        call,
        mode,
        digest,
        (request) => ({
          type: "approval_requested",
          ...subject(request),
          mode,
          arguments: digest,
        }),
        ends,
        written,
      );
      this.storing.set(key, stored);
      try {
        id = await stored;
        made = true;
      } catch (e) {
        // the connection ended while the store was locked: the request was never stored
        if (e instanceof RequestNotStored) return { error: answerCutShort("connection-ends", e.request, "") };
        throw e;
      } finally {
        written();
        this.storing.delete(key);
      }
      (this.o.notify ?? notifyNewRequest)(call.tool, serverLabel, this.o.stateDirFlag ?? "");
      try {
        this.o.onRequest?.(id);
      } catch {
        /* reaching the human is best effort: the call waits either way */
      }
    }
    const how = `portcullis approve ${id}${this.o.stateDirFlag ?? ""}`;
    this.expiry.schedule();
    const cutBefore = hooks.signal?.aborted === true;
    try {
      hooks.waiting?.(id);
    } catch {
      /* telling the client where to decide is a courtesy */
    }
    // a wait the gateway cut short as it told the client where to decide (a 2026-07-28 call
    // answered input_required): the client gave up on nothing and retries, so its request is not
    // one a newer call may supersede
    const sentAway = !cutBefore && hooks.signal?.aborted === true;

    const progress = (msg: string) => {
      try {
        hooks.progress?.(msg);
      } catch {
        /* a progress notification is a courtesy */
      }
    };
    progress(`waiting for human approval of ${id}`);
    let lastProgress = Date.now();
    // A call asking again (its one-call approval went to another call) keeps its first hold's end.
    const deadline = holdUntil ?? Date.now() + this.timeoutMs;
    this.waiters.started(id, made);
    // How this call stops waiting while the request stays pending (recorded in its row when no
    // other call of this gateway waits on it: CallWaits); null once it is decided or closed, or
    // closes with the run. An exception thrown out of the wait leaves it "answered".
    let left: CallLeft | null = "answered";
    try {
      for (;;) {
        const req = getRequest(db, id);
        if (req?.state !== "pending") left = null; // decided or closed: its row says so
        if (!req) return { error: refuse.authorizationRequired(id, how) };
        if (req.state !== "pending") {
          const settled = await this.settled(req, call, subject(id), {
            cancelled: cutShort(hooks.signal),
            retry: false,
            ends,
          });
          if (settled) return settled;
          // Two identical calls joined one request and its one-call grant went to the other: each
          // call needs its own approval, so this one asks anew at once (the human sees a second
          // request) rather than wait out its hold on a request that is used up. It is the grant
          // that is for one call, not the request: a session request approved "--for call" makes
          // a one-call grant too.
          if (this.takenByAnother(req)) {
            this.o.log.info(
              `the one-call approval of ${id} went to another call of ${quotedName(call.tool)}; this call asks again`,
            );
            return this.ask(call, mode, hooks, deadline);
          }
          // A decision that does not verify is no decision: the call keeps waiting.
        }
        const ended = req.state === "pending" ? await this.runEndedElsewhere(id, call, ends) : null;
        if (ended) {
          left = null; // closed with the run
          return { error: ended };
        }
        const cancelled = cutShort(hooks.signal);
        if (cancelled) {
          // The client gave up, or the gateway answers the call otherwise (a modern client sent to
          // the console): the request stays pending for a retry. When the connection ends (the
          // signal's reason says so), the request closes with the run instead.
          if (cancelled !== "connection-ends" && !sentAway) this.leftBy(id);
          // (a decision that did not verify leaves the request decided: nothing to record)
          if (req.state === "pending")
            left = cancelled === "connection-ends" ? null : sentAway ? "sent-to-console" : "cancelled";
          this.o.log.info(
            cancelled === "connection-ends"
              ? `${hooks.signal?.reason}: the call stops waiting; approval request ${id} closes with the agent run`
              : `the call stopped waiting; approval request ${id} stays pending for a retry`,
          );
          return { error: answerCutShort(cancelled, id, how) };
        }
        // Another call of this run may have been approved for the session meanwhile (agents call in parallel).
        if (mode === "session") {
          const covering = this.parts.coveringNow(call);
          let closed = false;
          try {
            closed =
              covering !== null &&
              (await whenUnlocked(
                () =>
                  closeRequest(db, id, "cancelled", `covered by grant ${covering.grant}, approved meanwhile`),
                { ...this.waits(call), signal: ends },
              ));
          } catch (e) {
            // the connection ended while another process kept the store locked: the request,
            // still pending, closes with the run, and the call is not sent
            if (!(ends?.aborted && isBusy(e))) throw e;
            left = null;
            return { error: answerCutShort("connection-ends", id, how) };
          }
          if (covering && closed) {
            left = null;
            return { grant: covering.grant };
          }
        }
        const now = Date.now();
        const until = Math.min(deadline, Date.parse(req.expiresAt));
        if (now >= until) {
          // Decided, but with nothing this call could use (a decision that did not verify).
          if (req.state !== "pending") return { error: refuse.approvalUnusable(id) };
          if (now >= Date.parse(req.expiresAt)) {
            // not closed yet (the store is locked): the call waits a moment rather than spin on it
            if (!this.expiry.sweep()) await sleep(this.pollMs, hooks.signal);
            continue; // read the final state: a decision may have won the race
          }
          left = "hold-ended";
          return { error: this.stillPending(req) };
        }
        if (now - lastProgress >= this.progressEveryMs) {
          progress(`waiting for human approval of ${id}`);
          lastProgress = now;
        }
        await sleep(Math.min(this.pollMs, until - now), hooks.signal);
      }
    } finally {
      this.waiters.stopped(id, left);
    }
  }

  /**
   * How many requests this gateway wrote are still pending in the store; those that are not any
   * more (decided, expired, cancelled, removed) are forgotten. A row another process wrote naming
   * this run is not counted: it makes no call of this gateway wait, and must not stop one asking.
   */
  private pendingMine(): number {
    if (this.mine.size === 0) return 0;
    const pending = new Set(this.stillPendingOf.all(JSON.stringify([...this.mine])) as string[]);
    for (const id of this.mine) if (!pending.has(id)) this.mine.delete(id);
    return this.mine.size;
  }

  /** Request `id` was left pending by a call the client cancelled (bounded: the oldest forgotten). */
  private leftBy(id: string): void {
    this.leftByClient.delete(id);
    this.leftByClient.add(id);
    if (this.leftByClient.size > MAX_LEFT_REMEMBERED) {
      const oldest = this.leftByClient.values().next().value;
      if (oldest !== undefined) this.leftByClient.delete(oldest);
    }
  }

  /**
   * A newer call of a tool supersedes this run's pending session requests for the same tool
   * version whose only calls the client cancelled: each is closed (`cancelled`) with its
   * `approval_expired` record, so the human is asked once, not once per abandoned call. A host
   * does this as its user types: one `completion/complete` per keystroke, each cancelling the one
   * before, each with other arguments (a retry with the same arguments joins its request). Only
   * requests no call of this gateway waits on, and never per-call ones, whose arguments are what
   * the human decides. Best effort: a store another process keeps locked leaves them pending.
   */
  private supersede(c: SameCall, call: ApprovedCall): void {
    if (this.leftByClient.size === 0) return;
    const { db, events, log } = this.o;
    let rows: ApprovalRequest[];
    try {
      rows = pendingOfSameTool(db, c).filter(
        (r) => this.leftByClient.has(r.request) && !this.waiters.has(r.request),
      );
    } catch {
      return; // the store is closed: the gateway is ending
    }
    if (rows.length === 0 || !briefly(db)(() => lockIsFree(db))) return;
    const reason = `superseded: its call was cancelled by the client, and a newer call of ${quotedName(call.tool)} asks`;
    for (const req of rows) {
      this.leftByClient.delete(req.request);
      events.emit(expiredEvent(req, reason, "the gateway of its run"), () => {
        const closed = closeRequest(db, req.request, "cancelled", reason);
        if (closed) log.info(`approval request ${req.request} ${reason}`);
        return closed;
      });
    }
    events.flush();
  }

  /**
   * What a request that is no longer pending means for this call: its grant, its denial, or the
   * refusal of an expired or withdrawn request; null when it is no decision this call can use
   * (a grant that does not verify, or a one-call grant already taken) and the call must go on.
   * `cancelled`: the client gave up meanwhile, so a one-call grant is left for its retry; or the
   * connection ends ("connection-ends"): a denial is told as it is.
   * `retry`: the request was found by a retry, not waited on: a grant revoked or ended since
   * then is no answer (a human is asked again).
   */
  private async settled(
    req: ApprovalRequest,
    call: ApprovedCall,
    subject: Record<string, unknown>,
    { cancelled, retry, ends }: { cancelled: Cancelled; retry: boolean; ends: AbortSignal | undefined },
  ): Promise<{ grant: string | null } | { error: ErrorObject } | null> {
    const { db } = this.o;
    const id = req.request;
    const how = `portcullis approve ${id}${this.o.stateDirFlag ?? ""}`;
    switch (req.state) {
      case "approved": {
        const g = req.grant ? getGrant(db, req.grant) : null;
        if (!g) {
          this.parts.decisions.reject(
            { what: "grant", grant: req.grant, request: id },
            "the approval names no grant",
          );
          return null;
        }
        if (!this.parts.decisions.approves(g, id, call, this.parts.scopesOf(call))) return null;
        // Ended in the row, or seen ended by this gateway (a one-call grant already consumed).
        const endedAt = g.endedAt ?? (this.parts.decisions.hasEnded(g.grant) ? "seen ended" : null);
        if (retry && (g.revokedAt || endedAt)) return null;
        if (g.revokedAt || (endedAt && g.mode === "session")) {
          this.parts.emit({
            type: "approval_denied",
            ...subject,
            outcome: "revoked",
            decidedBy: req.decidedBy,
          });
          return { error: refuse.approvalDenied(id, "the grant was revoked before the call could use it") };
        }
        if (cancelled) return { error: refuse.authorizationRequired(id, how) };
        // One call takes a one-call grant: the first to end it (another may have taken it). A store
        // locked by another process delays the taking (bounded): the human approved this call, and
        // failing it now would leave the approval unused and the agent with an internal error.
        if (g.mode === "per-call") {
          if (endedAt) return null;
          let taken: number;
          try {
            // Not past the connection's end: the call will not be sent then, and a taking that
            // returned later (the lock given back after the end's bounded wait for decisions) came
            // after the client's output closed and the run's end was written.
            taken = await whenUnlocked(
              () => endGrants(db, [g.grant], "single use: consumed by the call it approved"),
              { ...this.waits(call, "the one-call approval of"), signal: ends },
            );
          } catch (e) {
            // the approval is left untaken: a one-call grant of a run that ends covers nothing more
            if (ends?.aborted && isBusy(e)) return { error: refuse.oneCallApprovalNotTaken(id) };
            throw e;
          }
          if (taken !== 1) return null;
          this.parts.decisions.markEnded(g.grant);
          // Used once the call's intent is recorded; the guard may decide the call again first.
          this.parts.olderEpoch.handedOut(g.grant, call);
        } else {
          this.parts.decisions.markKnown(g.grant);
        }
        // No approval_granted here: the decider recorded it with the decision (decisionRecord.ts).
        return { grant: g.grant };
      }
      case "denied": {
        const v = this.o.verifier.verifyDenial(req);
        if (!v.ok) {
          this.parts.decisions.reject({ what: "denial", request: id }, v.why);
          return null;
        }
        // A retry after the denial reached the agent asks again: the agent was told once. A call
        // that waited on the request beside the one told (the same call twice) is denied too.
        if (retry && this.deniedTold.has(id)) return null;
        // (a connection that ends is told the denial: it is the truth, and says not to retry)
        if (cancelled === "client") return { error: refuse.authorizationRequired(id, how) };
        this.deniedTold.add(id);
        // No approval_denied here: the decider recorded it with the decision (decisionRecord.ts).
        return { error: refuse.approvalDenied(id, req.reason ?? undefined) };
      }
      case "expired":
        return { error: refuse.approvalTimeout(id, undefined, this.o.stateDirFlag) };
      case "cancelled":
        return { error: refuse.authorizationRequired(id, how) };
      default:
        return null;
    }
  }

  /**
   * This gateway is alive, yet its agent run was ended by another process (one that judged it
   * gone, or an edit of the run's row, whose end RunEndWatch records): its session grants ended with the run and no approval can reach it any more (a
   * decider refuses a request of an ended run). Said loudly, once, on the gateway's log; the
   * waiting call is answered at once and its request withdrawn, instead of waiting out its hold
   * for a decision that cannot come. Null while the run is open (or was ended by this gateway).
   */
  private async runEndedElsewhere(
    id: string,
    call: ApprovedCall,
    ends: AbortSignal | undefined,
  ): Promise<ErrorObject | null> {
    if (this.parts.runEnd.read() === null) return null;
    try {
      await whenUnlocked(() => closeRequest(this.o.db, id, "cancelled", "agent run ended"), {
        ...this.waits(call),
        signal: ends,
      });
    } catch (e) {
      // the connection ended while another process kept the store locked: the request is closed
      // with the run's pending ones as this gateway ends it
      if (!(ends?.aborted && isBusy(e))) throw e;
    }
    return refuse.runEnded(id);
  }

  /** An approved per-call request whose one-call grant another call has taken (or that has ended). */
  private takenByAnother(req: ApprovalRequest): boolean {
    if (req.state !== "approved" || !req.grant) return false;
    const g = getGrant(this.o.db, req.grant);
    return (
      g !== null && g.mode === "per-call" && (g.endedAt !== null || this.parts.decisions.hasEnded(g.grant))
    );
  }

  /** whenUnlocked's options for a write this call waits on: one warning naming the store. */
  private waits(call: ApprovedCall, what = "the approval of"): ReturnType<typeof callWaitsFor> {
    return callWaitsFor(this.o.db, this.o.log, `${what} ${quotedName(call.tool)}`);
  }

  /** The approval_timeout of a call whose hold ended while its request is still pending. */
  private stillPending(req: ApprovalRequest): ErrorObject {
    const left = Date.parse(req.expiresAt) - Date.now();
    let console: string | null = null;
    try {
      console = this.o.consolePage?.(req.request) ?? null;
    } catch {
      console = null;
    }
    return refuse.approvalTimeout(
      req.request,
      {
        pendingUntil: req.expiresAt,
        minutesLeft: Math.max(1, Math.ceil(left / 60_000)),
        console,
      },
      this.o.stateDirFlag,
    );
  }

  /**
   * Stores a new pending request for this call, with its review; returns its id. The insert waits
   * out a store another process keeps locked past the busy timeout (bounded, like the call's
   * intent): the call is held for a human anyway, and failing it would only make the agent ask
   * again.
   */
  /** Stores a new request with its `approval_requested` record (`event`); returns its id. */
  private async newRequest(
    call: ApprovedCall,
    mode: "session" | "per-call",
    digest: string,
    event: (request: string) => { type: string; [k: string]: unknown },
    /** aborted once the connection ends (connectionEndSignal) */
    connectionEnds?: AbortSignal,
    /** called with the request's ID as its row is written (in the transaction that writes it) */
    written?: (request: string) => void,
  ): Promise<string> {
    const { db, run, serverLabel } = this.o;
    const id = newRequestId();
    const created = Date.now();
    const createdAt = new Date(created).toISOString();
    const expiresAt = new Date(created + Math.max(this.requestTtlMs, this.timeoutMs)).toISOString();
    const ctx = this.o.context();
    const credentialScope = this.parts.scopesOf(call);
    let review: Review;
    try {
      review = buildReview(db, {
        request: id,
        createdAt,
        expiresAt,
        run,
        serverLabel,
        call,
        mode,
        credentialScope,
        scopeNote: call.read ? null : toolScopeNote(this.o.credentials, this.o.tools, call.tool),
        record: ctx.record,
        reason: ctx.reason ?? null,
        revision: call.revision,
      });
    } catch (e) {
      review = this.minimalReview(id, createdAt, expiresAt, call, mode, (e as Error).message);
    }
    // As it is stored (JSON text) and shown, so that the human's digest can match it.
    const stored = JSON.parse(JSON.stringify(review)) as unknown;
    // this process's mark of the request, before its row exists: a reader tells it from a row
    // another process wrote (vouch.ts); let go again below when the row is not written
    vouchFor(db, id, stored);
    this.parts.decisions.asks(id, {
      reviewDigest: reviewDigest(stored),
      epoch: call.epoch,
      tool: call.tool,
      fingerprint: call.fingerprint,
      mode,
      credentialScope,
      argumentsDigest: digest,
    });
    const request = {
      request: id,
      agentRun: run.run,
      serverLabel,
      executionEpoch: call.epoch,
      catalogRevision: call.revision,
      tool: call.tool,
      fingerprint: call.fingerprint,
      definition: call.definition,
      credentialScope,
      mode,
      review,
      createdAt,
      expiresAt,
      argumentsDigest: digest,
    };
    // Stored as the record's condition (under the audit's write lock, in the transaction that
    // writes it), and waited for: stored first and recorded with the sink's next group, a request
    // stayed in the store unrecorded when that group could not be written (another process holding
    // the lock past the busy timeout) or the gateway was killed meanwhile. Waited for as an
    // intent is: while another process holds the lock the group is tried again, the event loop
    // free (a flush here held it a whole busy timeout).
    try {
      await this.storeRequest(call, request, event, id, connectionEnds, written);
    } catch (e) {
      letGo(id);
      throw e;
    }
    const sd = this.o.stateDirFlag ?? "";
    this.o.log.info(
      `approval needed for ${quotedName(call.tool)}${call.read?.via ? ` (asked as ${call.read.via})` : ""} (${mode}) on epoch ${call.epoch}, ` +
        // each command last on its line, in no quotes of the line's own: it pastes as a whole
        // however its state directory is quoted (stateDirFlagFor)
        `pending until ${expiresAt}; to approve it, run in a terminal: portcullis approve ${id}${sd}`,
    );
    this.o.log.info(`or to deny ${id}, run: portcullis deny ${id}${sd}`);
    return id;
  }

  /** Writes the request's row with its record, or on its own when the record could not be written. */
  private async storeRequest(
    call: ApprovedCall,
    request: Parameters<typeof insertRequest>[1],
    event: (request: string) => { type: string; [k: string]: unknown },
    id: string,
    connectionEnds: AbortSignal | undefined,
    written: ((request: string) => void) | undefined,
  ): Promise<void> {
    const { db } = this.o;
    let recorded = false;
    try {
      recorded = await this.o.events.emitDurable(event(id), () => {
        insertRequest(db, request);
        written?.(id);
        return true;
      });
    } catch {
      // not written: the sink said why
    }
    if (!recorded && !getRequest(db, id)) {
      // Not written (the sink said why): stored all the same, waiting out a lock as any write a
      // call waits on, and its record tried again with the sink's next group. Not once the
      // connection ends: nobody waits for it any more, and a request stored after its run ended
      // would be pending with no gateway to close it.
      try {
        await whenUnlocked(
          () => {
            insertRequest(db, request);
            written?.(id);
          },
          {
            ...this.waits(call, "the approval request for"),
            signal: connectionEnds,
          },
        );
      } catch (e) {
        if (connectionEnds?.aborted) throw new RequestNotStored(id, e);
        throw e;
      }
      this.parts.emit(event(id));
    }
  }

  private minimalReview(
    id: string,
    createdAt: string,
    expiresAt: string,
    call: ApprovedCall,
    mode: "session" | "per-call",
    why: string,
  ): Review {
    const { run, serverLabel } = this.o;
    return {
      request: id,
      createdAt,
      expiresAt,
      agentRun: { run: run.run, startedAt: run.startedAt, chainDigest: run.chainDigest, chain: run.chain },
      serverLabel,
      epoch: {
        current: call.epoch,
        lastApproved: null,
        changedParts: null,
        summary: `the review could not be completed (${why}): treat this as a first approval`,
        record: null,
      },
      catalog: {
        revision: call.revision,
        lastApprovedRevision: null,
        classification: null,
        rendered: "(not available)",
      },
      tool: {
        name: call.tool,
        fingerprint: call.fingerprint,
        mode,
        rendered: renderTool(call.definition, call.tool),
        sinceLastGrant: null,
      },
      credentialScope: this.parts.scopesOf(call),
      arguments: reviewArguments(call),
    };
  }
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, Math.max(0, ms));
    signal?.addEventListener("abort", done, { once: true });
  });
}

/**
 * Why a wait for a human was cut short: not at all (false), the client gave up on the call
 * ("client": the request stays pending for its retry), or the connection ends (its reason is a
 * sentence, see abortDecisions: the request closes with the run).
 */
type Cancelled = false | "client" | "connection-ends";

/**
 * A signal that aborts when `signal` does because the connection ends (its reason a sentence),
 * not when the client cancels one call: a request two identical calls share is given up only
 * when neither can wait for it any more.
 */
function connectionEndSignal(signal: AbortSignal | undefined): AbortSignal | undefined {
  if (!signal) return undefined;
  const ends = new AbortController();
  const check = () => {
    if (typeof signal.reason === "string") ends.abort(signal.reason);
  };
  if (signal.aborted) check();
  else signal.addEventListener("abort", check, { once: true });
  return ends.signal;
}

/** An approval request not stored because the connection ended while the store was locked. */
class RequestNotStored extends Error {
  constructor(
    readonly request: string,
    cause: unknown,
  ) {
    super(`approval request ${request} was not stored: the connection ended`, { cause });
  }
}

function cutShort(signal: AbortSignal | undefined): Cancelled {
  if (!signal?.aborted) return false;
  return typeof signal.reason === "string" ? "connection-ends" : "client";
}

/** The refusal of a call whose wait was cut short: only the client's own retry can use its request. */
function answerCutShort(cancelled: Exclude<Cancelled, false>, id: string, how: string): ErrorObject {
  return cancelled === "connection-ends"
    ? refuse.connectionEndsBeforeApproval(id)
    : refuse.authorizationRequired(id, how);
}

/** The same call, as earlierRequest looks for it: the key of `storing`. */
function sameCallKey(c: {
  agentRun: string;
  serverLabel: string;
  executionEpoch: string;
  tool: string;
  fingerprint: string;
  mode: string;
  argumentsDigest: string;
}): string {
  return [c.agentRun, c.serverLabel, c.executionEpoch, c.tool, c.fingerprint, c.mode, c.argumentsDigest].join(
    "\n",
  );
}
