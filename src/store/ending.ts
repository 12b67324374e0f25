import { lockIsFree, type Store } from "./db.js";

/**
 * A gateway's end while another process may hold the store's write lock (a second gateway on the
 * same state directory, `portcullis audit export`, a backup, a program stuck inside a
 * transaction). better-sqlite3 is synchronous: a statement that meets the lock holds the event
 * loop for the whole busy timeout, timers included. A shutdown is several writes (the status row,
 * the server's exit, the calls it left unanswered, the agent run's end), and it waited one busy
 * timeout per write, the server's SIGTERM (a timer) only after the first of them.
 *
 * From `beginStoreEnding` on, nothing waits for the lock (busy_timeout 0): a write that meets it
 * fails at once, and its writer keeps what it could not write (the audit sink in `holdOnBusy`
 * mode, the status row always). Once the server is ended, `lastAttempt` waits for the lock once,
 * at most the busy timeout: when it comes, the last writes go as any write goes; when it does not,
 * they fail at once too, and what they would have recorded is left as a crash (SIGKILL) leaves it,
 * for the next gateway's start to close (its open calls, `closeOrphanIntents`, and its agent run,
 * `endRunsOfGoneGateways`, both `gateway_gone`). Nothing is lost that a crash would not lose.
 */
export interface StoreEnding {
  /**
   * One bounded wait (the busy timeout at most) for the write lock, taken and given back at once,
   * asked again after growing pauses (asynchronous: signals and timers run meanwhile, and `cut`
   * ends it early). True when it came: later writes wait as usual (another process taking the lock
   * again in between costs them a busy timeout each, as before). False when another process still
   * holds it: later writes fail at once.
   */
  lastAttempt(): Promise<boolean>;
  /** Gives up the last attempt now (a second signal: the user will not wait for the store). */
  cut(): void;
  /** From now on no write waits at all (busy_timeout 0), whatever `beginStoreEnding` was given. */
  stopWaiting(): void;
}

/**
 * How long a write waits for another process's lock while a gateway answers its client's last
 * calls (the client closed its input, the shutdown not begun): another gateway's commit takes
 * microseconds to milliseconds and is waited out as before, a lock held past this is not (a write
 * then fails at once and its writer keeps what it could not write, as in the shutdown).
 */
export const DRAIN_BUSY_MS = 250;

/**
 * The store's ending begins: writes wait at most `waitMs` for the lock (0: not at all, the
 * shutdown's rule; DRAIN_BUSY_MS while the client's last answers come in).
 */
export function beginStoreEnding(db: Store, waitMs = 0): StoreEnding {
  const timeout = Number(db.pragma("busy_timeout", { simple: true }));
  db.pragma(`busy_timeout = ${Math.min(waitMs, timeout)}`);
  let cut = false;
  let wake: (() => void) | null = null;
  /** the lock taken and given back, without waiting (busy_timeout is 0 by then); false while another process holds it */
  const free = (): boolean => lockIsFree(db);
  return {
    async lastAttempt() {
      if (!db.open) return false;
      const deadline = Date.now() + timeout;
      for (let attempt = 0; !free(); attempt++) {
        if (cut || Date.now() >= deadline) return false;
        const pause = Math.min(25 * 2 ** attempt, 250, Math.max(1, deadline - Date.now()));
        await new Promise<void>((resolve) => {
          wake = resolve;
          setTimeout(resolve, pause);
        });
        wake = null;
      }
      if (db.open) db.pragma(`busy_timeout = ${timeout}`);
      return true;
    },
    cut() {
      cut = true;
      wake?.();
    },
    stopWaiting() {
      if (db.open) db.pragma("busy_timeout = 0");
    },
  };
}
