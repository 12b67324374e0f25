import { argumentsDigest } from "../audit/events.js";
import type { ApprovedCall } from "../guard/guard.js";
import type { Store } from "../store/db.js";
import type { Logger } from "../util/log.js";
import type { GrantRecord } from "./grants.js";
import type { DecisionVerifier } from "./trust.js";

/** A decision row that is not honoured: a grant (by its id) or a denial (by its request). */
export interface RejectedSubject {
  what: "grant" | "denial";
  grant?: string | null;
  request?: string | null;
}

/**
 * Which decision rows one gateway honours, for one agent run in front of one server label: each
 * grant's signature verifies (DecisionVerifier) and it approves a review this gateway wrote; a
 * grant once seen ended stays ended. What it remembers lives only in this gateway, so a row
 * rewritten in the store later cannot take it back. A row not honoured is reported once, on
 * stderr and in the audit (`decision_rejected`).
 */
export class HonouredDecisions {
  /** decision rows already reported as rejected (what, id, why) */
  private readonly rejected = new Set<string>();
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
   * What this gateway asked in each request it made: the review it wrote (by digest) and the call
   * it asked about. A grant counts only when it names that review (its signature covers the
   * digest) and grants exactly that call: the stored request, its review and its columns alike,
   * can be rewritten by any process of the user, and a human who approved a rewritten one
   * approved nothing this gateway asked.
   */
  private readonly asked = new Map<string, AskedSubject>();
  private readonly liveGrant: { get(grant: string): unknown };
  private readonly grantMode: { get(grant: string): unknown };

  constructor(
    private readonly o: {
      db: Store;
      verifier: DecisionVerifier;
      /** the agent run's id */
      run: string;
      serverLabel: string;
      log: Pick<Logger, "warn">;
      /** best effort: records `decision_rejected` */
      emit: (e: { type: string; [k: string]: unknown }) => void;
    },
  ) {
    this.liveGrant = o.db
      .prepare("SELECT signature FROM grants WHERE grant_id = ? AND revoked_at IS NULL AND ended_at IS NULL")
      .raw();
    this.grantMode = o.db.prepare("SELECT mode, signature FROM grants WHERE grant_id = ?").raw();
  }

  /**
   * For a call forwarded under `grant`: when it is a session grant, whether it still holds, read
   * anew at each ask (`isLive`, with the signature it had when the call went out). A one-call grant
   * ends as its call is recorded, so it has none: its call holds what it was given until it ends.
   */
  sessionGrantHolds(grant: string): (() => boolean) | undefined {
    const row = this.grantMode.get(grant) as [string, string | null] | undefined;
    if (row?.[0] !== "session") return undefined;
    const signature = row[1];
    return () => this.isLive(grant, signature);
  }

  /**
   * Step 8's read of a grant taken for a call: still live in the store and never seen ended here.
   * The signature must still be the one verified: a row rewritten since is read and verified again;
   * and its signer must still have authority (a removed passkey's grants stop at the next call).
   */
  isLive(grant: string, signature: string | null): boolean {
    if (this.ended.has(grant)) return false;
    const row = this.liveGrant.get(grant) as [string | null] | undefined;
    const live = row !== undefined && row[0] === signature && this.o.verifier.authorityHolds(signature);
    if (row === undefined) this.ended.add(grant);
    return live;
  }

  /**
   * The run's live session grants as just read from the store, less those this gateway has seen
   * end (a grant that left the live set has ended) and those it does not honour.
   */
  honouredLive(read: GrantRecord[]): GrantRecord[] {
    const now = new Set(read.map((g) => g.grant));
    for (const g of this.known) if (!now.has(g)) this.ended.add(g);
    for (const g of now) if (!this.ended.has(g)) this.known.add(g);
    return this.honoured(read.filter((g) => !this.ended.has(g.grant)));
  }

  /** What this gateway asked in `request`: the review it wrote (as stored and shown) and the call. */
  asks(request: string, subject: AskedSubject): void {
    this.asked.set(request, subject);
  }

  hasEnded(grant: string): boolean {
    return this.ended.has(grant);
  }

  /** A one-call grant this gateway consumed: it never covers another call. */
  markEnded(grant: string): void {
    this.ended.add(grant);
  }

  /** A session grant taken for a call: once it leaves the live set, it has ended. */
  markKnown(grant: string): void {
    this.known.add(grant);
  }

  /**
   * Whether grant `g`, read as the decision of request `id`, is a signed approval of exactly this
   * call: its request, run, server, epoch, tool version, credential scopes (`scopes`, the call's)
   * and (per call) arguments.
   */
  approves(g: GrantRecord, id: string, call: ApprovedCall, scopes: string[]): boolean {
    const v = this.o.verifier.verifyGrant(g);
    if (!v.ok) {
      this.reject({ what: "grant", grant: g.grant, request: id }, v.why);
      return false;
    }
    if (!this.reviewed(g)) return false;
    const fits =
      g.request === id &&
      g.agentRun === this.o.run &&
      g.serverLabel === this.o.serverLabel &&
      g.executionEpoch === call.epoch &&
      g.toolScope.some((t) => t.name === call.tool && t.fingerprint === call.fingerprint) &&
      scopes.every((sc) => g.credentialScope.includes(sc)) &&
      (g.mode === "session" || g.argumentsDigest === argumentsDigest(call.effective));
    if (!fits) this.reject({ what: "grant", grant: g.grant, request: id }, "it approves another call");
    return fits;
  }

