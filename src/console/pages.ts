/**
 * The console's pages as server-rendered HTML. Every value goes through `html` (escaped); the
 * only script is console.js, the only style console.css (both served by us, under this run's own
 * path and with their hashes: assetPaths.ts).
 */
import { type ActiveGrant, activeGrants } from "../approval/grants.js";
import type { ApprovalRequest } from "../approval/requests.js";
import { ShownDecisions } from "../approval/shownDecisions.js";
import {
  type ActivityEntry,
  activityView,
  type SessionView,
  sessionsView,
  shownOutcome,
} from "../audit/views.js";
import {
  diffCatalogs,
  getRevision,
  latestRevisions,
  type StoredRevision,
  shownDiff,
  storedSnapshot,
} from "../catalog/index.js";
import { displayJson, jsonText } from "../catalog/text.js";
import { epochBegan, type GatewayRow } from "../gateway/registry.js";
import { type ExecutionRecord, writtenServerInfo } from "../identity/index.js";
import type { Store } from "../store/db.js";
import { displayCommand } from "../util/redact.js";
import { assetPath, CONSOLE_SCRIPT, integrity } from "./assetPaths.js";
import { CONSOLE_CSS } from "./assets.js";
import { sessionsTable } from "./auditSessions.js";
import { notHonouredNote, type reviewCard, reviewCardOrNotice } from "./card.js";
import { labelsList, orderedLabels } from "./catalogLabels.js";
import { catalogHref, type LabelAsked, labelAsked } from "./catalogLinks.js";
import { type Html, html } from "./html.js";
import { loginPasskeyPart, type PasskeyDecisions } from "./passkeyPages.js";
import {
  cappedPhrase,
  cappedToolName,
  cappedValue,
  cutNote,
  mayOverflow,
  quotingServerHtml,
  serverSays,
} from "./serverText.js";
import { storedList, storedSentence, storedText } from "./storedText.js";
import { UNVOUCHED_FIELD } from "./vouched.js";

export interface PageChrome {
  title: string;
  /** the session's CSRF token (absent on the login page: no session yet) */
  csrf?: string;
  /** seconds of proven window left (null when no proof is held) */
  provenFor?: number | null;
  /**
   * why the held passphrase proof was dropped before its window ended ("the keys were rotated"),
   * on the first page drawn after it was (null: nothing to say)
   */
  proofDropped?: string | null;
  /** no passphrase proof held, and decisions here are asked of a passkey */
  passkeyDecisions?: boolean;
  active?: string;
  /** the store's state tag when the page was rendered: set on pages that fetch themselves again */
  live?: string;
  /**
   * A proof key handed over to the page (only in the answer to the request that carried the
   * passphrase): the page's script keeps it in this origin's storage, then goes to `next` if set.
   */
  handoff?: { proofKey: string; next?: string };
  /**
   * The page was opened by another site (Sec-Fetch-Site): its decision buttons do nothing, and a
   * link to this same page (`openedFrom`, its path) opens it from the console, where they do.
   */
  openedFrom?: string;
}

const NAV: [string, string][] = [
  ["/", "Requests"],
  ["/servers", "Servers"],
  ["/catalog", "Catalog"],
  ["/grants", "Grants"],
  ["/audit", "Audit"],
  ["/passkeys", "Passkeys"],
];

