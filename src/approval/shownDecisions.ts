import type { Store } from "../store/db.js";
import { type GrantRecord, getGrant } from "./grants.js";
import type { ApprovalRequest } from "./requests.js";
import { DecisionVerifier, ROTATED_AWAY_WHY } from "./trust.js";

/**
 * What the views a human reads to know what is approved (`grants`, the console's grants and
 * request pages) say of a decision row that no gateway honours: one written into the store by
 * hand (SQL, a copied row), whose signature does not verify against the approver key pinned in the
 * audit chain. A gateway refuses it (`decision_rejected`); shown as it claims to be, it read as a
 * real approval, "passphrase verified" included. Checked with the public keys alone, as the
 * gateway checks it: no passphrase.
 */
export class ShownDecisions {
  private readonly verifier: DecisionVerifier;

  constructor(
    private readonly db: Store,
    stateDir: string,
  ) {
    this.verifier = new DecisionVerifier(db, stateDir);
  }

  /** Why no gateway honours this grant, or null when it verifies. */
  grant(g: GrantRecord): string | null {
    // (a scope column that cannot be read is said as such: DecisionVerifier.verifyGrant)
    const v = this.verifier.verifyGrant(g);
    return v.ok ? null : v.why;
  }

  /**
   * Why no gateway honours this request's decision (approved: its grant; denied: the denial),
   * or null when it verifies or the request holds no decision (pending, expired, cancelled).
   */
  decision(req: ApprovalRequest): string | null {
    if (req.state === "approved") {
      const g = req.grant ? getGrant(this.db, req.grant) : null;
      return g ? this.grant(g) : "the approval names no grant";
    }
    if (req.state === "denied") {
      const v = this.verifier.verifyDenial(req);
      return v.ok ? null : v.why;
    }
    return null;
  }
}

/** The sentence every view puts on a decision no gateway honours (`why`: ShownDecisions's). */
export function notHonoured(why: string): string {
  // a decision a key rotation took away was made by approve or deny: said as such, not as a forgery
  if (why.startsWith(ROTATED_AWAY_WHY)) return `NOT HONOURED by any gateway: ${why}`;
  return `NOT HONOURED by any gateway: ${why} (a row written into the store by other means than approve or deny)`;
}