  /**
   * Whether grant `g`, read as the decision of request `req`, is a signed one-call approval of
   * this call (its request, run, server, tool and arguments `digest`) bound to the epoch the
   * request named, an older one than the call's: an approval of this call that a change of epoch
   * made stale (src/approval/olderEpoch.ts). It covers nothing; it only decides which refusal the
   * call gets. A row that fits nothing is no decision for this call and is not reported.
   */
  approvesAtOlderEpoch(
    g: GrantRecord,
    req: { request: string; executionEpoch: string },
    call: ApprovedCall,
    digest: string,
  ): boolean {
    const v = this.o.verifier.verifyGrant(g);
    if (!v.ok) {
      this.reject({ what: "grant", grant: g.grant, request: req.request }, v.why);
      return false;
    }
    return (
      this.reviewed(g) &&
      g.request === req.request &&
      g.agentRun === this.o.run &&
      g.serverLabel === this.o.serverLabel &&
      g.executionEpoch === req.executionEpoch &&
      g.executionEpoch !== call.epoch &&
      g.toolScope.some((t) => t.name === call.tool) &&
      g.mode === "per-call" &&
      g.argumentsDigest === digest
    );
  }

  /** Records once that a decision row was not honoured, and why (stderr and the audit). */
  reject(subject: RejectedSubject, why: string): void {
    const id = subject.what === "grant" ? subject.grant : subject.request;
    const key = `${subject.what}\u0000${id}\u0000${why}`;
    if (this.rejected.has(key)) return;
    this.rejected.add(key);
    // a grant the approval names none of is told by its request ("grant null" said nothing)
    const named =
      subject.what === "grant" && subject.grant === null && "request" in subject
        ? `the approval of request ${subject.request}`
        : `${subject.what} ${id}`;
    this.o.log.warn(`${named} is not honoured: ${why}`);
    this.o.emit({
      type: "decision_rejected",
      run: this.o.run,
      serverLabel: this.o.serverLabel,
      ...subject,
      why,
    });
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

  /**
   * Whether the (verified) grant approves the review this gateway wrote for its request, and
   * grants what that request asked; reported once if not.
   */
  private reviewed(g: GrantRecord): boolean {
    const subject = g.request !== null ? this.asked.get(g.request) : undefined;
    if (subject && g.reviewDigest === null) {
      // What an older portcullis's approve writes: it signed the row, not the review.
      this.reject(
        { what: "grant", grant: g.grant, request: g.request },
        "it was made by an older portcullis, which does not sign the review the human read: decide this agent's next request with this version",
      );
      return false;
    }
    if (!subject || g.reviewDigest === null || subject.reviewDigest !== g.reviewDigest) {
      this.reject(
        { what: "grant", grant: g.grant, request: g.request },
        "it approves a review this gateway did not write (the request's review was changed in the store)",
      );
      return false;
    }
    if (!grantsAsked(g, subject, this.o.run, this.o.serverLabel)) {
      this.reject(
        { what: "grant", grant: g.grant, request: g.request },
        "it grants another call than the request asked about (the request's tool, epoch, scopes, mode or arguments were changed in the store)",
      );
      return false;
    }
    return true;
  }
}

/** What a gateway asked a human about in one request (what the approval must grant, and no more). */
export interface AskedSubject {
  /** the digest of the review it wrote, as stored and shown */
  reviewDigest: string;
  epoch: string;
  tool: string;
  fingerprint: string;
  mode: "session" | "per-call";
  credentialScope: readonly string[];
  /** the digest of the call's effective arguments */
  argumentsDigest: string;
}

/**
 * Whether grant `g` grants what `asked` asked, and no more: the run and server it was asked for,
 * the epoch and the one tool version asked about, the credential scopes asked for, and the mode
 * asked (one call may be approved where a session was asked, never the reverse), with the
 * arguments asked about when it approves one call. A grant is made from the request's row, which
 * any process of the user can rewrite after the gateway wrote it; the human reads the review,
 * which names what the gateway asked. This is the gateway's own memory of it.
 */
function grantsAsked(g: GrantRecord, asked: AskedSubject, run: string, serverLabel: string): boolean {
  const tool = g.toolScope.length === 1 ? g.toolScope[0] : undefined;
  return (
    g.agentRun === run &&
    g.serverLabel === serverLabel &&
    g.executionEpoch === asked.epoch &&
    tool?.name === asked.tool &&
    tool.fingerprint === asked.fingerprint &&
    g.credentialScope.length === asked.credentialScope.length &&
    g.credentialScope.every((sc) => asked.credentialScope.includes(sc)) &&
    (g.mode === asked.mode || (asked.mode === "session" && g.mode === "per-call")) &&
    (g.mode === "session" || g.argumentsDigest === asked.argumentsDigest)
  );
}
