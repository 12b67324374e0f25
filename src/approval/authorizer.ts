import { argumentsDigest } from "../audit/events.js";
import { type Classification, diffCatalogs, type Tool, toolFingerprint } from "../catalog/index.js";
import type { ApprovedCall, AuthorizationPort, ExpandingEntry } from "../guard/guard.js";
import { refuse } from "../guard/refusals.js";
import type { ExecutionRecord } from "../identity/index.js";
import type { ErrorObject } from "../relay/jsonrpc.js";
import type { Store } from "../store/db.js";
import type { Logger } from "../util/log.js";
import type { VaultPort } from "../vault/port.js";
import { scopesForTool, serverScopes, type ToolsConfig, toolScopeNote } from "../vault/toolScopes.js";
import { reviewDigest } from "./decision.js";
import {
  type ApprovalConfig,
  type ApprovalMode,
  endGrants,
  type GrantRecord,
  getGrant,
  grantWritesOn,
  liveSessionGrants,
  resolveMode,
} from "./grants.js";
import { notifyNewRequest } from "./notify.js";
import {
  type ApprovalRequest,
  closeRequest,
  earlierRequest,
  expiredEvent,
  getRequest,
  insertRequest,
  newRequestId,
  nextExpiry,
  overdueRequests,
  type Review,
} from "./requests.js";
import { buildReview, renderTool, reviewArguments } from "./review.js";
import type { Run } from "./runs.js";
import type { DecisionVerifier } from "./trust.js";

/** How long a call waits for a human: below the common 60 s client request timeout. */
export const DEFAULT_HOLD_MS = 50_000;
/** How long a request waits for a decision after its call gave up (retries join it). */
export const DEFAULT_REQUEST_TTL_MS = 10 * 60_000;

/** What the gateway hears while a call waits for a human. */
export interface AskHooks {
  progress?: (message: string) => void;
  signal?: AbortSignal;
  /** the call now waits on approval request `id` (new, or joined by a retry) */
  waiting?: (request: string) => void;
}

export interface AuthorizerEvents {
  /** best effort (the gateway's audit sink): approval_requested, approval_granted, approval_denied */
  emit(e: { type: string; [k: string]: unknown }): void;
}

export interface AuthorizerOptions {
  db: Store;
  run: Run;
  serverLabel: string;
  /** config `approval: {default, tools, resources}` */
  approval: ApprovalConfig;
  /** config `credentials`: env var → scope name */
  credentials: Record<string, string>;
  /** config `tools.<name>.credentials`: the scopes each tool uses (absent: every tool uses all) */
  tools?: ToolsConfig;
  /** step 6: the vault holder (absent: a server without credentials never asks) */
  vault?: VaultPort;
  /** how long a call waits for a human (default 50 s, below common client timeouts) */
  timeoutMs?: number;
  /** how long a request stays pending for retries of its call after the call gave up (default 10 min) */
  requestTtlMs?: number;
  /** the console page of a request, when a console runs (null: none runs) */
  consolePage?: (request: string) => string | null;
  /** tells the human a new request is waiting (default: a desktop notification, src/approval/notify.ts) */
  notify?: (tool: string, serverLabel: string) => void;
  /** how often the store is read for a decision (default 150 ms) */
  pollMs?: number;
  /** how often `progress` is called while waiting (default 3 s) */
  progressEveryMs?: number;
  log: Pick<Logger, "info" | "warn">;
  events: AuthorizerEvents;
  /** the current epoch's execution record (null when not captured yet) and catalog revision */
  context: () => { record: ExecutionRecord | null; revision: number };
  /** checks each decision's signature against the approver key pinned in the audit chain */
  verifier: DecisionVerifier;
  /** told of each new request (the gateway starts the console); must not throw or block */
  onRequest?: (request: string) => void;
}

