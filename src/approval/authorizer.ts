import type { ApprovedCall, AuthorizationPort, ExpandingEntry } from "../guard/guard.js";
import { refuse } from "../guard/refusals.js";
import type { ErrorObject } from "../relay/jsonrpc.js";
import { briefly, isBusy } from "../store/db.js";
import { scopesForTool, serverScopes } from "../vault/toolScopes.js";
import { type AskHooks, HumanAsker } from "./askHuman.js";
import type { AuthorizerOptions } from "./authorizerOptions.js";
import { GrantCoverage } from "./coverage.js";
import {
  type ApprovalMode,
  endGrants,
  type GrantRecord,
  grantWritesOn,
  liveSessionGrants,
  resolveMode,
} from "./grants.js";
import { HonouredDecisions } from "./honoured.js";
import { OlderEpochApprovals } from "./olderEpoch.js";
import { RunEndWatch } from "./runEndWatch.js";
import type { Run } from "./runs.js";

export type { AskHooks } from "./askHuman.js";
export {
  type AuthorizerEvents,
  type AuthorizerOptions,
  DEFAULT_HOLD_MS,
  DEFAULT_REQUEST_TTL_MS,
} from "./authorizerOptions.js";

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
 *
 * Its collaborators, each in its own file: GrantCoverage (coverage.ts: which grant covers a
 * call), HonouredDecisions (honoured.ts: which decision rows count), HumanAsker (askHuman.ts:
 * a request to a human and the wait for the decision) and OlderEpochApprovals (olderEpoch.ts:
 * an approval of this very call bound to an older epoch, refused as stale).
 */
export class Authorizer implements AuthorizationPort {
  /**
   * The run's live session grants as last read, with this connection's count of grant writes
   * then. Kept until this connection writes grants, or a grant taken from it turns out to be
   * gone (see condition), or before asking a human; never read per call: reading anything from
   * the store takes SQLite's read locks, which cost more than the rest of the guard.
   */
  private live: { own: number; grants: GrantRecord[] } | null = null;
  /**
   * The session grant obtain() took from `live` for each call, which condition() reads again:
   * one entry per call. A single slot was taken over by the next call decided before the first
   * one's intent was recorded (two calls sent together), and the first then went out with no
   * second look, under a grant revoked from another process long before (`live` still held it).
   */
  private readonly cached = new WeakMap<ApprovedCall, { grant: string; signature: string | null }>();
  /**
   * The grants an expanding catalog change ended (onExpand "run"), while the epoch they named is
   * still the server's: what the run was approved for under that epoch. A hot reloader's old
   * worker often announces the new catalog (`list_changed`) just before it is replaced; the
   * change is seen first, its grants end, and then the epoch changes. Step 2 reports the epoch
   * change all the same (once), as it would have with the grants still live.
   */
  private expandedAway: { epoch: string; tools: string[] } | null = null;
  /** a tool's credential scopes (null: a recorded read), as scopesOf computed them */
  private readonly scopesByTool = new Map<string | null, string[]>();
  private readonly decisions: HonouredDecisions;
  private readonly coverage = new GrantCoverage();
  private readonly asker: HumanAsker;
  private readonly olderEpoch: OlderEpochApprovals;
  /** the run's end by another process while this gateway serves it (runEndWatch.ts) */
  private readonly runEnd: RunEndWatch;

