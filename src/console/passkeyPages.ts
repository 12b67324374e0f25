/**
 * The passkeys page, and the passkey parts of the login page and of a request's decision form.
 * Forms marked `data-passkey` are run by /static/console.js (the WebAuthn ceremony); posted
 * without it they reach a JSON route and are refused, never half-done.
 */
import type { PasskeyInfo } from "../approval/passkey.js";
import { type Html, html } from "./html.js";
import { storedSentence, storedText } from "./storedText.js";

/** Passkeys listed on the page: the rows a process of the user writes are not all drawn. */
export const PASSKEYS_SHOWN = 5;

/**
 * The passkeys page. Any process of the user can write passkey rows into the store, thousands of
 * them: drawn all, they put the human's passkey, its Remove button and the form to add one tens of
 * thousands of pixels down. A row not pinned in the audit chain is honoured by no gateway, so the
 * honoured passkeys are listed first, and at most PASSKEYS_SHOWN rows are drawn, the page saying
 * how many there are and how many are honoured (`portcullis passkey list` lists every one).
 */
export function passkeysBody(all: PasskeyInfo[], csrf: string, proofHeld: boolean, problem?: string): Html {
  const honoured = all.filter((p) => p.honoured);
  const list = [...honoured, ...all.filter((p) => !p.honoured)].slice(0, PASSKEYS_SHOWN);
  return html`<h1>Passkeys <small>(${all.length})</small></h1>
  ${problem ? html`<p class="error" role="alert">${problem}</p>` : ""}${
    all.length > list.length
      ? html`<p class="requests-capped" data-testid="passkeys-capped">${all.length} passkey rows are in the store, ${honoured.length} of them honoured by gateways; ${list.length} are listed here, the honoured ones first (a row the audit chain does not pin is honoured by none). <code>portcullis passkey list</code> lists every one, and <code>portcullis passkey rm ID</code> removes one.</p>`
      : ""
  }
  <p>A passkey (Touch ID, Windows Hello, a security key) logs in and decides requests, as the passphrase does; every decision made with it asks the authenticator, with user verification. Passkeys work at this address (<code>localhost</code>): browsers refuse an IP address for them.</p>
  ${
    list.length === 0
      ? html`<p class="empty">No passkey is registered.</p>`
      : html`<table class="passkeys"><thead><tr><th>name</th><th>id</th><th>added</th><th>last used</th><th>honoured</th><th></th></tr></thead><tbody>${list.map(
          (p) => html`<tr data-testid="passkey" data-passkey-id="${p.id}">
          <td>${storedText(p.name)}</td><td><code>${storedText(String(p.id).slice(0, 16))}…</code></td><td>${storedText(p.createdAt)}</td><td>${storedText(p.lastUsedAt ?? "never")}</td>
          <td>${p.honoured ? "yes" : html`<span class="error">no: ${storedSentence(p.why ?? "")}</span>`}</td>
          <td><form method="post" action="/passkeys/remove"><input type="hidden" name="csrf" value="${csrf}"><input type="hidden" name="passkey" value="${p.id}"><button type="submit" class="danger" data-testid="passkey-remove">Remove</button></form></td></tr>`,
        )}</tbody></table>`
  }
  <section class="add-passkey"><h2>Add a passkey</h2>
  <p>Adding one needs the passphrase${proofHeld ? " (proven: it is held for now, for this browser; leave it empty here)" : ""}; the new passkey is pinned in the audit chain, signed by the approver key.</p>
  <form method="post" action="/passkeys/register" data-passkey="register">
    <label>Name <input type="text" name="name" maxlength="64" placeholder="e.g. laptop Touch ID" data-testid="passkey-name"></label>
    <label>Passphrase <input type="password" name="passphrase" autocomplete="current-password" ${proofHeld ? "" : html`required`} data-testid="passkey-passphrase"></label>
    <button type="submit" data-testid="passkey-register">Add a passkey</button>
  </form>
  <p class="error" role="alert" data-testid="passkey-error" hidden></p></section>`;
}

/**
 * The login page's passkey part: the ceremony where passkeys work (localhost), a link there
 * otherwise. Absent when no passkey is registered.
 */
export function loginPasskeyPart(where: { here: boolean; url: string } | null, next = "/"): Html {
  if (!where) return html``;
  const there = `${where.url}/login${next === "/" ? "" : `?next=${encodeURIComponent(next)}`}`;
  return where.here
    ? html`<p class="or">or</p><p><button type="button" data-passkey-login data-testid="login-passkey">Log in with a passkey</button></p>
    <p class="error" role="alert" data-testid="passkey-error" hidden></p>`
    : html`<p class="or">or</p><p><a href="${there}" data-testid="login-passkey">Log in with a passkey</a> (at <code>localhost</code>: browsers refuse an IP address for passkeys)</p>`;
}

/** How a request card's decisions are proven when no passphrase proof is held. */
export type PasskeyDecisions = { here: true } | { here: false; url: string };

/** Under a decision form: what the buttons will ask, or where a passkey could decide instead. */
export function passkeyDecisionNote(p: PasskeyDecisions, requestId: string): Html {
  return p.here
    ? html`<p class="meta">Each decision asks your passkey (user verification).</p>
      <p class="error" role="alert" data-testid="passkey-error" hidden></p>`
    : html`<p class="meta">Or <a href="${p.url}/requests/${encodeURIComponent(requestId)}" data-testid="passkey-elsewhere">decide with a passkey</a> at <code>localhost</code>.</p>`;
}