/**
 * Steps 2, 6 and 7 of the decision order for one agent run in front of one server, and the
 * grant that step 8 reads again, atomically with the intent record (condition).
 *
 * A session grant covers a call when it belongs to this run, this server label and
 * the call's execution epoch, names the tool with the fingerprint it was approved
 * at (or a later version whose change from the approved definition is `narrows` or
 * `cosmetic`), and holds every credential scope the tool uses (src/vault/toolScopes.ts: the
 * tool's own list, or all the server's); it must not be
 * revoked or ended. Per-call grants never cover another call.
 *
 * No decision counts unless it verifies (DecisionVerifier): a grant or a denial whose signature
 * does not verify against the pinned approver key is left out, reported once on stderr and in
 * the audit (`decision_rejected`), and a call waiting for a human keeps waiting.
 */
export class Authorizer implements AuthorizationPort {
  private readonly timeoutMs: number;
  private readonly requestTtlMs: number;
  private expiryTimer: NodeJS.Timeout | null = null;
  /** denials already returned to a call: a later retry of the same call asks a human again */
  private readonly deniedTold = new Set<string>();
  private readonly pollMs: number;
  private readonly progressEveryMs: number;
  /** classification of (grant, current fingerprint): a diff is computed once per version seen */
  private readonly classified = new Map<string, Classification>();
  /**
   * The run's live session grants as last read, with this connection's count of grant writes
   * then. Kept until this connection writes grants, or a grant taken from it turns out to be
   * gone (see condition), or before asking a human; never read per call: reading anything from
   * the store takes SQLite's read locks, which cost more than the rest of the guard.
   */
  private live: { own: number; grants: GrantRecord[] } | null = null;
  /** The session grant obtain() took from `live` for a call, which condition() reads again. */
  private cached: { call: ApprovedCall; grant: string; signature: string | null } | null = null;
  private readonly grantIsLive: (grant: string, signature: string | null) => boolean;
  /** decision rows already reported as rejected (what, id, why) */
  private readonly rejected = new Set<string>();
  /** a tool's credential scopes (null: a recorded read), as scopesOf computed them */
  private readonly scopesByTool = new Map<string | null, string[]>();
  /**
   * Grants this gateway has seen end: consumed one-call grants, and session grants that left the
   * live set (revoked, ended). An end is final, but `ended_at` and `revoked_at` are not signed: a
   * store writer could clear them to use a one-call approval again or undo a revoke. Once seen
   * here, a grant never covers a call of this gateway again, whatever the row says later.
   */
  private readonly ended = new Set<string>();
  /** This run's session grants the gateway has seen live (read, or taken for a call). */
  private readonly known = new Set<string>();
  /**
   * The digest of the review this gateway wrote for each request it made. A grant counts only
   * when it names that review (its signature covers the digest): the stored review can be
   * rewritten by any process of the user, and a human who approved a rewritten one approved
   * nothing this gateway asked.
   */
  private readonly reviews = new Map<string, string>();

  constructor(private readonly o: AuthorizerOptions) {
    const liveGrant = o.db
      .prepare("SELECT signature FROM grants WHERE grant_id = ? AND revoked_at IS NULL AND ended_at IS NULL")
      .raw();
    // The signature must still be the one verified: a row rewritten since is read and verified again;
    // and its signer must still have authority (a removed passkey's grants stop at the next call).
    this.grantIsLive = (grant, signature) => {
      if (this.ended.has(grant)) return false;
      const row = liveGrant.get(grant) as [string | null] | undefined;
      const live = row !== undefined && row[0] === signature && o.verifier.authorityHolds(signature);
      if (row === undefined) this.ended.add(grant);
      return live;
    };
    this.timeoutMs = o.timeoutMs ?? DEFAULT_HOLD_MS;
    this.requestTtlMs = o.requestTtlMs ?? DEFAULT_REQUEST_TTL_MS;
    this.pollMs = o.pollMs ?? 150;
    this.progressEveryMs = o.progressEveryMs ?? 3000;
  }

