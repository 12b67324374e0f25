/**
 * What `approvals --watch` reads of the pending requests at each change of the store's stamp
 * (pendingStamp.ts), and what it keeps of them between reads (approvalsLive.ts). Any process of
 * the user can write thousands of pending rows: reading every one whole at each change (its review
 * parsed, its gateway judged once per row) made a real request's line come seconds late, at every
 * change. A read now reads a few short columns of each pending row (its id, its run's gateway
 * columns, its expiry and its call-wait columns: no review, no JSON), judges each distinct gateway
 * once, and reads whole only the rows the watch has not told yet and the ones that closed.
 *
 * Not a high-water mark of rowids (reading only the rows past the last one read): a row's rowid is
 * its writer's to choose. An INSERT may name one, an UPDATE may move one, and once a row holds the
 * largest rowid SQLite gives new rows random ones: another process of the user could put a
 * gateway's request beneath the mark, where the watch would never see it. Nor does any column mark
 * a row changed (a decision writes its state, a rewrite whatever it likes). Deny first: the set of
 * pending IDs, and what each says of its calls, is compared whole at each change, by those short
 * columns (docs/security.md, "approvals --watch reads whole only what it has not told").
 */
import { createHash } from "node:crypto";
import { callWait, type PendingRequest } from "../approval/requests.js";
import { type GatewayColumns, runGatewayLiveness } from "../approval/runs.js";
import type { Store } from "../store/db.js";
import { quotedCommand } from "../store/stateDir.js";
import { UsageError } from "./errors.js";

/** What a read of the watch knows of a pending row without reading it whole. */
export type PendingKey = Pick<
  PendingRequest,
  "request" | "waiting" | "callWaiting" | "callWaitingSince" | "callLeft"
>;

interface KeyRow extends Partial<GatewayColumns> {
  request: string;
  expires_at: string;
  call_wait: string | null;
  call_wait_at: string | null;
  /** null when the row names no run the store holds */
  run: string | null;
  ended_at: string | null;
}

/**
 * Each pending row's key, oldest first (the order pendingRequests lists them in), given to `visit`
 * as it is read: nothing of the rows is kept here. `waiting` as pendingRequests says it (its run
 * not ended, its gateway not gone, its time not run out), each distinct gateway judged once.
 * `visit` must not use `db` (the statement is still reading).
 */
export function forEachPendingKey(db: Store, visit: (k: PendingKey) => void, now = Date.now()): void {
  const rows = db
    .prepare(
      `SELECT r.request, r.expires_at, r.call_wait, r.call_wait_at, runs.run, runs.ended_at,
              runs.gateway_pid, runs.gateway_pid_start, runs.gateway_pid_ns, runs.gateway_boot
         FROM approval_requests r LEFT JOIN runs ON runs.run = r.agent_run
        WHERE r.state = 'pending' ORDER BY r.created_at, r.request`,
    )
    .iterate() as IterableIterator<KeyRow>;
  const alive = new Map<string, boolean>();
  for (const r of rows) {
    let waiting = false;
    if (r.run !== null && r.ended_at === null && Date.parse(r.expires_at) > now) {
      const g = r as KeyRow & GatewayColumns;
      const which = JSON.stringify([g.gateway_pid, g.gateway_pid_start, g.gateway_pid_ns, g.gateway_boot]);
      let judged = alive.get(which);
      if (judged === undefined) {
        judged = runGatewayLiveness(g) !== "gone";
        alive.set(which, judged);
      }
      waiting = judged;
    }
    visit({ request: r.request, waiting, ...callWait(r, waiting) });
  }
}

/** What a pending request's listing says of the calls waiting on it, as a key that changes with it. */
export function callWaitKey(
  r: Pick<PendingRequest, "callWaiting" | "callWaitingSince" | "callLeft">,
): string {
  return `${r.callWaiting}:${r.callWaitingSince ?? ""}:${r.callLeft?.how ?? ""}:${r.callLeft?.at ?? ""}`;
}

/**
 * How many pending requests a `--watch --json` follows at most, and how many characters their IDs
 * add up to at most (a gateway's ID has 26): what it keeps of each is its ID and a digest of what
 * it told of its calls, so a few megabytes at most. Past either the watch ends (FollowedRequests).
 */
export const MAX_FOLLOWED = 20_000;
export const MAX_FOLLOWED_ID_CHARS = 1_000_000;

/**
 * The requests a `--watch --json` told pending and has not told closed: for each, a digest of what
 * it last told of its calls (callWaitKey, whose times are the row's to write, any length) and the
 * read that last saw it pending. Never a review: what a flood of rows costs it is bounded by
 * MAX_FOLLOWED and MAX_FOLLOWED_ID_CHARS.
 */
export class FollowedRequests {
  private readonly told = new Map<string, { wait: string; seen: number }>();
  private read = 0;
  private pending = 0;
  private idChars = 0;

  constructor(private readonly stateDir: string) {}

  /** A read begins: every request it does not see pending again is closed (closedSince). */
  begin(): void {
    this.read += 1;
    this.pending = 0;
    this.idChars = 0;
  }

  /**
   * `k` seen pending in this read: "new" when it was not told, "call" when what it says of its
   * calls is not what was told, else null. Throws (the watch ends, exit 2) once the read saw more
   * than the watch follows.
   */
  see(k: PendingKey): "new" | "call" | null {
    this.pending += 1;
    this.idChars += String(k.request).length;
    if (this.pending > MAX_FOLLOWED) throw this.tooMany(`more than ${MAX_FOLLOWED} requests are pending`);
    if (this.idChars > MAX_FOLLOWED_ID_CHARS)
      throw this.tooMany(`the pending requests' IDs add up to more than ${MAX_FOLLOWED_ID_CHARS} characters`);
    const before = this.told.get(k.request);
    if (before === undefined) return "new";
    before.seen = this.read;
    return before.wait === digest(callWaitKey(k)) ? null : "call";
  }

  /** `r` told: pending (read whole), or its calls' change. */
  tell(r: PendingKey): void {
    this.told.set(r.request, { wait: digest(callWaitKey(r)), seen: this.read });
  }

  /** The requests told pending that this read did not see pending, forgotten as they are returned. */
  closedSince(): string[] {
    const closed: string[] = [];
    for (const [id, t] of this.told) {
      if (t.seen === this.read) continue;
      closed.push(id);
      this.told.delete(id);
    }
    return closed;
  }

  private tooMany(why: string): UsageError {
    return new UsageError(
      `approvals --watch --json: ${why}, more than a watch follows (${MAX_FOLLOWED} requests, whose IDs add up to ${MAX_FOLLOWED_ID_CHARS} characters): a gateway's requests never come to that, so another process of this user wrote them into the store, and the watch ends rather than leave some of them untold. ${quotedCommand("approvals --watch", this.stateDir)} (without --json) draws the 20 newest as they change, ${quotedCommand("approvals --json", this.stateDir)} lists every one.`,
    );
  }
}

function digest(text: string): string {
  return createHash("sha256").update(text).digest("base64url").slice(0, 22);
}
