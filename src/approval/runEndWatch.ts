import { safeText } from "../catalog/text.js";
import type { Store } from "../store/db.js";
import type { Logger } from "../util/log.js";
import {
  ENDED_IN_STORE,
  type EndedElsewhere,
  type Run,
  recordEndedInStore,
  runEndedElsewhere,
} from "./runs.js";

/**
 * What a gateway knows of its own agent run's end by another process, while it still serves the
 * run: a gateway that took this one for gone (`gateway_gone`, recorded by it), or an edit of the
 * run's row (`UPDATE runs SET ended_at = …`, with any reason, `gateway_gone` included), which
 * nobody recorded. The gateway cannot read the sealed chain to tell the two apart; it knows what
 * it wrote itself (Run.endRecordedHere). The run's row is read with each call's intent record
 * (Authorizer.condition, under the write lock it holds anyway) and while a call waits for a human;
 * once it is found ended:
 *
 * - unless this gateway wrote its run's end already, it records it here, once (`run_ended`,
 *   reason `ended_in_store`, with `rowReason` when the row's reason is one a recording writer
 *   gives; its condition ends the run's grants and pending requests, marking a row that had no
 *   such reason so: one `run_ended` per run from this gateway), ahead of the call's own record,
 *   so that the run's later calls count as after its end. A real `gateway_gone` record then makes
 *   two ends (docs/audit-format.md);
 * - a call that needs a human is refused at once (refusals.md: `authorization_required`, "agent
 *   run ended"): no decider approves a request of an ended run, and a grant of the run no longer
 *   covers (deny first: an end written by someone else never widens what the run may do);
 * - the gateway says so once on its log.
 */
export class RunEndWatch {
  /** the run's end by another process, as last read (null: open as far as this gateway knows) */
  private ended: EndedElsewhere | null = null;
  private told = false;

  constructor(
    private readonly o: {
      db: Store;
      /** the run this gateway serves (its own end of it is no end elsewhere: Run.endedHere) */
      run: Run;
      serverLabel: string;
      log: Pick<Logger, "warn">;
      emit: (e: { type: string; [k: string]: unknown }, condition?: () => boolean) => void;
    },
  ) {}

  /**
   * Reads the run's row (under the caller's transaction, if any). True when the run was ended by
   * another process and this gateway has not recorded its end yet: the call must not be recorded
   * before its run's end is (the caller decides again, and `settle` records it).
   */
  readUnrecorded(): boolean {
    const now = runEndedElsewhere(this.o.db, this.o.run);
    if (now) this.ended = now;
    return now !== null && !this.o.run.endRecordedHere;
  }

  /** Whether the run was found ended by another process (by readUnrecorded or read). */
  get endedElsewhere(): boolean {
    return this.ended !== null;
  }

  /** Reads the row now (outside the intent's transaction: a call waiting for a human). */
  read(): EndedElsewhere | null {
    this.readUnrecorded();
    return this.settle();
  }

  /**
   * Once the run was found ended by another process: its end recorded if nobody did (with the
   * sink's next group, before whatever the caller records next), and said once.
   */
  settle(): EndedElsewhere | null {
    const ended = this.ended;
    if (ended === null) return null;
    const { db, run, serverLabel } = this.o;
    const unrecorded = !run.endRecordedHere;
    if (unrecorded) {
      // the row's reason may be an edit's as well as a record's: this gateway wrote no end itself
      const rowReason = ended.recorded ? { rowReason: ended.reason } : {};
      this.o.emit(
        { type: "run_ended", run: run.run, serverLabel, reason: ENDED_IN_STORE, ...rowReason },
        () => recordEndedInStore(db, run, new Date().toISOString(), { whateverTheRowSays: true }),
      );
    }
    if (!this.told) {
      this.told = true;
      // the row's values are anyone's writing: shown as text, never as terminal controls
      const at = safeText(ended.endedAt);
      const by = ended.recorded
        ? `by another process (reason ${safeText(ended.reason ?? "none")} in its row, which this gateway cannot tell from an edit that recorded nothing; the row says ended at ${at})`
        : `by another process, which recorded no end (the row says ended at ${at})`;
      this.o.log.warn(
        `this gateway's agent run ${run.run} was ended in the store ${by}, although this gateway still runs: ${unrecorded ? "it records the end (run_ended, reason ended_in_store); " : ""}its session grants ended and no approval can reach it, so a call that needs one is refused; restart the agent host to start a new run`,
      );
    }
    return ended;
  }
}