  get run(): Run {
    return this.o.run;
  }

  /**
   * Step 2. The run holds session grants for this server under an older epoch and no
   * grant of the current epoch covers the call → authorization_stale (epoch changed);
   * or a current-epoch grant names an older version of this tool whose change expands
   * its authority → authorization_stale ("tool authority expanded").
   *
   * The refusal is given once: the grants it reports are ended ("superseded"), so the
   * agent's next call (after it re-lists) goes on to step 7 and asks a human for a
   * grant of the current epoch. Without that, a stale grant would refuse every later
   * call and no new approval could ever be asked for.
   *
   * Mode `none`: no approval is ever given for the tool, so there is nothing to be
   * stale; the guard's own epoch checks (hold while identity-pending, epoch_transition)
   * still apply, and the call is audited with its epoch.
   */
  stale(call: ApprovedCall): ErrorObject | null {
    if (this.modeOf(call) === "none") return null;
    let live = this.liveGrants();
    if (live.length === 0) return null;
    let { covering, expanded } = this.match(
      live.filter((g) => g.executionEpoch === call.epoch),
      call,
    );
    if (covering) return null;
    // About to refuse: never on what may be an old read.
    live = this.liveGrants(true);
    ({ covering, expanded } = this.match(
      live.filter((g) => g.executionEpoch === call.epoch),
      call,
    ));
    if (covering) return null;
    const older = live.filter((g) => g.executionEpoch !== call.epoch);
    if (older.length > 0) {
      const approvedEpoch = older[older.length - 1]!.executionEpoch;
      // `changedTools` (the name kept for agents that read it): every tool these grants named,
      // whether or not its definition changed. New code runs under the new epoch, so each of them
      // needs a new approval; it is not a diff of definitions (catalog_stale says that, per tool).
      const changedTools = [...new Set(older.flatMap((g) => g.toolScope.map((t) => t.name)))].sort();
      endGrants(
        this.o.db,
        older.map((g) => g.grant),
        `superseded: execution epoch changed to ${call.epoch}`,
      );
      return refuse.authorizationStale({ approvedEpoch, currentEpoch: call.epoch, changedTools });
    }
    if (expanded.length > 0) {
      endGrants(
        this.o.db,
        expanded.map((g) => g.grant),
        `superseded: tool ${call.tool} changed in a way that expands its authority`,
      );
      return refuse.authorizationStale({
        approvedEpoch: call.epoch,
        currentEpoch: call.epoch,
        changedTools: [call.tool],
        reason: "tool authority expanded",
      });
    }
    return null;
  }

  /**
   * onExpand "run": an expanding catalog change ends every live grant of this run for this
   * server (the human approved the run for the inventory it saw, not for the new one), recorded
   * with the entries that caused it. The next call of any tool asks again; its review shows the
   * catalog diff since the revision the run was approved under.
   */
  catalogExpanded(change: { revision: number; previousRevision: number; expanding: ExpandingEntry[] }): void {
    const live = this.liveGrants(true);
    if (live.length === 0) return;
    const grants = live.map((g) => g.grant);
    endGrants(this.o.db, grants, `revoked: catalog revision ${change.revision} expands authority`);
    this.live = null;
    this.cached = null;
    this.emit({
      type: "grants_revoked",
      run: this.o.run.run,
      serverLabel: this.o.serverLabel,
      reason: "catalog change expands authority",
      grants,
      revision: change.revision,
      previousRevision: change.previousRevision,
      expanding: change.expanding,
    });
    this.o.log.info(
      `catalog revision ${change.revision} expands authority (${change.expanding.map((e) => e.tool).join(", ")}): this run's ${grants.length} grant(s) ended; the next call asks again`,
    );
  }

