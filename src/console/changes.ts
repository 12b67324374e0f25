/**
 * What /events watches: one cheap signature of the store's requests (with whether a call waits on
 * each pending one), grants, gateways and catalog revisions, read every 500 ms by one timer for all open streams. When it changes, every
 * stream is told `change` and the page fetches itself again (src/console/assets.ts).
 */
import { createHash } from "node:crypto";
import type { Store } from "../store/db.js";

const SIGNATURE = `SELECT
  (SELECT count(*) || ':' || coalesce(max(coalesce(decided_at, created_at)), '') FROM approval_requests) || '|' ||
  (SELECT coalesce(group_concat(coalesce(call_wait, '') || coalesce(call_wait_at, ''), ','), '')
     FROM approval_requests WHERE state = 'pending') || '|' ||
  (SELECT count(*) || ':' || coalesce(max(issued_at), '') || ':' ||
     coalesce(sum(revoked_at IS NOT NULL), 0) || ':' || coalesce(sum(ended_at IS NOT NULL), 0) FROM grants) || '|' ||
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
    this.read = () => createHash("sha256").update(String(stmt.get())).digest("base64url").slice(0, 22);
  }

  /**
   * The store's state now, as a short tag. A page carries the tag it was rendered at, and its
   * stream is told at once when the tag has moved on since (a change between the page being
   * rendered and its stream connecting would otherwise never be told).
   */
  current(): string {
    return this.safeRead() ?? "";
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
