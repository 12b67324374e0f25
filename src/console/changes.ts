/**
 * What /events watches: one signature of the store's requests (with whether a call waits on each
 * pending one), grants, gateways and catalog revisions, checked every 500 ms by one timer for all
 * open streams. When it changes, every stream is told `change` and the page fetches itself again
 * (src/console/assets.ts).
 *
 * The signature reads every pending row and every gateway row, and any process of the user can
 * write thousands of them into the store: read twice a second, they kept a CPU busy for as long
 * as a page was open, with nothing happening. So each tick first reads a stamp that reads no row
 * (as `approvals --watch` does, src/cli/pendingStamp.ts): PRAGMA data_version, which moves when
 * another connection commits anything, and total_changes(), which counts this connection's own
 * writes (a decision made here). Only when the stamp has moved is the signature read again; the
 * signature still decides whether streams are told, so a commit that changes nothing they show
 * tells none.
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
  /** the stamp the last signature was read at: while it stands, no row has changed */
  private lastStamp: string | null = null;
  private readonly read: () => string;
  private readonly stamp: () => string;

  constructor(
    db: Store,
    private readonly everyMs = 500,
  ) {
    const stmt = db.prepare(SIGNATURE).pluck();
    this.read = () => createHash("sha256").update(String(stmt.get())).digest("base64url").slice(0, 22);
    const own = db.prepare("SELECT total_changes()").pluck();
    this.stamp = () => `${db.pragma("data_version", { simple: true })}:${own.get()}`;
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
      // the stamp before the signature: a commit between the two moves it, and is read next tick
      const stamp = this.safeStamp();
      this.last = this.safeRead();
      // a signature that could not be read is read again at the next tick, whatever the stamp
      this.lastStamp = this.last === null ? null : stamp;
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

  private safeStamp(): string | null {
    try {
      return this.stamp();
    } catch {
      return null;
    }
  }

  private tick(): void {
    const stamp = this.safeStamp();
    if (stamp !== null && stamp === this.lastStamp) return; // nothing committed since
    const now = this.safeRead();
    if (now === null) return; // the stamp kept: read again next tick
    this.lastStamp = stamp;
    if (now === this.last) return;
    this.last = now;
    for (const fn of [...this.listeners]) fn();
  }
}
