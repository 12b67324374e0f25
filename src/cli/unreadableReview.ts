/**
 * A pending request whose stored review cannot be read. Any process of the user can rewrite a
 * review in the store (`{}`, `null`, text that is no JSON, a tool name that is no string), and
 * the review is what the human decides on: such a request is listed as unreadable, with one line
 * saying so, never decided (`approve`/`deny` refuse it, and decidableRequest refuses any decision
 * of a request that no longer matches its review, but a denial of the review the human was shown),
 * and it expires. Without this, one such row
 * made `portcullis approvals` stop with an internal error, hiding every other request. The
 * console says it the same way (src/console/card.ts, reviewCardOrNotice).
 */
import { publicRequest, renderReview, renderReviewCard } from "../approval/render.js";
import { type ApprovalRequest, DecisionError, type PendingRequest } from "../approval/requests.js";
import { safeText } from "../catalog/text.js";

/** Longest a drawing error's message is repeated. */
const WHY_CHARS = 200;

/**
 * Why `req`'s stored review cannot be drawn (the message of what drawing it threw), or null when
 * each of its drawings works: the JSON, the card and the full review (the ones the commands print).
 */
export function unreadableReview(req: ApprovalRequest | PendingRequest): string | null {
  // another column of its row cannot be read (requests.ts toRequest): as unreadable as its review
  if (req.unreadable !== undefined) return req.unreadable;
  try {
    publicRequest(req);
    renderReviewCard(req);
    renderReview(req, { wholeArguments: true });
    return null;
  } catch (e) {
    return whyNotDrawn(e);
  }
}

function whyNotDrawn(e: unknown): string {
  const message = e instanceof Error ? e.message : String(e);
  return message.length > WHY_CHARS ? `${message.slice(0, WHY_CHARS)}…` : message;
}

/**
 * `draw()` (the card or the full review a list shows of `req`), or, when that throws, the line
 * saying its stored review cannot be read (`readable` false): one drawing per request, as the
 * lists made before (a `--watch` draws its list at every poll).
 */
export function drawnOrUnreadable(
  req: ApprovalRequest,
  draw: () => string,
): { text: string; readable: boolean } {
  if (req.unreadable !== undefined) return { text: unreadableLine(req, req.unreadable), readable: false };
  try {
    return { text: draw(), readable: true };
  } catch (e) {
    return { text: unreadableLine(req, whyNotDrawn(e)), readable: false };
  }
}

/** Which part of the request cannot be read: its review, or another column of its row. */
function unreadablePart(req: ApprovalRequest): string {
  return req.unreadable === undefined ? "its stored review" : "its row in the store";
}

/** What the lists say of such a request, in words (one sentence, without the request id). */
function unreadableText(req: ApprovalRequest, why: string): string {
  return `${unreadablePart(req)} cannot be read (${why}): something rewrote it in the store, so nobody can approve or deny it, and it expires at ${req.expiresAt}`;
}

/** The line `approvals` (and `--watch`) prints for such a request, made terminal-safe. */
function unreadableLine(req: ApprovalRequest, why: string): string {
  return safeText(`approval request ${req.request}: ${unreadableText(req, why)}`);
}

/** A request as `approvals --json` gives it: publicRequest, or, unreadable, its id and why. */
export function requestJson(req: PendingRequest): unknown {
  let why: string;
  try {
    if (req.unreadable !== undefined) throw new Error(req.unreadable);
    return publicRequest(req);
  } catch (e) {
    why = whyNotDrawn(e);
  }
  return {
    request: req.request,
    state: req.state,
    createdAt: req.createdAt,
    expiresAt: req.expiresAt,
    waiting: req.waiting,
    review: null,
    unreadable: unreadableText(req, why),
  };
}

/** Refuses to decide `req` when its review cannot be read (exit 1, as other refused decisions). */
export function refuseUnreadable(req: ApprovalRequest): void {
  const why = unreadableReview(req);
  if (why === null) return;
  throw new DecisionError(
    `approval request ${req.request} cannot be decided: ${unreadablePart(req)} cannot be read (${why}), since something rewrote it in the store; nothing was decided, and it expires at ${req.expiresAt}`,
    "not-pending",
  );
}
