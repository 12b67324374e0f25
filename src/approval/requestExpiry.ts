import type { Store } from "../store/db.js";
import type { Logger } from "../util/log.js";
import { type ApprovalRequest, closeRequest, expiredEvent, nextExpiry, overdueRequests } from "./requests.js";

/**
 * The expiry of one run's pending approval requests at one server label, kept by its gateway:
 * one timer for the earliest, which closes the overdue ones and arms the next. A request is closed
 * only while still pending (closeRequest), so one a decision or a lister (src/approval/abandoned.ts)
 * closed first is not recorded again.
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
      /** best effort: records `approval_expired` */
      emit: (e: { type: string; [k: string]: unknown }) => void;
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
    for (const req of due) {
      const minutes = Math.round((Date.parse(req.expiresAt) - Date.parse(req.createdAt)) / 60_000);
      const reason = `nobody decided within ${minutes} min`;
      let closed: boolean;
      try {
        closed = closeRequest(this.o.db, req.request, "expired", reason);
      } catch (e) {
        this.o.log.info(
          `approval request ${req.request} is overdue but could not be closed yet: ${(e as Error).message}`,
        );
        return false;
      }
      if (!closed) continue;
      this.o.log.info(`approval request ${req.request} expired: nobody decided`);
      this.o.emit(expiredEvent(req, reason, "the gateway of its run"));
    }
    return true;
  }
}

/** How long the expiry waits after a sweep that could not write before it tries again. */
const RETRY_AFTER_FAILURE_MS = 5_000;
