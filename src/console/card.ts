/**
 * The review card of one approval request: what the human must see before deciding, on one
 * screen (who asks, what changed, the tool, the arguments, the credential scopes), with the
 * decision form. Built from the review stored with the request (src/approval/review.ts), made
 * printable by publicRequest (arguments and records redacted), every string escaped by `html`.
 */

import { listedCallWaitText } from "../approval/callWaitText.js";
import { reviewDigest } from "../approval/decision.js";
import { argumentsPartlyHidden, partlyHiddenReason } from "../approval/hiddenArguments.js";
import { hidden, publicRequest } from "../approval/render.js";
import type { ApprovalRequest, PendingRequest, Review } from "../approval/requests.js";
import type { ChainEntry } from "../approval/runs.js";
import { notHonoured } from "../approval/shownDecisions.js";
import { toolParts } from "../approval/toolParts.js";
import {
  displayJson,
  displayName,
  isPlainAscii,
  jsonText,
  mixedScriptNote,
  mixedScriptText,
  NOT_ASCII_NOTE,
} from "../catalog/text.js";
import { writtenServerInfo } from "../identity/index.js";
import { MAX_REASON } from "../util/cut.js";
import { displayCommand } from "../util/redact.js";
import { type Html, html, nameHtml } from "./html.js";
import {
  argumentsAnchor,
  argumentsRecap,
  argumentsSummary,
  decisionAnchor,
  MANY_ARGUMENTS,
  tallCardNote,
} from "./manyArguments.js";
import { type PasskeyDecisions, passkeyDecisionNote } from "./passkeyPages.js";
import {
  cappedName,
  cappedToolName,
  cappedValue,
  mayOverflow,
  quotingServer,
  serverSays,
} from "./serverText.js";
import { storedList, storedSentence, storedText } from "./storedText.js";
import { confirmUnvouched, notVouchedMark } from "./vouched.js";

function chainLine(e: ChainEntry): Html {
  return html`<li><code>pid ${storedText(e.pid)}</code> ${storedText(e.executable ?? "(executable unknown)")}${
    e.command ? html` <code class="cmd">$ ${storedText(e.command)}</code>` : ""
  }${e.note ? html` <em>(${storedText(e.note)})</em>` : ""}</li>`;
}

/** The agent that launched the gateway (the launcher) and the host above it; the rest on demand. */
function whoAsks(r: Review): Html {
  const chain = r.agentRun.chain;
  const launcher = chain[0];
  const host = chain.find((e, i) => i > 0 && e.command && !/(^|\/)(ba|z|da|fi)?sh$/.test(e.executable ?? ""));
  return html`<section class="who"><h3>Who asks</h3>
    <dl>
      <dt>host</dt><dd>${host ? html`${storedText(host.executable ?? "?")} <code>pid ${storedText(host.pid)}</code>` : "(not identified)"}</dd>
      <dt>launcher</dt><dd>${launcher ? html`${storedText(launcher.executable ?? "?")} <code>pid ${storedText(launcher.pid)}</code>` : "(none)"}</dd>
      <dt>agent run</dt><dd><code>${storedText(r.agentRun.run)}</code> since ${storedText(r.agentRun.startedAt)}</dd>
    </dl>
    <details><summary>full process chain (${chain.length})</summary>
      <p class="digest">${storedText(r.agentRun.chainDigest)}</p>
      ${chainList(chain)}
    </details></section>`;
}

/**
 * Processes of the chain drawn on the card. A gateway records its ancestors, a handful; a row
 * rewritten in the store can hold thousands, each drawn with its capped boxes: the card (and the
 * Requests page, for every such request) grew by megabytes.
 */
export const CHAIN_SHOWN = 32;

/**
 * The chain's list in a box capped in height (8 lines) that scrolls, with its note, so opening it
 * leaves the arguments and the buttons where they were; past CHAIN_SHOWN processes, a line that
 * says how many are not drawn and where the whole chain is printed.
 */
function chainList(chain: readonly ChainEntry[]): Html {
  const shown = chain.slice(0, CHAIN_SHOWN);
  const rest = chain.length - shown.length;
  return html`<div class="chain-box capped" data-capped tabindex="0" data-testid="chain-box"><ol>${shown.map(chainLine)}</ol></div><p class="cut-note" data-testid="cut-note" ${
    shown.length > 4 ? "" : "hidden"
  }>(${shown.length} processes; scroll to read all)</p>${
    rest > 0
      ? html`<p class="note" data-testid="chain-not-shown">${rest} more processes of the chain are not shown here; <code>portcullis approvals --verbose</code> prints the whole chain.</p>`
      : ""
  }`;
}