  /**
   * Step 6: a server with credentials gets no call while the vault is locked (`vault_locked`),
   * nor while a scope it needs has no secret in the vault (`credential_missing`). Asked of
   * the holder per call, so `portcullis lock` stops the very next call.
   */
  async vault(call: ApprovedCall): Promise<ErrorObject | null> {
    const scopes = this.scopesOf(call);
    if (scopes.length === 0) return null;
    const verdict = this.o.vault ? await this.o.vault.check(scopes) : { error: "vault_locked" as const };
    if (!verdict) return null;
    return verdict.error === "credential_missing"
      ? refuse.credentialMissing(verdict.scope, verdict.why)
      : refuse.vaultLocked(scopes);
  }

  /**
   * The scopes this call uses: its tool's (src/vault/toolScopes.ts). A recorded read is no tool:
   * it is approved with every scope of the server, as before per-tool scopes existed.
   */
  private scopesOf(call: ApprovedCall): string[] {
    // per tool name, once: the configuration does not change while the gateway runs
    const key = call.read ? null : call.tool;
    let scopes = this.scopesByTool.get(key);
    if (!scopes) {
      scopes =
        key === null
          ? serverScopes(this.o.credentials)
          : scopesForTool(this.o.credentials, this.o.tools, key);
      // bounded: a client may call any number of names that are no tool
      if (this.scopesByTool.size >= 1024) this.scopesByTool.clear();
      this.scopesByTool.set(key, scopes);
    }
    return scopes;
  }

  /** Step 7: a covering session grant, or a human decision (the call is held while waiting). */
  async obtain(
    call: ApprovedCall,
    hooks: AskHooks = {},
  ): Promise<{ grant: string | null } | { error: ErrorObject }> {
    const mode = this.modeOf(call);
    if (mode === "none") return { grant: null };
    if (mode === "session") {
      // From the last read; the guard reads the grant again with the intent record (condition).
      const covering = this.covering(call, false) ?? this.covering(call, true);
      if (covering) {
        this.cached = { call, grant: covering.grant, signature: covering.signature };
        return { grant: covering.grant };
      }
    }
    try {
      return await this.ask(call, mode, hooks);
    } finally {
      // A decision may have written grants through this very connection: read them again.
      this.live = null;
    }
  }

  /**
   * Step 8's check, under the audit log's write lock, atomically with the intent record: the
   * session grant obtain() took from its last read is still live. A revoke from another process
   * therefore stops the very next call, however recent the read. Grants that a human just gave,
   * in this decision, need no second look.
   */
  condition(call: ApprovedCall): (() => boolean) | undefined {
    const c = this.cached;
    if (!c || c.call !== call || call.grant !== c.grant) return undefined;
    this.cached = null;
    return () => {
      if (this.grantIsLive(c.grant, c.signature)) return true;
      this.live = null; // the guard decides again, on a fresh read
      return false;
    };
  }

  // ───────────────────────────── coverage ─────────────────────────────

  /** A tool's mode from `approval.tools`/`default`; a recorded read's from `approval.resources`. */
  private modeOf(call: ApprovedCall): ApprovalMode {
    return call.read ? (this.o.approval.resources ?? "none") : resolveMode(this.o.approval, call.tool);
  }

  /** A session grant of the current epoch that covers the call, from the last read or a fresh one. */
  private covering(call: ApprovedCall, fresh: boolean): GrantRecord | null {
    const live = this.liveGrants(fresh).filter((g) => g.executionEpoch === call.epoch);
    return this.match(live, call).covering;
  }

  /**
   * The run's live session grants for this server: the last read, unless `fresh` or this
   * connection wrote grants since (see `live`).
   */
  private liveGrants(fresh = false): GrantRecord[] {
    const own = grantWritesOn(this.o.db);
    const hit = this.live;
    if (!fresh && hit && hit.own === own) return hit.grants;
    const read = liveSessionGrants(this.o.db, this.o.run.run, this.o.serverLabel);
    const now = new Set(read.map((g) => g.grant));
    for (const g of this.known) if (!now.has(g)) this.ended.add(g);
    for (const g of now) if (!this.ended.has(g)) this.known.add(g);
    const grants = this.honoured(read.filter((g) => !this.ended.has(g.grant)));
    this.live = { own, grants };
    return grants;
  }