  constructor(private readonly o: AuthorizerOptions) {
    const emit = (e: { type: string; [k: string]: unknown }, condition?: () => boolean) =>
      this.emit(e, condition);
    this.runEnd = new RunEndWatch({
      db: o.db,
      run: o.run,
      serverLabel: o.serverLabel,
      log: o.log,
      emit,
    });
    this.decisions = new HonouredDecisions({
      db: o.db,
      verifier: o.verifier,
      run: o.run.run,
      serverLabel: o.serverLabel,
      log: o.log,
      emit,
    });
    this.olderEpoch = new OlderEpochApprovals({
      db: o.db,
      run: o.run.run,
      serverLabel: o.serverLabel,
      decisions: this.decisions,
      log: o.log,
    });
    this.asker = new HumanAsker(o, {
      scopesOf: (call) => this.scopesOf(call),
      emit,
      decisions: this.decisions,
      coveringNow: (call) => this.covering(call, true),
      olderEpoch: this.olderEpoch,
      runEnd: this.runEnd,
    });
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
    const away = this.expandedAway?.epoch !== call.epoch ? this.expandedAway : null;
    if (live.length === 0 && !away) return null;
    let { covering, expanded } = this.coverage.match(
      live.filter((g) => g.executionEpoch === call.epoch),
      call,
      this.scopesOf(call),
    );
    if (covering) return null;
    // About to refuse: never on what may be an old read.
    live = this.liveGrants(true);
    ({ covering, expanded } = this.coverage.match(
      live.filter((g) => g.executionEpoch === call.epoch),
      call,
      this.scopesOf(call),
    ));
    if (covering) return null;
    const older = live.filter((g) => g.executionEpoch !== call.epoch);
    if (older.length > 0 || away) {
      // told once: the grants end here, or ended with the catalog change
      this.expandedAway = null;
      const approvedEpoch = older.length > 0 ? older[older.length - 1]!.executionEpoch : away!.epoch;
      // `changedTools` (the name kept for agents that read it): every tool these grants named,
      // whether or not its definition changed. New code runs under the new epoch, so each of them
      // needs a new approval; it is not a diff of definitions (catalog_stale says that, per tool).
      const changedTools = [
        ...new Set([...older.flatMap((g) => g.toolScope.map((t) => t.name)), ...(away?.tools ?? [])]),
      ].sort();
      if (older.length > 0)
        this.endStale(
          older.map((g) => g.grant),
          `superseded: execution epoch changed to ${call.epoch}`,
        );
      return refuse.authorizationStale({ approvedEpoch, currentEpoch: call.epoch, changedTools });
    }
    if (expanded.length > 0) {
      this.endStale(
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
   * A call of a tool the server lists with different definitions was refused (the guard, between
   * steps 2 and 3). While it is listed so, no grant covers it, as with a change that expands it:
   * and as a call refused on such a change ends the grants it names (step 2, "superseded"), this
   * refusal ends the live grants of this epoch that covered the tool. Otherwise the approved
   * definition listed alone again was covered by the grant the agent had just been refused under,
   * where a human must be asked again (onExpand "tool"; under "run" the change ended them).
   */
  ambiguousRefused(call: ApprovedCall): void {
    if (this.modeOf(call) === "none") return;
    const scopes = this.scopesOf(call);
    // about to end grants: never on what may be an old read
    const covered = this.liveGrants(true).filter(
      (g) =>
        g.executionEpoch === call.epoch &&
        g.toolScope.some((t) => t.name === call.tool) &&
        scopes.every((s) => g.credentialScope.includes(s)),
    );
    if (covered.length === 0) return;
    this.endStale(
      covered.map((g) => g.grant),
      `superseded: tool ${call.tool} listed more than once with different definitions`,
    );
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
    const reason = `revoked: catalog revision ${change.revision} expands authority`;
    // Deny first: this gateway stops honouring them now, whatever the store does.
    for (const g of grants) this.decisions.markEnded(g);
    // In the store they end as the record's condition (under the audit's write lock, in the
    // transaction that writes it), with the sink's next group: never ended unrecorded, nor
    // recorded unended. That group waits for another program's lock without holding the event
    // loop (an explicit flush here held it a whole busy timeout); given up past it, the rows stay
    // live and cover nothing here, and the run's end (or the next start's, gateway_gone) ends them.
    this.emit(
      {
        type: "grants_revoked",
        run: this.o.run.run,
        serverLabel: this.o.serverLabel,
        reason: "catalog change expands authority",
        grants,
        revision: change.revision,
        previousRevision: change.previousRevision,
        expanding: change.expanding,
      },
      () => endGrants(this.o.db, grants, reason) > 0,
    );
    // (a call that took one of them from `live` is refused at step 8: they are marked ended)
    this.live = null;
    this.expandedAway = {
      epoch: live[live.length - 1]!.executionEpoch,
      tools: [...new Set(live.flatMap((g) => g.toolScope.map((t) => t.name)))],
    };
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
      ? refuse.credentialMissing(verdict.scope, verdict.why, verdict.retry)
      : refuse.vaultLocked(scopes, "retry" in verdict ? verdict.retry : undefined);
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
    // The run was found ended by another process (at an intent record): its end is recorded
    // before this call's, and nothing a human would approve can reach it.
    if (this.runEnd.settle() && mode !== "none") return { error: refuse.runEnded(null) };
    if (mode === "none") return { grant: null };
    if (mode === "session") {
      // From the last read; the guard reads the grant again with the intent record (condition).
      const covering = this.covering(call, false) ?? this.covering(call, true);
      if (covering) {
        this.cached.set(call, { grant: covering.grant, signature: covering.signature });
        return { grant: covering.grant };
      }
    }
    try {
      return await this.asker.ask(call, mode, hooks);
    } finally {
      // A decision may have written grants through this very connection: read them again.
      this.live = null;
    }
  }

  /**
   * Step 8's check, under the audit log's write lock, atomically with the intent record: the run
   * was not ended by another process meanwhile (RunEndWatch), and the session grant obtain() took
   * from its last read is still live. A revoke from another process
   * therefore stops the very next call, however recent the read. Grants that a human just gave,
   * in this decision, need no second look.
   */
  condition(call: ApprovedCall): (() => boolean) | undefined {
    // The call is being recorded under its epoch: a one-call grant handed to it is used.
    this.olderEpoch.recorded(call);
    const c = this.cached.get(call);
    this.cached.delete(call);
    const taken = c && call.grant === c.grant ? c : null;
    return () => {
      // The run's row, read with every call's intent (one read by key, under the write lock this
      // transaction holds): ended by another process, the call is decided again (obtain), after
      // the end is recorded if nobody did; a call under a grant of the run is not recorded at all.
      if (this.runEnd.readUnrecorded() || (this.runEnd.endedElsewhere && call.grant !== null)) {
        this.live = null;
        return false;
      }
      if (!taken || this.decisions.isLive(taken.grant, taken.signature)) return true;
      this.live = null; // the guard decides again, on a fresh read
      return false;
    };
  }

  /** While the call is at the server: whether the session grant it went out under still holds. */
  holding(call: ApprovedCall): (() => boolean) | undefined {
    return call.grant === null ? undefined : this.decisions.sessionGrantHolds(call.grant);
  }

  // ───────────────────────────── coverage ─────────────────────────────

  readsAskHuman(): boolean {
    return (this.o.approval.resources ?? "none") === "per-call";
  }

  /** A tool's mode from `approval.tools`/`default`; a recorded read's from `approval.resources`. */
  private modeOf(call: ApprovedCall): ApprovalMode {
    return call.read ? (this.o.approval.resources ?? "none") : resolveMode(this.o.approval, call.tool);
  }

  /** A session grant of the current epoch that covers the call, from the last read or a fresh one. */
  private covering(call: ApprovedCall, fresh: boolean): GrantRecord | null {
    const live = this.liveGrants(fresh).filter((g) => g.executionEpoch === call.epoch);
    return this.coverage.match(live, call, this.scopesOf(call)).covering;
  }

  /**
   * The run's live session grants for this server: the last read, unless `fresh` or this
   * connection wrote grants since (see `live`).
   */
  /**
   * Ends grants step 2 found stale. This gateway stops honouring them at once, whatever the store
   * says; the store's rows are ended too, unless another program holds its lock past the busy
   * timeout: then they stay live there (they cover nothing in this epoch, which is what the
   * refusal says), with a warning, rather than the call failing on a write that only tidies up.
   */
  private endStale(grants: string[], reason: string): void {
    for (const g of grants) this.decisions.markEnded(g);
    try {
      // in the synchronous precheck: another program's lock is waited for briefly, not a whole
      // busy timeout with the event loop held
      briefly(this.o.db)(() => endGrants(this.o.db, grants, reason));
    } catch (e) {
      if (!isBusy(e)) throw e;
      this.o.log.warn(
        `the store ${this.o.db.name} is locked by another process: ${grants.length} stale grant(s) stay live in it, ended for this gateway`,
      );
    }
  }

  private liveGrants(fresh = false): GrantRecord[] {
    const own = grantWritesOn(this.o.db);
    const hit = this.live;
    if (!fresh && hit && hit.own === own) return hit.grants;
    const read = liveSessionGrants(this.o.db, this.o.run.run, this.o.serverLabel);
    const grants = this.decisions.honouredLive(read);
    this.live = { own, grants };
    return grants;
  }

  /** Best effort (the gateway's audit sink): an event it could not take is a warning on stderr. */
  private emit(e: { type: string; [k: string]: unknown }, condition?: () => boolean): void {
    try {
      this.o.events.emit(e, condition);
    } catch (err) {
      this.o.log.warn(`could not record ${e.type}: ${(err as Error).message}`);
    }
  }
}