export function layout(chrome: PageChrome, body: Html): string {
  const nav = chrome.csrf
    ? html`<nav>${NAV.map(
        ([href, label]) =>
          html`<a href="${href}" ${chrome.active === href ? html`aria-current="page"` : ""}>${label}</a>`,
      )}<span class="proof" data-testid="proof-state">${
        chrome.provenFor
          ? html`passphrase proven (${chrome.provenFor}s left)`
          : html`${chrome.passkeyDecisions ? "decisions ask your passkey" : "decisions ask for the passphrase"}${
              chrome.proofDropped
                ? html` <span role="status" data-testid="proof-dropped">(the passphrase proof held was dropped: ${chrome.proofDropped})</span>`
                : ""
            }`
      }</span><form method="post" action="/logout" class="inline"><input type="hidden" name="csrf" value="${chrome.csrf}"><button type="submit">Log out</button></form></nav>`
    : "";
  return `<!doctype html>\n${html`<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${chrome.title} · portcullis</title>
<link rel="stylesheet" href="${assetPath("console.css")}" integrity="${integrity(CONSOLE_CSS)}">${
    chrome.handoff
      ? html`\n<meta name="portcullis-proof" content="${chrome.handoff.proofKey}" ${chrome.handoff.next ? html`data-next="${chrome.handoff.next}"` : ""}>`
      : ""
  }
<script src="${assetPath("console.js")}" integrity="${integrity(CONSOLE_SCRIPT)}" defer></script></head>
<body><header class="top"><strong>portcullis</strong> console${nav}</header>${
    chrome.openedFrom !== undefined
      ? html`
<p class="opened-from" data-testid="opened-from">This page was opened by another page, so its buttons decide nothing: <a href="${chrome.openedFrom}">open it here</a> to decide.</p>`
      : ""
  }
<main id="live" ${chrome.live !== undefined ? html`data-live="${chrome.live}"` : ""} ${
    chrome.openedFrom !== undefined ? html`data-opened-from="another-page"` : ""
  }>${body}</main></body></html>`}`;
}

export function loginPage(
  loginCsrf: string,
  next: string,
  problem?: string,
  passkey: { here: boolean; url: string } | null = null,
): string {
  return layout(
    { title: "Log in" },
    html`<section class="login"><h1>Prove it is you</h1>
    <p>Type the passphrase of this state directory's keyring. Nothing is shown before that.</p>
    ${problem ? html`<p class="error" role="alert">${problem}</p>` : ""}
    <form method="post" action="/login">
      <input type="hidden" name="csrf" value="${loginCsrf}">
      <input type="hidden" name="next" value="${next}">
      <label>Passphrase <input type="password" name="passphrase" autocomplete="current-password" autofocus required data-testid="login-passphrase"></label>
      <button type="submit" data-testid="login-submit">Log in</button>
    </form>${loginPasskeyPart(passkey, next)}</section>`,
  );
}

export function requestBody(
  req: Parameters<typeof reviewCard>[0],
  csrf: string,
  passkey?: PasskeyDecisions,
): Html {
  return html`<p><a href="/">← all requests</a></p>${reviewCardOrNotice(req, csrf, passkey)}`;
}

const ACTION_TEXT: Record<string, string> = {
  "approve-session": "approve for this agent run and execution epoch",
  "approve-call": "approve this one call",
  deny: "deny",
};

/**
 * Asked when no proof is held, or (`fresh`) when this decision may not use the held one: the same
 * decision again, with the passphrase.
 */
export function proofBody(
  req: ApprovalRequest,
  action: string,
  reason: string,
  csrf: string,
  reviewed: string,
  problem?: string,
  fresh = false,
  /** the ticked box of a row its gateway does not vouch for (vouched.ts), carried to the decision */
  unvouched = "",
): Html {
  return html`<section class="proof-form"><h1>Prove it is you to ${ACTION_TEXT[action] ?? action}</h1>
  <p>request <code>${storedText(req.request)}</code>: ${storedText(req.serverLabel)} · ${cappedToolName(req.tool)}${reason ? html` — reason: ${storedText(reason)}` : ""}</p>
  ${fresh ? html`<p class="note" data-testid="fresh-proof-note">This tool is approved one call at a time, each with the passphrase typed for it (console.perCallProof is "fresh"): a proof held from earlier does not decide it.</p>` : ""}
  ${problem ? html`<p class="error" role="alert">${storedSentence(problem)}</p>` : ""}
  <form method="post" action="/requests/${encodeURIComponent(req.request)}/decide">
    <input type="hidden" name="csrf" value="${csrf}">
    <input type="hidden" name="action" value="${action}">
    <input type="hidden" name="reason" value="${reason}">
    <input type="hidden" name="reviewed" value="${reviewed}">
    ${unvouched ? html`<input type="hidden" name="${UNVOUCHED_FIELD}" value="${unvouched}">` : ""}
    <label>Passphrase <input type="password" name="passphrase" autocomplete="current-password" autofocus required data-testid="decision-proof"></label>
    <button type="submit" data-testid="decision-submit">Decide</button>
  </form><p><a href="/requests/${encodeURIComponent(req.request)}">cancel</a></p></section>`;
}