  /**
   * The grants whose signature verifies and that approve a review this gateway wrote; the others
   * are reported (once each) and left out.
   */
  private honoured(grants: GrantRecord[]): GrantRecord[] {
    return grants.filter((g) => {
      const v = this.o.verifier.verifyGrant(g);
      if (!v.ok) this.reject({ what: "grant", grant: g.grant, request: g.request }, v.why);
      return v.ok && this.reviewed(g);
    });
  }

  /** Whether the (verified) grant approves the review this gateway wrote for its request; reported once if not. */
  private reviewed(g: GrantRecord): boolean {
    const ok =
      g.request !== null && g.reviewDigest !== null && this.reviews.get(g.request) === g.reviewDigest;
    if (!ok) {
      this.reject(
        { what: "grant", grant: g.grant, request: g.request },
        "it approves a review this gateway did not write (the request's review was changed in the store)",
      );
    }
    return ok;
  }

  /** Records once that a decision row was not honoured, and why (stderr and the audit). */
  private reject(
    subject: { what: "grant" | "denial"; grant?: string | null; request?: string | null },
    why: string,
  ) {
    const id = subject.what === "grant" ? subject.grant : subject.request;
    const key = `${subject.what}\u0000${id}\u0000${why}`;
    if (this.rejected.has(key)) return;
    this.rejected.add(key);
    this.o.log.warn(`${subject.what} ${id} is not honoured: ${why}`);
    this.emit({
      type: "decision_rejected",
      run: this.o.run.run,
      serverLabel: this.o.serverLabel,
      ...subject,
      why,
    });
  }

  /**
   * Whether grant `g`, read as the decision of request `id`, is a signed approval of exactly this
   * call: its request, run, server, epoch, tool version and (per call) arguments.
   */
  private approves(g: GrantRecord, id: string, call: ApprovedCall): boolean {
    const v = this.o.verifier.verifyGrant(g);
    if (!v.ok) {
      this.reject({ what: "grant", grant: g.grant, request: id }, v.why);
      return false;
    }
    if (!this.reviewed(g)) return false;
    const fits =
      g.request === id &&
      g.agentRun === this.o.run.run &&
      g.serverLabel === this.o.serverLabel &&
      g.executionEpoch === call.epoch &&
      g.toolScope.some((t) => t.name === call.tool && t.fingerprint === call.fingerprint) &&
      this.scopesOf(call).every((sc) => g.credentialScope.includes(sc)) &&
      (g.mode === "session" || g.argumentsDigest === argumentsDigest(call.effective));
    if (!fits) this.reject({ what: "grant", grant: g.grant, request: id }, "it approves another call");
    return fits;
  }

  private match(
    grants: GrantRecord[],
    call: ApprovedCall,
  ): { covering: GrantRecord | null; expanded: GrantRecord[] } {
    const scopes = this.scopesOf(call);
    const usable = grants.filter((g) => scopes.every((s) => g.credentialScope.includes(s)));
    for (const g of usable) {
      if (g.toolScope.some((t) => t.name === call.tool && t.fingerprint === call.fingerprint)) {
        return { covering: g, expanded: [] };
      }
    }
    const expanded: GrantRecord[] = [];
    // A tool that left the catalog has no current definition: step 4 refuses it.
    if (!call.definition) return { covering: null, expanded };
    for (const g of usable) {
      if (!g.toolScope.some((t) => t.name === call.tool)) continue;
      const c = this.classify(g, call);
      if (c === "expands") expanded.push(g);
      else return { covering: g, expanded: [] };
    }
    return { covering: null, expanded };
  }

