import { argumentsDigest } from "../audit/events.js";
import { quotedName } from "../catalog/text.js";
import type { ApprovedCall } from "../guard/guard.js";
import { refuse } from "../guard/refusals.js";
import type { ErrorObject } from "../relay/jsonrpc.js";
import { callWaitsFor, isBusy, type Store, whenUnlocked } from "../store/db.js";
import type { Logger } from "../util/log.js";
import { endGrants, getGrant } from "./grants.js";
import type { HonouredDecisions } from "./honoured.js";
import { approvalsOfOlderEpochs } from "./requests.js";

/** How many one-call grants handed out and not yet used are remembered (a bound, not a policy). */
const MAX_HANDED = 256;

interface Handed {
  epoch: string;
  tool: string;
  digest: string;
}

/**
 * The approval of this very call that names an older execution epoch than the call's: the
 * human approved it, but the server was replaced meanwhile. Step 2 (Authorizer.stale) tells a
 * run of its session grants of an older epoch; a one-call approval is no session grant, so
 * without this the call would ask a human again, and the agent be told "nobody has approved",
 * never that the server changed. An approval covers the epoch it named and nothing later: the
 * call is refused `authorization_stale`, once, and the approval ends.
 *
 * Two ways it happens, one per place the approval is found:
 * - the call was waiting when the human approved: the wait handed it the one-call grant of its
 *   own (older) epoch, and the guard, seeing the epoch moved, decided the call again. That grant
 *   was consumed by the taking; it is remembered here until the call's intent is recorded.
 * - the request outlived the call: the human approved after the call's hold ended, and the
 *   agent's retry of the same call arrives under the new epoch. The request's row is found in the
 *   store (same run, server, tool, mode and arguments, another epoch, approved, its one-call
 *   grant still live).
 *
 * A session approval needs neither: it is a live session grant of the run, which step 2 finds
 * (in both timings the guard runs step 2 on the call again under the new epoch) and ends.
 */
export class OlderEpochApprovals {
  /** one-call grants handed to a call whose intent was not recorded yet: grant → what it approved */
  private readonly handed = new Map<string, Handed>();

  constructor(
    private readonly o: {
      db: Store;
      /** the agent run's id */
      run: string;
      serverLabel: string;
      decisions: HonouredDecisions;
      /** says once why a call waits for a store another process keeps locked */
      log: Pick<Logger, "warn">;
    },
  ) {}

  /** A one-call grant was handed to `call` (of its epoch); it is used once its intent is recorded. */
  handedOut(grant: string, call: ApprovedCall): void {
    if (this.handed.size >= MAX_HANDED) this.handed.delete(this.handed.keys().next().value!);
    this.handed.set(grant, { epoch: call.epoch, tool: call.tool, digest: argumentsDigest(call.effective) });
  }

  /** `call` reached its intent record: whatever was handed to it, or to the same call before, is settled. */
  recorded(call: ApprovedCall): void {
    if (this.handed.size === 0) return;
    if (call.grant) this.handed.delete(call.grant);
    if (this.handed.size === 0) return;
    const digest = argumentsDigest(call.effective);
    for (const [grant, h] of this.handed) {
      if (h.tool === call.tool && h.digest === digest) this.handed.delete(grant);
    }
  }

  /**
   * `authorization_stale` when an approval of this call (mode `mode`) names an older epoch than
   * the call's, and that approval ends; null when there is none.
   */
  async refusal(
    call: ApprovedCall,
    mode: "session" | "per-call",
    ends?: AbortSignal,
  ): Promise<ErrorObject | null> {
    const digest = argumentsDigest(call.effective);
    const approvedEpoch = this.takeHanded(call, digest) ?? (await this.takeStored(call, mode, digest, ends));
    if (approvedEpoch === null) return null;
    return refuse.authorizationStale({ approvedEpoch, currentEpoch: call.epoch, changedTools: [call.tool] });
  }

  /** The epoch of a one-call grant handed to this call under an older epoch (forgotten once told). */
  private takeHanded(call: ApprovedCall, digest: string): string | null {
    for (const [grant, h] of this.handed) {
      if (h.epoch === call.epoch || h.tool !== call.tool || h.digest !== digest) continue;
      this.handed.delete(grant);
      return h.epoch;
    }
    return null;
  }

  /**
   * The epoch of an approval decided for this call's request under an older epoch whose grant is
   * still live, verified and of a review this gateway wrote; that grant ends, so it is told once.
   * The end waits out a store another process keeps locked (bounded), rather than fail the call,
   * but not past the connection's end (`ends` aborted): the call is not sent then, and the
   * approval, left live, ends with the run (null: nothing told).
   */
  private async takeStored(
    call: ApprovedCall,
    mode: "session" | "per-call",
    digest: string,
    ends: AbortSignal | undefined,
  ): Promise<string | null> {
    const { db, run, serverLabel, decisions } = this.o;
    const found = approvalsOfOlderEpochs(db, {
      agentRun: run,
      serverLabel,
      executionEpoch: call.epoch,
      tool: call.tool,
      mode,
      argumentsDigest: digest,
    });
    for (const req of found) {
      const g = req.grant ? getGrant(db, req.grant) : null;
      // A session grant of an older epoch is step 2's to report (with every tool the run's older
      // grants named) and to end; only a one-call grant is left for this call to be told of.
      if (g?.mode !== "per-call") continue;
      if (g.revokedAt || g.endedAt || decisions.hasEnded(g.grant)) continue;
      if (!decisions.approvesAtOlderEpoch(g, req, call, digest)) continue;
      // The first to end it tells it: a concurrent retry of the same call asks a human instead.
      let ended: number;
      try {
        ended = await whenUnlocked(
          () => endGrants(db, [g.grant], `superseded: execution epoch changed to ${call.epoch}`),
          { ...callWaitsFor(db, this.o.log, `the stale approval of ${quotedName(call.tool)}`), signal: ends },
        );
      } catch (e) {
        if (ends?.aborted && isBusy(e)) return null;
        throw e;
      }
      if (ended !== 1) continue;
      decisions.markEnded(g.grant);
      return g.executionEpoch;
    }
    return null;
  }
}