export function messageBody(title: string, text: string, back = "/"): Html {
  // the text may quote the store (a decision refused over a rewritten row): capped when long
  return html`<h1>${title}</h1><p class="message" role="status">${storedSentence(text)}</p><p><a href="${back}">back</a></p>`;
}

/** Gateways drawn on one page of the Servers page. */
export const SERVERS_SHOWN = 20;

/**
 * The running gateways, the latest started first, SERVERS_SHOWN at `offset`. Any process of the
 * user can write gateway rows naming a live process (its own): thousands of them, each with its
 * status lines and record, made a page of megabytes. The page says how many it does not show.
 */
export function serversBody(all: GatewayRow[], offset = 0): Html {
  const ordered = [...all].reverse();
  const rows = ordered.slice(offset, offset + SERVERS_SHOWN);
  const after = ordered.length - offset - rows.length;
  return html`<h1>Servers</h1>${
    ordered.length > rows.length
      ? html`<p class="requests-capped" data-testid="servers-capped">${ordered.length} gateways are running; this page shows ${rows.length === 0 ? "none of them" : `${offset + 1} to ${offset + rows.length}`}, the latest started first (<code>portcullis status</code> lists every one). ${
          offset > 0
            ? html`<a href="/servers?from=${Math.max(0, offset - SERVERS_SHOWN)}" data-testid="servers-previous">the previous ${Math.min(offset, SERVERS_SHOWN)}</a> `
            : ""
        }${after > 0 ? html`<a href="/servers?from=${offset + rows.length}" data-testid="servers-next">the next ${Math.min(after, SERVERS_SHOWN)}</a>` : ""}</p>`
      : ""
  }${
    ordered.length === 0
      ? html`<p class="empty">No gateway is running.</p>`
      : rows.map((g) => {
          const r = g.record;
          return html`<article class="server"><h2>${storedText(g.serverLabel)} <span class="state state-${g.state}">${storedText(g.state)}</span></h2>
          <p class="meta">gateway pid ${storedText(g.pid)}${g.unseen ? ` (${g.unseen === "cannot tell" ? "cannot tell whether it runs" : "in another PID namespace"})` : ""} since ${storedText(g.startedAt)}${g.running ? "" : html` · ended ${storedText(g.endedAt ?? "")}`}</p>
          ${
            r?.remote
              ? remoteServer(r)
              : r
                ? html`<dl><dt>epoch</dt><dd><code>${storedText(r.epoch)}</code> (${storedSentence(epochBegan(g.epochReason, r))})</dd>
            <dt>command</dt><dd><code>${storedText(displayCommand(r.launchCommand))}</code></dd>
            ${r.entry ? html`<dt>entry</dt><dd>${storedText(r.entry.path)} <code>sha256:${storedText(String(r.entry.sha256).slice(0, 16))}…</code></dd>` : ""}
            <dt>identity</dt><dd><code>${storedText(r.identityDigest)}</code></dd></dl>`
                : html`<p>no execution record yet</p>`
          }
          <ul class="status">${g.status.slice(-8).map(statusLine)}</ul></article>`;
        })
  }`;
}

