/**
 * The Requests page as a whole. Any process of the user can write rows into the store, thousands
 * of pending requests among them: drawn all, they made a page of tens of megabytes whose first
 * screens were theirs, the human's own request somewhere below with its buttons. So the page draws
 * one page of cards (CARDS_SHOWN, newest first: pendingPage), says how many are pending and how
 * many it does not show, links to the next and the previous page, and offers to open a request by
 * its ID: the one a gateway printed opens alone, on its own page, whatever else the store holds.
 */
import type { PendingRequest } from "../approval/requests.js";
import type { reviewCard } from "./card.js";
import { reviewCardOrNotice } from "./card.js";
import { type Html, html } from "./html.js";
import type { PasskeyDecisions } from "./passkeyPages.js";

/** Cards drawn on one page of the Requests page. */
export const CARDS_SHOWN = 10;

/** A page of cards: the requests it draws, where it starts and how many are pending in all. */
export interface RequestsShown {
  total: number;
  offset: number;
  rows: (PendingRequest & Parameters<typeof reviewCard>[0])[];
}

function count(n: number): string {
  return n.toLocaleString("en-US");
}

/** The links to the pages around this one, and what they hold. */
function pager(s: RequestsShown): Html | "" {
  const after = s.total - s.offset - s.rows.length;
  const parts: Html[] = [];
  if (s.offset > 0) {
    const back = Math.max(0, s.offset - CARDS_SHOWN);
    parts.push(
      html`<a href="/?from=${back}" data-testid="requests-previous">the ${count(s.offset - back)} newer</a>`,
    );
  }
  if (after > 0)
    parts.push(
      html`<a href="/?from=${s.offset + s.rows.length}" data-testid="requests-next">the next ${count(Math.min(after, CARDS_SHOWN))}</a>`,
    );
  if (parts.length === 0) return "";
  return html`<p class="pager" data-testid="requests-pager">${count(s.total - s.rows.length)} more pending ${
    s.total - s.rows.length === 1 ? "request is" : "requests are"
  } not shown on this page: ${parts.map((p, i) => html`${i > 0 ? " · " : ""}${p}`)}</p>`;
}

/** The form that opens one request's own page by its ID (GET /requests?id=…). */
function openById(): Html {
  return html`<form method="get" action="/requests" class="open-id" data-testid="open-by-id"><label>Open a request by its ID <input type="text" name="id" maxlength="64" pattern="[0-9A-Za-z_\\-]{1,64}" required aria-label="request ID" data-testid="open-id"></label> <button type="submit">Open</button></form>`;
}

/** Above the cards when not all of them are drawn: how many, in what order, and the way to one. */
function cappedNote(s: RequestsShown): Html | "" {
  if (s.offset === 0 && s.rows.length === s.total) return "";
  const first = s.rows.length === 0 ? 0 : s.offset + 1;
  return html`<div class="requests-capped" data-testid="requests-capped"><p>${count(s.total)} requests are pending; this page shows ${
    s.rows.length === 0 ? "none of them" : html`${count(first)} to ${count(s.offset + s.rows.length)}`
  }, newest first (a request said to be made at a time still to come is listed after all the others). Any process of yours can write requests into the store: the one a gateway printed for you opens alone at its link (<code>/requests/ID</code>), or by its ID here.</p>${openById()}</div>`;
}

export function requestsBody(s: RequestsShown, csrf: string, passkey?: PasskeyDecisions): Html {
  return html`<h1>Pending requests <small>(${count(s.total)})</small></h1>${cappedNote(s)}
  ${
    s.total === 0
      ? html`<p class="empty">No approval request is pending.</p>`
      : s.rows.map((r) => reviewCardOrNotice(r, csrf, passkey))
  }${pager(s)}`;
}