/**
 * A server reached over HTTP is known only by what it showed over the wire: its URL, its
 * certificate chain's digest and its serverInfo (its own words), as the terminal's review says them.
 */
function remotePart(rec: Record<string, unknown> | null): Html | "" {
  const remote = rec?.remote as
    | { url?: unknown; certificateChainSha256?: unknown; serverInfo?: unknown; writtenNumbers?: unknown }
    | undefined;
  if (!remote || typeof remote !== "object") return "";
  return html`<dl class="remote" data-testid="remote">
      <dt>remote</dt><dd><code>${storedText(remote.url ?? "")}</code></dd>
      <dt>tls chain</dt><dd><code>${storedText(remote.certificateChainSha256 ?? "none (plain http)")}</code></dd>
      <dt>serverInfo</dt><dd>${serverSays("its serverInfo", displayJson(writtenServerInfo(remote) ?? "null", 300), "serverInfo")}</dd>
    </dl>`;
}

/** The parts of the execution record that differ, a list; one capped box when the store made it long. */
function changedParts(parts: readonly string[]): Html {
  const all = parts.join("\n");
  if (mayOverflow(all)) return html`<div class="parts">${storedText(all)}</div>`;
  return html`<ul class="parts">${parts.map((p) => html`<li>${p}</li>`)}</ul>`;
}

function whatChanged(r: Review): Html {
  const rec = r.epoch.record as Record<string, unknown> | null;
  const cmd = rec && Array.isArray(rec.launchCommand) ? displayCommand(rec.launchCommand.map(String)) : null;
  const cls = r.catalog.classification;
  return html`<section class="changed"><h3>What changed</h3>
    <p><strong>execution epoch</strong> <code>${storedText(r.epoch.current)}</code>: ${storedSentence(r.epoch.summary)}</p>
    ${r.epoch.changedParts && r.epoch.changedParts.length > 0 ? changedParts(r.epoch.changedParts) : ""}
    ${cmd ? html`<p class="cmd">command <code>${storedText(cmd)}</code></p>` : ""}
    ${remotePart(rec)}
    <p><strong>catalog revision ${storedText(r.catalog.revision)}</strong>${
      r.catalog.lastApprovedRevision !== null
        ? html` (last approved: ${storedText(r.catalog.lastApprovedRevision)})`
        : ""
    } ${cls ? html`<span class="cls cls-${cls}">${storedText(cls)}</span>` : ""}</p>
    <details ${cls === "expands" ? "open" : ""}><summary>catalog diff</summary>${quotingServer("The catalog diff", r.catalog.rendered, "catalog-diff")}</details>
    </section>`;
}

/**
 * The tool as the catalog lists it, each piece of the server's words in its own frame
 * (serverText.ts); the gateway's own line about the inputs stands outside them. A rendering of
 * another shape than renderTool's (toolParts) is framed whole as the server's.
 */