/**
 * One of a gateway's status lines. They are the gateway's sentences, but some quote what the
 * server said (why a remote session ended), at any length: a long one is capped in height, as a
 * value on the card is, the note after it a list item of its own.
 */
function statusLine(s: { at: string; line: string }): Html {
  if (!mayOverflow(s.line)) return html`<li><time>${s.at}</time> ${s.line}</li>`;
  return html`<li class="capped" data-capped tabindex="0"><time>${s.at}</time> ${s.line}</li><li class="cut-note" data-testid="cut-note">${cutNote(s.line)}</li>`;
}

/**
 * A server reached over HTTP, as `portcullis status` shows it: its URL, its certificate chain's
 * digest, and its serverInfo, its own words, framed and captioned as such and capped.
 */
function remoteServer(r: ExecutionRecord): Html {
  const x = r.remote!;
  return html`<dl data-testid="remote"><dt>epoch</dt><dd><code>${storedText(r.epoch)}</code> (remote, since ${storedText(r.startedAt)})</dd>
            <dt>url</dt><dd><code>${storedText(x.url)}</code></dd>
            <dt>tls chain</dt><dd><code>${storedText(x.certificateChainSha256 ?? "none (http://: nothing tells one server at this address from another)")}</code></dd>
            <dt>serverInfo</dt><dd>${
              x.serverInfo
                ? serverSays("its serverInfo", displayJson(writtenServerInfo(x) ?? "null", 300), "serverInfo")
                : "(not initialized yet)"
            }</dd>
            <dt>identity</dt><dd><code>${storedText(r.identityDigest)}</code></dd></dl>`;
}

/** Grants drawn on one page of the Grants page. */
export const GRANTS_SHOWN = 25;

/**
 * The active grants, those a gateway honours first (newest first), then the rest (ShownDecisions:
 * a row written by other means than a decision, whose signature does not verify), one page of
 * GRANTS_SHOWN at `offset`. Any process of the user can write thousands of grant rows: drawn all,
 * oldest first, they stood above the grants the human gave and their Revoke buttons. A forged row
 * is never honoured, so none of them can stand above a real grant.
 */
export function grantsBody(db: Store, stateDir: string, csrf: string, offset = 0): Html {
  const shown = new ShownDecisions(db, stateDir);
  const all = activeGrants(db).map((g) => ({ g, why: shown.grant(g) }));
  const ordered = all.sort(
    (a, b) =>
      Number(a.why !== null) - Number(b.why !== null) ||
      String(b.g.issuedAt).localeCompare(String(a.g.issuedAt)) ||
      String(b.g.grant).localeCompare(String(a.g.grant)),
  );
  const page = ordered.slice(offset, offset + GRANTS_SHOWN);
  const rest = ordered.length - page.length;
  const honoured = ordered.filter((x) => x.why === null).length;
  return html`<h1>Grants <small>(${ordered.length} active)</small></h1>${
    rest > 0
      ? html`<p class="requests-capped" data-testid="grants-capped">${ordered.length} grants are active, ${honoured} of them honoured by gateways; this page shows ${page.length === 0 ? "none of them" : `${offset + 1} to ${offset + page.length}`}: the honoured ones first, newest first, then the ones no gateway honours (rows written by other means than a decision). ${
          offset > 0
            ? html`<a href="/grants?from=${Math.max(0, offset - GRANTS_SHOWN)}" data-testid="grants-previous">the previous ${GRANTS_SHOWN}</a> `
            : ""
        }${
          offset + page.length < ordered.length
            ? html`<a href="/grants?from=${offset + page.length}" data-testid="grants-next">the next ${Math.min(GRANTS_SHOWN, ordered.length - offset - page.length)}</a>`
            : ""
        }</p>`
      : ""
  }${
    ordered.length === 0
      ? html`<p class="empty">No grant is active.</p>`
      : html`<table class="grants"><thead><tr><th>grant</th><th>server · tools</th><th>mode</th><th>epoch</th><th>credentials</th><th>issued</th><th></th></tr></thead><tbody>${page.map(
          ({ g, why }) => html`<tr data-testid="grant" data-grant-id="${g.grant}">
          <td><code>${storedText(g.grant)}</code>${g.runAlive ? "" : html`<br><small>its gateway is gone</small>`}</td>
          <td>${storedText(g.serverLabel)} · ${g.toolScope.map((t, i) => html`${i > 0 ? ", " : ""}${cappedToolName(t.name)}`)}</td>
          <td>${storedText(g.mode)}</td><td><code>${storedText(g.executionEpoch)}</code>${epochMovedOn(g)}</td>
          <td>${storedList(g.credentialScope)}</td>
          <td>${storedText(g.issuedAt)}<br><small>${storedText(g.approvedBy)}</small>${notHonouredNote(why)}</td>
          <td><form method="post" action="/grants/${encodeURIComponent(g.grant)}/revoke"><input type="hidden" name="csrf" value="${csrf}"><button type="submit" class="danger" data-testid="revoke">Revoke</button></form></td></tr>`,
        )}</tbody></table>`
  }`;
}

