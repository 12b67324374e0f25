import { BRIEF_WAIT_MS, isBusy, type Store, waitingOnce } from "../store/db.js";
import { type CallLeft, recordCallWait } from "./requests.js";

/** How long a mark the store's lock kept out waits before it is tried again. */
const RETRY_MS = 1_000;

/**
 * The calls of one gateway waiting on each of its pending approval requests, and what the rows
 * say of them (callWaitMigration): the human listing the requests (`portcullis approvals`, the
 * console) is told whether a call waits on each right now, or how and when the last one stopped
 * waiting. Only a change that matters is written: the first call to wait on a request (a request
 * is stored saying its maker waits, so only a retry that joins it writes), and the last to stop
 * while the request stays pending. Best effort, never failing a call: each write waits for
 * another process's lock 100 ms at most (less while that lock is already known held:
 * waitingOnce), and what the lock kept out is tried again every second, the newest mark of each
 * request only.
 */
export class CallWaits {
  private readonly calls = new Map<string, number>();
  private readonly unwritten = new Map<string, { wait: "waiting" | CallLeft; at: string }>();
  private retry: NodeJS.Timeout | null = null;
  private readonly write: <T>(write: () => T) => T;

  constructor(private readonly db: Store) {
    this.write = waitingOnce(db, BRIEF_WAIT_MS);
  }

  /** Whether a call of this gateway waits on request `id` now. */
  has(id: string): boolean {
    return this.calls.has(id);
  }

  /** A call starts waiting on `id`; `recorded`: its row says so already (this call just stored it). */
  started(id: string, recorded: boolean): void {
    const before = this.calls.get(id) ?? 0;
    this.calls.set(id, before + 1);
    if (before === 0 && !recorded) this.mark(id, "waiting");
  }

  /**
   * A call stops waiting on `id`. `left`: how, when the request stays pending; null when it was
   * decided or closed (its row says so: nothing to write), or closes with the run.
   */
  stopped(id: string, left: CallLeft | null): void {
    const after = (this.calls.get(id) ?? 1) - 1;
    if (after > 0) {
      this.calls.set(id, after);
      return;
    }
    this.calls.delete(id);
    if (left) this.mark(id, left);
    else this.unwritten.delete(id);
  }

  private mark(id: string, wait: "waiting" | CallLeft): void {
    this.unwritten.set(id, { wait, at: new Date().toISOString() });
    this.flush();
  }

  private flush(): void {
    for (const [id, m] of this.unwritten) {
      try {
        this.write(() => recordCallWait(this.db, id, m.wait, m.at));
      } catch (e) {
        if (!isBusy(e)) {
          // the store is closed (the gateway is ending) or cannot be written: the request's row
          // keeps what it said, and a request closes with its run anyway
          this.unwritten.clear();
          return;
        }
        this.later();
        return;
      }
      this.unwritten.delete(id);
    }
  }

  private later(): void {
    if (this.retry) return;
    this.retry = setTimeout(() => {
      this.retry = null;
      this.flush();
    }, RETRY_MS);
    this.retry.unref();
  }
}