function toolText(r: Review): Html {
  if (r.tool.rendered === `${displayName(r.tool.name)} (not in the current catalog)`)
    return html`<p>(not in the current catalog)</p>`;
  const parts = toolParts(r.tool.rendered, r.tool.name);
  // no tool: an MCP request the gateway guards (a read, a listen's uri), in the gateway's own words
  if (parts && r.tool.gatewayWords === true)
    return html`<div class="request-kind" data-testid="gateway-words">${cappedValue(
      `${parts.title !== null ? `${parts.title}. ` : ""}${parts.description.join(" ")}`,
    )}</div>`;
  if (!parts) return serverSays("the tool as listed", r.tool.rendered, "tool");
  return html`${parts.title !== null ? serverSays("the tool's title", parts.title, "title") : ""}${
    parts.description.length > 0
      ? serverSays("the tool's description", parts.description.join("\n"), "description")
      : ""
  }${
    parts.inputsValue !== null
      ? serverSays("the tool's input schema", parts.inputsValue, "inputs")
      : parts.inputs.length > 0
        ? serverSays(`the tool's ${parts.inputsLine.replace(/:$/, "")}`, parts.inputs.join("\n"), "inputs")
        : html`<p class="inputs-line">${parts.inputsLine}</p>`
  }${parts.hints !== null ? serverSays("its hints (shown, never trusted)", parts.hints, "hints") : ""}`;
}

function toolPart(r: Review): Html {
  const since = r.tool.sinceLastGrant;
  return html`<section class="tool"><h3>The tool ${cappedToolName(r.tool.name, true)} <span class="mode">${
    r.tool.mode === "per-call" ? "per-call (every call asks)" : "session"
  }</span></h3>
    ${isPlainAscii(r.tool.name) ? "" : html`<p class="error" data-testid="not-ascii-name">${NOT_ASCII_NOTE}</p>`}
    ${toolText(r)}
    <p class="digest">${storedText(r.tool.fingerprint)}</p>
    ${
      since
        ? html`<p>since the last grant of this tool (<code>${storedText(since.grant)}</code>): <span class="cls cls-${since.classification}">${storedText(since.classification)}</span></p>`
        : ""
    }</section>`;
}

/** One argument's row: its name, its value (as the terminal shows it), the note on where it came from. */
function argumentRow(a: Review["arguments"][number]): Html {
  // as the terminal shows it: quoted when not plain, so `to` and `to\t` do not read alike
  const value = hidden(a) ? html`<code class="value">(hidden)</code>` : cappedValue(jsonText(a.value));
  const warned = !hidden(a) && mixedScriptText(a.value) !== null;
  return html`<tr ${warned ? html`class="warned"` : ""}><th>${cappedName(a.name)}</th><td>${value}</td><td class="note">${storedText(a.note ?? "")}</td></tr>`;
}

/**
 * The warning under a value that mixes Latin letters with look-alikes, as the terminal's review
 * says it, in a row of its own under the argument's, as wide as the table: in the value's column
 * (a third of a third of the card at 1280 px) it quoted the value over nine lines, every such
 * argument's row about 490 px tall.
 */
function mixedScript(a: Review["arguments"][number]): Html | "" {
  const mixed = hidden(a) ? null : mixedScriptText(a.value);
  return mixed === null
    ? ""
    : html`<tr class="warning"><td colspan="3"><p class="error" data-testid="mixed-script-value">${mixedScriptNote(mixed)}</p></td></tr>`;
}

function argumentsPart(r: Review, request: string): Html {
  return html`<section class="args" id="${argumentsAnchor(request)}"><h3>Arguments <small>(schema defaults applied, secrets redacted)</small></h3>
    ${
      r.arguments.length === 0
        ? html`<p>(none)</p>`
        : html`<table><tbody>${r.arguments.map(
            (a) =>
              // as the terminal shows it: quoted when not plain, so `to` and `to\t` do not read alike
              html`${argumentRow(a)}${mixedScript(a)}`,
          )}</tbody></table>`
    }
    <p><strong>credential scopes</strong> ${storedList(r.credentialScope)}</p>${
      r.scopeNote ? html`<p class="note" data-testid="scope-note">${storedSentence(r.scopeNote)}</p>` : ""
    }${newEgress(r)}</section>`;
}

/**
 * The destinations the current epoch's server contacted that the last approved epoch's never did
 * (the egress record), said as the terminal's review says them ("NEW egress"): what new code
 * talks to is what a human approving it most needs to know.
 */
function newEgress(r: Review): Html | "" {
  const hosts = r.newDestinations ?? [];
  if (hosts.length === 0) return "";
  return html`<p class="error" data-testid="new-egress">NEW egress <code>${storedList(hosts)}</code> (never contacted under the last approved epoch)</p>`;
}

/**
 * The decision forms: buttons for a session grant or one call, and apart from them a denial with
 * its reason, so that Enter in the reason field submits the denial (in one form it would submit
 * the form's first button, an approval). With `passkey.here`, the page's script runs each
 * decision as a passkey ceremony instead.
 */
/**
 * The decision forms. `reviewed`: the digest of the stored review this card shows, sent back so
 * that a review changed in the store since the page was made is not decided on (requests.ts).
 */
export function decisionForm(
  req: ApprovalRequest,
  csrf: string,
  reviewed: string,
  passkey?: PasskeyDecisions,
  /** whether its gateway vouches for the row (vouched.ts): approving one it does not needs a box ticked */
  vouched?: boolean | null,
): Html {
  const perCall = req.mode === "per-call";
  // a one-call approval over a review that hid part of an argument is refused (hiddenArguments.ts)
  const partlyHidden = argumentsPartlyHidden(req.review);
  const formOpen = (id: string | null) =>
    html`<form ${
      id === null ? "" : html`id="${id}" `
    }method="post" action="/requests/${encodeURIComponent(req.request)}/decide" ${
      passkey?.here ? html`data-passkey="decide" data-request="${req.request}"` : ""
    }><input type="hidden" name="csrf" value="${csrf}"><input type="hidden" name="reviewed" value="${reviewed}">`;
  const open = formOpen(null);
  // the approve form is named when a box outside it belongs to it (a row no gateway vouches for)
  const approveForm = vouched === false ? `approve-${req.request}` : null;
  const count = req.review.arguments.length;
  // the target of the summary's link: the recap when there is one, so the count shows above the buttons
  const target = count > MANY_ARGUMENTS ? "" : html`id="${decisionAnchor(req.request)}"`;
  return html`${argumentsRecap(req.request, count)}<div class="decide" ${target}>${formOpen(approveForm)}
    ${
      perCall
        ? ""
        : html`<button type="submit" name="action" value="approve-session" data-testid="approve-session">Approve for this session</button>`
    }
    ${
      partlyHidden.length > 0
        ? html`<p class="refusal" data-testid="approve-call-refused">Not to be approved for this call: ${storedSentence(`${partlyHiddenReason(partlyHidden, req.request)}.`)}</p>`
        : html`<button type="submit" name="action" value="approve-call" data-testid="approve-call">Approve this call</button>`
    }
  </form>${open}<span class="deny-group"><input type="text" name="reason" maxlength="${MAX_REASON}" placeholder="reason (optional)" data-testid="deny-reason" aria-label="reason for denying">
    <button type="submit" name="action" value="deny" class="danger" data-testid="deny">Deny</button></span>
  </form></div>${
    // a row no gateway vouches for: said, and its box (of the approve form) required, below the
    // buttons rather than above or among them (a fixed sentence must not push a hostile card's
    // buttons off the first screen: test/console/hostile-stored-text-height.test.ts); a click
    // without it is held by the browser at the box, and refused by the server (unvouchedRefusal)
    approveForm === null ? "" : html`${notVouchedMark(vouched)}${confirmUnvouched(vouched, approveForm)}`
  }${passkey ? passkeyDecisionNote(passkey, req.request) : ""}`;
}

/**
 * The card's title, a link to the request's own page: the server and the tool. A tool name too
 * long to fit a few lines is in its capped box after the link (a box that scrolls inside a link
 * would be a link to scroll), with its note.
 */
function cardTitle(request: string, r: Review): Html {
  const href = `/requests/${encodeURIComponent(request)}`;
  const name = cappedToolName(r.tool.name);
  // a label the store or the configuration made long: in its capped box after the link, as a name
  if (mayOverflow(String(r.serverLabel ?? ""))) {
    if (name.text === nameHtml(r.tool.name).text)
      return html`<a href="${href}">${name} of the server</a> ${storedText(r.serverLabel)}`;
    return html`<a href="${href}">request</a> ${storedText(r.serverLabel)} · ${name}`;
  }
  if (name.text === nameHtml(r.tool.name).text) return html`<a href="${href}">${r.serverLabel} · ${name}</a>`;
  return html`<a href="${href}">${r.serverLabel} ·</a> ${name}`;
}

/** One pending request's card (`pending-request`), with the form when it can still be decided. */
export function reviewCard(
  given: ApprovalRequest &
    Partial<Pick<PendingRequest, "callWaiting" | "callWaitingSince" | "callLeft">> & {
      waiting?: boolean;
      epochMovedOn?: string | null;
      /** why no gateway honours its decision (ShownDecisions), when it holds one that does not verify */
      notHonoured?: string | null;
      /** whether its gateway vouches for its row (vouched.ts); false: marked, and approving it asks more */
      vouched?: boolean | null;
    },
  csrf: string,
  passkey?: PasskeyDecisions,
): Html {
  const req = publicRequest(given);
  const r = req.review;
  const pending = req.state === "pending";
  return html`<article class="card" ${pending ? html`data-testid="pending-request"` : ""} data-request-id="${req.request}">
    <header><h2>${cardTitle(req.request, r)}</h2>
      <p class="meta">request <code>${storedText(req.request)}</code> · ${storedText(req.state)}${
        req.waiting === false ? " (nobody is waiting for it any more)" : ""
      } · asked ${storedText(r.createdAt)} · expires ${storedText(r.expiresAt)}</p>${pending ? callWaits(given) : ""}${
        pending
          ? html`${argumentsSummary(req.request, r.arguments.length)}${tallCardNote(req.request, r.arguments.length)}`
          : ""
      }${epochEnded(req.executionEpoch, given.epochMovedOn)}</header>
    <div class="grid">${whoAsks(r)}${whatChanged(r)}${toolPart(r)}${argumentsPart(r, req.request)}</div>
    ${pending ? decisionForm(req, csrf, reviewDigest(given.review), passkey, given.vouched) : html`${decided(req)}${notHonouredNote(given.notHonoured ?? null)}`}
  </article>`;
}

/**
 * A pending request's card, or, when its stored review cannot be drawn (any process of the user
 * can rewrite the review in the store: `{}`, `null`, a name that is no string), a card that says
 * so and offers no decision (decidableRequest refuses any decision of a request that no longer
 * matches its review). Without it one such row made the whole Requests page an internal error,
 * hiding every other request from the human.
 */
export function reviewCardOrNotice(
  given: Parameters<typeof reviewCard>[0],
  csrf: string,
  passkey?: PasskeyDecisions,
): Html {
  try {
    // another column of its row cannot be read (requests.ts toRequest): no decision offered either
    const unreadable = (given as { unreadable?: string }).unreadable;
    if (unreadable !== undefined) throw new Error(unreadable);
    return reviewCard(given, csrf, passkey);
  } catch (e) {
    return html`<article class="card" data-testid="unreadable-request" data-request-id="${given.request}">
    <header><h2>request <code>${storedText(given.request)}</code></h2></header>
    <p class="error">${
      (given as { unreadable?: string }).unreadable !== undefined
        ? "Its row in the store"
        : "Its stored review"
    } cannot be read (${storedSentence((e as Error).message)}). The gateway writes the request to the store, and something rewrote it: the request no longer matches what was written, so it can be neither approved nor denied, here or with <code>portcullis approve</code>/<code>deny</code>. Its call is refused when its hold ends, and the request expires at ${storedText(given.expiresAt)}. <code>portcullis audit verify</code> checks the audit chain.</p>
  </article>`;
  }
}

/**
 * Whether a call waits on the request right now, as its gateway recorded it (callWaitText), with
 * `data-call-waiting` "yes", "no" or "unknown"; nothing for a request not listed as pending.
 */
function callWaits(
  req: Partial<Pick<PendingRequest, "waiting" | "callWaiting" | "callWaitingSince" | "callLeft">> &
    Pick<ApprovalRequest, "mode">,
): Html | string {
  const text = listedCallWaitText(req);
  if (text === null) return "";
  const state = req.callWaiting === null ? "unknown" : req.callWaiting ? "yes" : "no";
  return html`<p class="call-wait call-wait-${state}" data-testid="call-wait" data-call-waiting="${state}">${text}</p>`;
}

/** An approval is bound to the epoch its request named: once the server left it, it covers nothing. */
function epochEnded(epoch: string, now: string | null | undefined): Html | string {
  if (!now) return "";
  return html`<p class="error" data-testid="epoch-ended">The server was replaced since this request was made: its execution epoch is now <code>${storedText(now)}</code>, not <code>${storedText(epoch)}</code>. An approval is bound to the epoch its request named, so it covers nothing now; the call is refused as stale.</p>`;
}

/** The mark of a decision no gateway honours (ShownDecisions), or nothing. */
export function notHonouredNote(why: string | null): Html | string {
  return why === null
    ? ""
    : html`<p class="error" data-testid="not-honoured">${storedSentence(notHonoured(why))}</p>`;
}

function decided(req: ApprovalRequest): Html {
  return html`<p class="outcome">${storedText(req.state)}${req.decidedAt ? html` at ${storedText(req.decidedAt)}` : ""}${
    req.decidedBy ? html` by ${storedText(req.decidedBy)}` : ""
  }${req.reason ? html` — ${storedText(req.reason)}` : ""}${req.grant ? html` (grant <code>${storedText(req.grant)}</code>)` : ""}</p>`;
}