/**
 * A grant whose server now runs another epoch (its gateway's status row says so): listed until
 * the run's next call ends it, but covering none of the new code's calls, which the human must
 * not take for approved. Shown, never decided on: the row is the store's, not a proof.
 */
function epochMovedOn(g: ActiveGrant): Html | string {
  if (g.serverEpoch === null || g.serverEpoch === g.executionEpoch) return "";
  return html`<br><small data-testid="grant-epoch-moved">the server now runs epoch <code>${storedText(g.serverEpoch)}</code>: this grant covers none of its calls, and ends at the run's next call that needs an approval</small>`;
}

/** Revisions of one label drawn on the Catalog page: the latest. */
export const REVISIONS_SHOWN = 50;

/**
 * One page of the labels (labelsList, at `labelsFrom`), and for a chosen label its revisions and a
 * side-by-side diff of two of them. The chosen label opens whatever page lists it.
 */
export function catalogBody(
  db: Store,
  asked: LabelAsked,
  from: number | null,
  to: number | null,
  labelsFrom = 0,
): Html {
  const labels = orderedLabels(db);
  const list = html`<h1>Catalog revisions</h1>${labelsList(labels, labelsFrom)}`;
  const label = labelAsked(labels, asked);
  if (label === null)
    return html`${list}${
      asked.label !== null || asked.digest !== null
        ? html`<p class="error" role="alert" data-testid="label-not-found">No catalog revision is recorded under the label asked for (it may have been removed since the link was made).</p>`
        : ""
    }`;
  // a process of the user can record thousands of revisions under a label: the latest are read
  const { revisions: shown, total } = latestRevisions(db, label, REVISIONS_SHOWN);
  const last = shown.at(-1)?.revision ?? null;
  const b = to ?? last;
  const a = from ?? (b !== null && b > 1 ? b - 1 : b);
  const before = a !== null ? getRevision(db, label, a) : null;
  const after = b !== null ? getRevision(db, label, b) : null;
  const q = (x: number, y: number) => catalogHref(label, x, y);
  return html`${list}<h2>${storedText(label)}</h2>${
    shown.length < total
      ? html`<p class="requests-capped" data-testid="revisions-capped">${total.toLocaleString("en-US")} revisions are recorded under this label; the latest ${REVISIONS_SHOWN} are shown (<code>portcullis catalog list</code> lists every one, and a diff of any two opens at its link).</p>`
      : ""
  }
  <table><thead><tr><th>revision</th><th>fingerprint</th><th>tools</th><th>first seen</th><th></th></tr></thead><tbody>${shown.map(
    (r) =>
      html`<tr><td>${storedText(r.revision)}</td><td><code>${storedText(String(r.fingerprint).slice(0, 23))}…</code></td><td>${storedText(r.tools)}</td><td>${storedText(r.firstSeenAt)}</td><td>${
        r.revision > 1 ? html`<a href="${q(r.revision - 1, r.revision)}">diff with ${r.revision - 1}</a>` : ""
      }</td></tr>`,
  )}</tbody></table>
  ${before && after ? sideBySide(before, after, a!, b!) : ""}`;
}