  /**
   * How the current definition differs from the approved one; unknown or unprovable is `expands`.
   * The approved definition is read from the grant's row, which the signature does not cover: it
   * counts only when its fingerprint is the one the human signed for that tool, so a definition
   * rewritten in the store (to make an expansion look cosmetic) proves nothing.
   */
  private classify(g: GrantRecord, call: ApprovedCall): Classification {
    const key = `${g.grant}\u0000${call.fingerprint}`;
    const hit = this.classified.get(key);
    if (hit) return hit;
    let c: Classification = "expands";
    const granted = signedDefinition(g, call.tool);
    if (granted && call.definition) {
      try {
        const diff = diffCatalogs([granted as Tool], [call.definition as Tool]);
        const entry = diff.entries.find((e) => e.kind === "modified" && e.tool === call.tool);
        c = entry && diff.entries.length === 1 ? entry.classification : "expands";
      } catch {
        c = "expands";
      }
    }
    this.classified.set(key, c);
    return c;
  }

  // ───────────────────────────── asking a human ─────────────────────────────

  /**
   * A human decision for this call. A request outlives the call that raised it: when the call's
   * hold ends (or the client gives up) the request stays pending until its TTL, and a retry of
   * the same call (run, label, epoch, tool version, mode, argument digest) joins it instead of
   * asking again; once approved, the retry takes the grant at once (a one-call grant is consumed
   * by the one call that takes it).
   */
  private async ask(
    call: ApprovedCall,
    mode: "session" | "per-call",
    hooks: AskHooks,
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
      credentialScope: this.scopesOf(call),
    });
    const earlier = earlierRequest(db, {
      agentRun: run.run,
      serverLabel,
      executionEpoch: call.epoch,
      tool: call.tool,
      fingerprint: call.fingerprint,
      mode,
      argumentsDigest: digest,
    });
    let id: string;
    if (earlier && earlier.state !== "pending") {
      const settled = this.settled(earlier, call, subject(earlier.request), {
        cancelled: false,
        retry: true,
      });
      if (settled) return settled;
    }
    if (earlier?.state === "pending") {
      id = earlier.request;
      this.o.log.info(`a retry of ${JSON.stringify(call.tool)} joins approval request ${id}, still pending`);
    } else {
      id = this.newRequest(call, mode, digest);
      this.emit({ type: "approval_requested", ...subject(id), mode, arguments: digest });
      (this.o.notify ?? notifyNewRequest)(call.tool, serverLabel);
      try {
        this.o.onRequest?.(id);
      } catch {
        /* reaching the human is best effort: the call waits either way */
      }
    }
    const how = `portcullis approve ${id}`;
    this.scheduleExpiry();
    try {
      hooks.waiting?.(id);
    } catch {
      /* telling the client where to decide is a courtesy */
    }

    const progress = (msg: string) => {
      try {
        hooks.progress?.(msg);
      } catch {
        /* a progress notification is a courtesy */
      }
    };
    progress(`waiting for human approval of ${id}`);
    let lastProgress = Date.now();
    const deadline = Date.now() + this.timeoutMs;
    for (;;) {
      const req = getRequest(db, id);
      if (!req) return { error: refuse.authorizationRequired(id, how) };
      if (req.state !== "pending") {
        const settled = this.settled(req, call, subject(id), {
          cancelled: !!hooks.signal?.aborted,
          retry: false,
        });
        if (settled) return settled;
        // A decision that does not verify is no decision: the call keeps waiting.
      }
      if (hooks.signal?.aborted) {
        // The client gave up, or the gateway answers the call otherwise (a modern client sent to
        // the console): the request stays pending for a retry.
        this.o.log.info(`the call stopped waiting; approval request ${id} stays pending for a retry`);
        return { error: refuse.authorizationRequired(id, how) };
      }
      // Another call of this run may have been approved for the session meanwhile (agents call in parallel).
      if (mode === "session") {
        const live = this.liveGrants(true).filter((g) => g.executionEpoch === call.epoch);
        const { covering } = this.match(live, call);
        if (
          covering &&
          closeRequest(db, id, "cancelled", `covered by grant ${covering.grant}, approved meanwhile`)
        ) {
          return { grant: covering.grant };
        }
      }
      const now = Date.now();
      const until = Math.min(deadline, Date.parse(req.expiresAt));
      if (now >= until) {
        // A decision this call cannot use (unverified, or a one-call grant another call took).
        if (req.state !== "pending") return { error: refuse.approvalTimeout(id) };
        if (now >= Date.parse(req.expiresAt)) {
          this.sweepExpired();
          continue; // read the final state: a decision may have won the race
        }
        return { error: this.stillPending(req) };
      }
      if (now - lastProgress >= this.progressEveryMs) {
        progress(`waiting for human approval of ${id}`);
        lastProgress = now;
      }
      await sleep(Math.min(this.pollMs, until - now), hooks.signal);
    }
  }

  /**
   * What a request that is no longer pending means for this call: its grant, its denial, or the
   * refusal of an expired or withdrawn request; null when it is no decision this call can use
   * (a grant that does not verify, or a one-call grant already taken) and the call must go on.
   * `cancelled`: the client gave up meanwhile, so a one-call grant is left for its retry.
   * `retry`: the request was found by a retry, not waited on: a grant revoked or ended since
   * then is no answer (a human is asked again).
   */
  private settled(
    req: ApprovalRequest,
    call: ApprovedCall,
    subject: Record<string, unknown>,
    { cancelled, retry }: { cancelled: boolean; retry: boolean },
  ): { grant: string | null } | { error: ErrorObject } | null {
    const { db } = this.o;
    const id = req.request;
    const how = `portcullis approve ${id}`;
    switch (req.state) {
      case "approved": {
        const g = req.grant ? getGrant(db, req.grant) : null;
        if (!g) {
          this.reject({ what: "grant", grant: req.grant, request: id }, "the approval names no grant");
          return null;
        }
        if (!this.approves(g, id, call)) return null;
        // Ended in the row, or seen ended by this gateway (a one-call grant already consumed).
        const endedAt = g.endedAt ?? (this.ended.has(g.grant) ? "seen ended" : null);
        if (retry && (g.revokedAt || endedAt)) return null;
        if (g.revokedAt || (endedAt && g.mode === "session")) {
          this.emit({ type: "approval_denied", ...subject, outcome: "revoked", decidedBy: req.decidedBy });
          return { error: refuse.approvalDenied(id, "the grant was revoked before the call could use it") };
        }
        if (cancelled) return { error: refuse.authorizationRequired(id, how) };
        // One call takes a one-call grant: the first to end it (another may have taken it).
        if (g.mode === "per-call") {
          if (endedAt || endGrants(db, [g.grant], "single use: consumed by the call it approved") !== 1) {
            return null;
          }
          this.ended.add(g.grant);
        } else {
          this.known.add(g.grant);
        }
        this.emit({
          type: "approval_granted",
          ...subject,
          grant: g.grant,
          mode: g.mode,
          expiresWhen: g.expiresWhen,
          decidedBy: req.decidedBy,
        });
        return { grant: g.grant };
      }
      case "denied": {
        const v = this.o.verifier.verifyDenial(req);
        if (!v.ok) {
          this.reject({ what: "denial", request: id }, v.why);
          return null;
        }
        // A retry after the denial reached the agent asks again: the agent was told once.
        if (this.deniedTold.has(id)) return null;
        if (cancelled) return { error: refuse.authorizationRequired(id, how) };
        this.deniedTold.add(id);
        this.emit({
          type: "approval_denied",
          ...subject,
          outcome: "denied",
          decidedBy: req.decidedBy,
          reason: req.reason,
        });
        return { error: refuse.approvalDenied(id, req.reason ?? undefined) };
      }
      case "expired":
        return { error: refuse.approvalTimeout(id) };
      case "cancelled":
        return { error: refuse.authorizationRequired(id, how) };
      default:
        return null;
    }
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
    return refuse.approvalTimeout(req.request, {
      pendingUntil: req.expiresAt,
      minutesLeft: Math.max(1, Math.ceil(left / 60_000)),
      console,
    });
  }

  /** Stores a new pending request for this call, with its review; returns its id. */
  private newRequest(call: ApprovedCall, mode: "session" | "per-call", digest: string): string {
    const { db, run, serverLabel } = this.o;
    const id = newRequestId();
    const created = Date.now();
    const createdAt = new Date(created).toISOString();
    const expiresAt = new Date(created + Math.max(this.requestTtlMs, this.timeoutMs)).toISOString();
    const ctx = this.o.context();
    const credentialScope = this.scopesOf(call);
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
        revision: call.revision,
      });
    } catch (e) {
      review = this.minimalReview(id, createdAt, expiresAt, call, mode, (e as Error).message);
    }
    // As it is stored (JSON text) and shown, so that the human's digest can match it.
    this.reviews.set(id, reviewDigest(JSON.parse(JSON.stringify(review))));
    insertRequest(db, {
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
    });
    this.o.log.info(
      `approval needed for ${JSON.stringify(call.tool)} (${mode}) on epoch ${call.epoch}: ` +
        `run 'portcullis approve ${id}' or 'portcullis deny ${id}' in a terminal (pending until ${expiresAt})`,
    );
    return id;
  }

  // ───────────────────────────── expiry ─────────────────────────────

  /** Arms one timer for the next pending request of this run to expire (none when none is pending). */
  private scheduleExpiry(): void {
    if (this.expiryTimer) clearTimeout(this.expiryTimer);
    this.expiryTimer = null;
    let at: number | null;
    try {
      at = nextExpiry(this.o.db, this.o.run.run, this.o.serverLabel);
    } catch {
      return; // the store is closed: the gateway is ending
    }
    if (at === null) return;
    this.expiryTimer = setTimeout(
      () => {
        this.expiryTimer = null;
        this.sweepExpired();
        this.scheduleExpiry();
      },
      Math.max(0, at - Date.now()) + 20,
    );
    this.expiryTimer.unref();
  }

  /** Closes this run's pending requests whose time is up, each recorded once (`approval_expired`). */
  private sweepExpired(): void {
    let due: ApprovalRequest[];
    try {
      due = overdueRequests(this.o.db, this.o.run.run, this.o.serverLabel);
    } catch {
      return;
    }
    for (const req of due) {
      const minutes = Math.round((Date.parse(req.expiresAt) - Date.parse(req.createdAt)) / 60_000);
      const reason = `nobody decided within ${minutes} min`;
      if (!closeRequest(this.o.db, req.request, "expired", reason)) continue;
      this.o.log.info(`approval request ${req.request} expired: nobody decided`);
      this.emit(expiredEvent(req, reason, "the gateway of its run"));
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
      credentialScope: this.scopesOf(call),
      arguments: reviewArguments(call),
    };
  }

  private emit(e: { type: string; [k: string]: unknown }): void {
    try {
      this.o.events.emit(e);
    } catch (err) {
      this.o.log.warn(`could not record ${e.type}: ${(err as Error).message}`);
    }
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

/** The definition a grant approved for `tool`, when it is the one whose fingerprint was signed. */
function signedDefinition(g: GrantRecord, tool: string): Tool | null {
  const definition = Object.hasOwn(g.toolDefinitions, tool) ? (g.toolDefinitions[tool] as Tool) : null;
  if (definition === null) return null;
  const signed = g.toolScope.filter((t) => t.name === tool).map((t) => t.fingerprint);
  try {
    return signed.includes(toolFingerprint(definition)) ? definition : null;
  } catch {
    return null; // not canonical JSON: nothing the human can have signed
  }
}
