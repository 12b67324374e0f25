import { briefly, lockIsFree, type Store } from "../store/db.js";
import type { Logger } from "../util/log.js";
import {
  type ApprovalRequest,
  closeRequest,
  expiredEvent,
  getRequest,
  nextExpiry,
  overdueRequests,
} from "./requests.js";

/**
 * The expiry of one run's pending approval requests at one server label, kept by its gateway:
 * one timer for the earliest, which closes the overdue ones and arms the next. A request is closed
 * only while still pending (closeRequest), so one a decision or a lister (src/approval/abandoned.ts)
 * closed first is not recorded again; and only as its `approval_expired` record is written (the
 * close is the record's condition, in the audit's transaction), so it is never closed unrecorded.
 */
export class RequestExpiry {
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly o: {
      db: Store;
      /** the agent run's id */
      run: string;
      serverLabel: string;
      log: Pick<Logger, "info">;
      /** the gateway's audit sink: `approval_expired`, written with the close as its condition */
      events: {
        emit(e: { type: string; [k: string]: unknown }, condition?: () => boolean): void;
        flush(): void;
      };
    },
  ) {}

  /**
   * Arms one timer for the next pending request of this run to expire (none when none is pending),
   * not sooner than `notBeforeMs` from now (a sweep that could not write waits before the next).
   */
  schedule(notBeforeMs = 0): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    let at: number | null;
    try {
      at = nextExpiry(this.o.db, this.o.run, this.o.serverLabel);
    } catch {
      return; // the store is closed: the gateway is ending
    }
    if (at === null) return;
    this.timer = setTimeout(
      () => {
        this.timer = null;
        this.schedule(this.sweep() ? 0 : RETRY_AFTER_FAILURE_MS);
      },
      Math.max(notBeforeMs, Math.max(0, at - Date.now()) + 20),
    );
    this.timer.unref();
  }

  /**
   * Closes this run's pending requests whose time is up, each recorded once (`approval_expired`).
   * False when one could not be closed (another process holds the store's lock past the busy
   * timeout): it stays pending, for the next sweep. Never throws: it runs from a timer, where an
   * exception would end the gateway.
   */
  sweep(): boolean {
    let due: ApprovalRequest[];
    try {
      due = overdueRequests(this.o.db, this.o.run, this.o.serverLabel);
    } catch {
      return true; // the store is closed: the gateway is ending
    }
    if (due.length === 0) return true;
    // A lock held by another program (a transaction left open) would hold the event loop a whole
    // busy timeout at the flush below, at every sweep: asked first, briefly; the next sweep
    // (RETRY_AFTER_FAILURE_MS) tries again. Another gateway's commit is waited out.
    if (!briefly(this.o.db)(() => lockIsFree(this.o.db))) {
      this.o.log.info(`${due.length} overdue approval request(s) wait for the store's lock to be closed`);
      return false;
    }
    // Each close is its record's condition, run under the audit's write lock in the transaction
    // that writes the record, and written now: a close committed first and its record left for
    // the sink's next group was lost for good when that group could not be written (another
    // process holding the lock past the busy timeout) or the gateway was killed meanwhile, as
    // no one closes an expired request again.
    const closedHere = new Set<string>();
    for (const req of due) {
      const minutes = Math.round((Date.parse(req.expiresAt) - Date.parse(req.createdAt)) / 60_000);
      const reason = `nobody decided within ${minutes} min`;
      this.o.events.emit(expiredEvent(req, reason, "the gateway of its run"), () => {
        const closed = closeRequest(this.o.db, req.request, "expired", reason);
        if (closed) closedHere.add(req.request);
        return closed;
      });
    }
    this.o.events.flush();
    let left = false;
    for (const req of due) {
      let now: ApprovalRequest | null;
      try {
        now = getRequest(this.o.db, req.request);
      } catch {
        return true; // the store is closed: the gateway is ending
      }
      if (now?.state === "expired" && closedHere.has(req.request))
        this.o.log.info(`approval request ${req.request} expired: nobody decided`);
      else if (now?.state === "pending") {
        // not written (the sink said why): still pending, for the next sweep
        this.o.log.info(`approval request ${req.request} is overdue but could not be closed yet`);
        left = true;
      }
    }
    return !left;
  }
}

/** How long the expiry waits after a sweep that could not write before it tries again. */
const RETRY_AFTER_FAILURE_MS = 5_000;