function sideBySide(before: StoredRevision, after: StoredRevision, a: number, b: number): Html {
  // each of the server's pieces redacted on its own, as `catalog diff` shows them (a credential in
  // a description was on the page: diffCatalogs redacts schema values by their keys only); each
  // side with the names it withheld for entries that could not be fingerprinted (storedSnapshot)
  const diff = shownDiff(diffCatalogs(storedSnapshot(before), storedSnapshot(after)));
  if (a === b) return html`<p>revision ${a}: nothing to compare.</p>`;
  return html`<h3>revision ${a} → ${b} ${
    diff.entries.length === 0
      ? "(no change)"
      : html`<span class="cls cls-${diff.expands ? "expands" : "other"}">${diff.expands ? "expands authority" : "does not expand authority"}</span>`
  }</h3>
  ${quotingServerHtml(
    "The catalog diff",
    "catalog-diff",
    html`<table class="diff"><thead><tr><th>tool · field</th><th>change</th><th>revision ${a}</th><th>revision ${b}</th><th>class</th></tr></thead><tbody>${diff.entries.map(
      (e) =>
        html`<tr class="entry"><th colspan="4">${e.kind} ${cappedToolName(e.tool, true)}${e.renameCandidate ? html` (rename of ${cappedToolName(e.renameCandidate)}?)` : ""}</th><td><span class="cls cls-${e.classification}">${e.classification}</span></td></tr>${e.changes.map(
          (c) =>
            html`<tr><td>${cappedPhrase(c.path || "(tool)", html`<code class="name">${c.path || "(tool)"}</code>`)}</td><td>${c.change}</td><td>${diffValue(c.before)}</td><td>${diffValue(c.after)}</td><td><span class="cls cls-${c.classification}">${c.classification}</span></td></tr>`,
        )}`,
    )}</tbody></table>`,
  )}`;
}

/** One side of a changed field: the server's value, capped with its note as on the card. */
function diffValue(v: unknown): Html | "" {
  return v === undefined ? "" : cappedValue(jsonText(v));
}

export interface AuditPageData {
  verified:
    | { ok: true; records: number; head: { seq: number; hash: string } }
    | { ok: false; seq: number; problem: string };
  /**
   * One page of the Sessions table (`sessions`, the runs of `span` starts from `from` of the
   * `runs` the log holds) and the calls of those runs (`activity`): src/console/audit.ts
   */
  opened: {
    sessions: SessionView[];
    activity: ActivityEntry[];
    runs: number;
    from: number;
    span: number;
    /** records the page left out: they do not open, or (past a break) are out of place */
    leftOut: LeftOutRecord[];
  } | null;
  openProblem?: string;
}

/** A record the Audit page left out, and why (a sentence naming it). */
export interface LeftOutRecord {
  seq: number | null;
  why: string;
}

/** Left-out records named on a page at most; past that, counted. */
const LEFT_OUT_NAMED = 20;

/**
 * The records the page left out, said where the human looks (any process of the user can append
 * records that do not open, or break the chain: the page shows the rest, and says what it left
 * out and which command checks the log).
 */
