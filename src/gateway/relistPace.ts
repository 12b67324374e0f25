/**
 * How often one generation's re-lists may record new catalog revisions. Every revision is a stored
 * copy of the whole tool list and a catalog_revised audit record carrying its inventory and diff,
 * and the audit is append-only: a server whose list differs on every tools/list and that floods
 * list_changed would otherwise fill the disk as fast as it can answer. Coalescing bounds how many
 * re-lists run at once, not how many run per second; this bounds the rate, then the total.
 *
 * - Backoff: the first FREE_CHANGES re-lists in a row that each find a new revision run at once
 *   (a rebuild or a reconfiguration changes the list once or twice); after them, a re-list waits
 *   FIRST_DELAY_MS since the previous one, doubling with each further change, up to MAX_DELAY_MS.
 *   A re-list that finds the revision already served (the list is stable) ends the streak.
 * - Budget: once re-lists of one generation have recorded BUDGET revisions within WINDOW_MS, its
 *   list_changed no longer makes the gateway re-list: the last verified revision keeps being
 *   served, and calls are judged against it. A new generation (restart, respawn, replacement:
 *   a new execution epoch) starts afresh.
 *
 * The first fetch of a generation is not a re-list and is never delayed or counted: a new epoch's
 * calls wait for it. Pure bookkeeping over an injected clock; CatalogSync does the waiting.
 */
export const PACE = {
  FREE_CHANGES: 3,
  FIRST_DELAY_MS: 250,
  MAX_DELAY_MS: 60_000,
  BUDGET: 30,
  WINDOW_MS: 60 * 60_000,
} as const;

export class RelistPace<G> {
  private gen: G | null = null;
  /** re-lists in a row that each recorded a new revision */
  private streak = 0;
  /** when the last re-list of `gen` ended */
  private lastAt = 0;
  /** when each re-list of `gen` within WINDOW_MS recorded a new revision */
  private recorded: number[] = [];
  private stopped = false;

  constructor(private readonly now: () => number = Date.now) {}

  /** How long a re-list of `gen` must still wait; 0 when it may run now. */
  delayBefore(gen: G): number {
    this.follow(gen);
    const paced = this.streak - PACE.FREE_CHANGES;
    if (paced < 0) return 0;
    const interval = Math.min(PACE.FIRST_DELAY_MS * 2 ** paced, PACE.MAX_DELAY_MS);
    return Math.max(0, this.lastAt + interval - this.now());
  }

  /**
   * A re-list of `gen` ended; `changed`: it recorded a new revision. Returns what changed in the
   * pacing, for the log: "paced" when re-lists start to wait, "stopped" when the budget is spent.
   */
  relisted(gen: G, changed: boolean): "paced" | "stopped" | null {
    this.follow(gen);
    const now = this.now();
    this.lastAt = now;
    if (!changed) {
      this.streak = 0;
      return null;
    }
    this.streak++;
    this.recorded = this.recorded.filter((at) => now - at < PACE.WINDOW_MS);
    this.recorded.push(now);
    if (this.recorded.length >= PACE.BUDGET) {
      this.stopped = true;
      return "stopped";
    }
    return this.streak === PACE.FREE_CHANGES ? "paced" : null;
  }

  /** `gen` spent its budget: its list_changed no longer makes the gateway re-list. */
  stoppedFor(gen: G): boolean {
    return this.gen === gen && this.stopped;
  }

  /** Revisions recorded by `gen`'s re-lists within the window. */
  spent(gen: G): number {
    return this.gen === gen ? this.recorded.length : 0;
  }

  private follow(gen: G): void {
    if (this.gen === gen) return;
    this.gen = gen;
    this.streak = 0;
    this.lastAt = 0;
    this.recorded = [];
    this.stopped = false;
  }
}
