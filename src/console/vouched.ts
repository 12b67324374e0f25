/**
 * Requests whose gateway does not vouch for their row (src/approval/vouch.ts): any process of the
 * user can write a copy of a real gateway's request into the store, and on the Requests page it
 * looked like the real one. Such a card says so in the words `portcullis approvals` prints
 * (NOT_VOUCHED_NOTE), and approving it takes one more step: a box the human ticks to say a
 * gateway printed this ID for them, which the console checks before any passphrase is asked (a
 * form without it is refused, however it was sent). Denying stays one click: a denial only takes
 * authority away (deny first).
 */
import { type ApprovalRequest, listedPending, type PendingRequest } from "../approval/requests.js";
import { gatewayVouches, NOT_VOUCHED_NOTE } from "../approval/vouch.js";
import type { Store } from "../store/db.js";
import { type Html, html } from "./html.js";

/** The approval form's field that says the human ticked the box, and its value. */
export const UNVOUCHED_FIELD = "unvouched";
export const UNVOUCHED_CONFIRMED = "confirmed";

/**
 * Whether the gateway of a pending request vouches for it: false for a row it holds no mark of,
 * null when nobody waits for it (its gateway gone: nothing would use a decision) or no gateway can
 * tell (not Linux). As `approvals --json` says it.
 */
export function vouchedState(
  db: Store,
  r: Pick<PendingRequest, "request" | "agentRun" | "review" | "waiting">,
  cache?: Map<string, Set<string> | null>,
): boolean | null {
  return r.waiting ? gatewayVouches(db, r, cache) : null;
}

/** The rows of a page of cards, each with whether its gateway vouches for it (one read of each gateway's sockets). */
export function withVouched<T extends PendingRequest>(
  db: Store,
  rows: T[],
): (T & { vouched: boolean | null })[] {
  const cache = new Map<string, Set<string> | null>();
  return rows.map((r) => ({ ...r, vouched: vouchedState(db, r, cache) }));
}

/**
 * Why an approval of `req` is refused before a passphrase is asked: its gateway waits on it but does
 * not vouch for its row, and the form does not carry the ticked box. Null when it may go on.
 */
export function unvouchedRefusal(db: Store, req: ApprovalRequest, confirmed: unknown): string | null {
  if (confirmed === UNVOUCHED_CONFIRMED) return null;
  const listed = listedPending(db, req.request);
  if (!listed || vouchedState(db, listed) !== false) return null;
  return `the gateway of ${req.request} does not vouch for it (it holds no mark of this request with this review): the row may have been written by another process. Approve it only if a gateway printed this ID for you, ticking the box that says so on its card; nothing was approved`;
}

/** The mark on the card of a request its gateway does not vouch for. */
export function notVouchedMark(vouched: boolean | null | undefined): Html | "" {
  return vouched === false ? html`<p class="error" data-testid="not-vouched">${NOT_VOUCHED_NOTE}</p>` : "";
}

/** The box an approval of such a request needs ticked (the browser will not send the form without it). */
export function confirmUnvouched(vouched: boolean | null | undefined, form?: string): Html | "" {
  return vouched === false
    ? html`<label class="confirm-unvouched"><input type="checkbox" ${form ? html`form="${form}" ` : ""}name="${UNVOUCHED_FIELD}" value="${UNVOUCHED_CONFIRMED}" required data-testid="confirm-unvouched"> a gateway printed this request's ID for me</label>`
    : "";
}