function leftOutNotice(leftOut: readonly LeftOutRecord[]): Html | "" {
  if (leftOut.length === 0) return "";
  const more = leftOut.length - LEFT_OUT_NAMED;
  return html`<div class="error" role="alert" data-testid="audit-left-out"><p>${
    leftOut.length === 1 ? "A record is" : `${leftOut.length.toLocaleString("en-US")} records are`
  } left out of this page (any process of yours can append records sealed to the keyring's public key, or bytes that do not open; a record that does not open names no run and is counted in none):</p><ul>${leftOut
    .slice(0, LEFT_OUT_NAMED)
    .map(
      (r) => html`<li data-testid="audit-left-out-record">${storedSentence(r.why)}</li>`,
    )}</ul>${more > 0 ? html`<p>and ${more.toLocaleString("en-US")} more.</p>` : ""}<p><code>portcullis audit verify</code> checks the chain; <code>portcullis audit sessions</code> and <code>portcullis audit activity</code> refuse a log holding such a record.</p></div>`;
}

/**
 * `held`: a passphrase proof is held, so the tab that proved it opens the audit (or another page
 * of its Sessions table) without asking.
 */
export function auditBody(d: AuditPageData, csrf: string, held = false): Html {
  const v = d.verified;
  return html`<h1>Audit</h1>
  <section class="verify"><h2>Verification</h2>${
    v.ok
      ? html`<p class="ok">the chain verifies: ${v.records} records, head <code>${v.head.seq}</code> <code>${v.head.hash.slice(0, 23)}…</code></p>`
      : html`<p class="error">the chain is broken at record ${v.seq}: ${storedSentence(v.problem)}${
          d.opened
            ? html` The tables below still show the records after it, as their headers place them (a record that breaks the chain hides none that follow it); <code>portcullis audit verify</code> says where the chain stops holding, and <code>portcullis audit sessions</code> refuses a broken chain.`
            : ""
        }</p>`
  }</section>
  ${
    d.opened
      ? html`${leftOutNotice(d.opened.leftOut)}${sessionsTable(
          { rows: d.opened.sessions, offset: d.opened.from, span: d.opened.span, total: d.opened.runs },
          csrf,
          held,
        )}
        <section><h2>Activity</h2><p>The calls of the runs in the table above, the latest first (200 at most; <code>portcullis audit activity</code> lists every call in the log).</p><table><thead><tr><th>time</th><th>server</th><th>tool</th><th>epoch</th><th>rev</th><th>grant</th><th>decision</th><th>outcome</th></tr></thead><tbody>${d.opened.activity
          .slice(-200)
          .reverse()
          .map(
            (a) =>
              html`<tr><td>${storedText(a.at)}</td><td>${storedText(a.server ?? "-")}</td><td>${a.tool === null ? "-" : cappedToolName(a.tool)}</td><td><code>${storedText(a.epoch ?? "-")}</code></td><td>${storedText(a.revision ?? "-")}</td><td><code>${storedText(a.grant ?? "-")}</code></td><td>${storedText(a.decision)}</td><td>${storedText(shownOutcome(a))}</td></tr>`,
          )}</tbody></table></section>`
      : html`<section><h2>Sessions and activity</h2>
        ${d.openProblem ? html`<p class="error" role="alert">${storedSentence(d.openProblem)}</p>` : ""}
        <p>The audit is sealed to the keyring: reading it needs the passphrase (kept for the proven window only${
          held ? ", for the browser it was given in: leave it empty there" : ""
        }).</p>
        <form method="post" action="/audit/open"><input type="hidden" name="csrf" value="${csrf}">
        <label>Passphrase <input type="password" name="passphrase" autocomplete="current-password" ${held ? "" : html`required`} data-testid="audit-proof"></label>
        <button type="submit">Open the audit</button></form></section>`
  }`;
}

/** sessionsView and activityView over opened records (callers verify and redact first). */
export function auditViews(
  opened: Parameters<typeof sessionsView>[0],
  storedEnd?: Parameters<typeof sessionsView>[1],
): { sessions: SessionView[]; activity: ActivityEntry[] } {
  const records = [...opened];
  return { sessions: sessionsView(records, storedEnd), activity: activityView(records) };
}
