/**
 * What /events watches: one cheap signature of the store's requests, grants, gateways and
 * catalog revisions, read every 500 ms by one timer for all open streams. When it changes, every
 * stream is told `change` and the page fetches itself again (src/console/assets.ts).
 */
import type { Store } from "../store/db.js";

const SIGNATURE = `SELECT
  (SELECT count(*) || ':' || coalesce(max(coalesce(decided_at, created_at)), '') FROM approval_requests) || '|' ||
  (SELECT count(*) || ':' || coalesce(max(issued_at), '') || ':' ||
     sum(revoked_at IS NOT NULL) || ':' || sum(ended_at IS NOT NULL) FROM grants) || '|' ||
  (SELECT count(*) FROM catalog_revisions) || '|' ||
  (SELECT coalesce(group_concat(gateway_id || state || coalesce(epoch, '') || coalesce(ended_at, '') ||
     length(status_json), ','), '') FROM gateways)`;

export class ChangeWatch {
  private readonly listeners = new Set<() => void>();
  private timer: NodeJS.Timeout | null = null;
  private last: string | null = null;
  private readonly read: () => string;

  constructor(
    db: Store,
    private readonly everyMs = 500,
  ) {
    const stmt = db.prepare(SIGNATURE).pluck();
    this.read = () => String(stmt.get());
  }

  subscribe(fn: () => void): () => void {
    this.listeners.add(fn);
    if (!this.timer) {
      this.last = this.safeRead();
      this.timer = setInterval(() => this.tick(), this.everyMs);
    }
    return () => {
      this.listeners.delete(fn);
      if (this.listeners.size === 0 && this.timer) {
        clearInterval(this.timer);
        this.timer = null;
      }
    };
  }

  close(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.listeners.clear();
  }

  private safeRead(): string | null {
    try {
      return this.read();
    } catch {
      return null; // busy or damaged: try again next tick
    }
  }

  private tick(): void {
    const now = this.safeRead();
    if (now === null || now === this.last) return;
    this.last = now;
    for (const fn of [...this.listeners]) fn();
  }
}
