/**
 * The console's own routes (the table the server dispatches on). Decisions go through
 * decideRequest, the CLI's path, signed with the approver key of a passphrase proof.
 */

import { userInfo } from "node:os";
import { expireAbandoned } from "../approval/abandoned.js";
import { activeGrants, GrantError, getGrant, revokeGrant } from "../approval/grants.js";
import { argumentsPartlyHidden, partlyHiddenReason } from "../approval/hiddenArguments.js";
import { passkeyRows } from "../approval/passkeyRows.js";
import { perCallOnlyReason } from "../approval/perCallOnly.js";
import { ApproverKeyMismatchError } from "../approval/pin.js";
import {
  type ApprovalRequest,
  type Decision,
  DecisionError,
  decideRequest,
  getRequest,
  listedPending,
  pendingPage,
} from "../approval/requests.js";
import { getRun } from "../approval/runs.js";
import { epochMovedOn } from "../approval/serverEpoch.js";
import { ShownDecisions } from "../approval/shownDecisions.js";
import { listGateways } from "../gateway/registry.js";
import { KeyringError } from "../keyring/keyring.js";
import { storeFailure } from "../store/db.js";
import { storeAdvice } from "../store/storeAdvice.js";
import { decisionReason } from "../util/cut.js";
import { assetRoute, CONSOLE_SCRIPT } from "./assetPaths.js";
import { CONSOLE_CSS, REFRESH_HEADER } from "./assets.js";
import { auditData } from "./audit.js";
import { labelAskedIn } from "./catalogLinks.js";
import { type Html, html } from "./html.js";
import { cookieValues, redirect, sendHtml } from "./http.js";
import {
  auditBody,
  catalogBody,
  grantsBody,
  layout,
  loginPage,
  messageBody,
  proofBody,
  requestBody,
  serversBody,
} from "./pages.js";
import { onPasskeyOrigin, passkeyOrigin } from "./passkeyOrigin.js";
import type { PasskeyDecisions } from "./passkeyPages.js";
import { LoginThrottled, PassphraseMissing, type Proof } from "./proof.js";
import { CARDS_SHOWN, requestsBody } from "./requestList.js";
import type { Route, RouteContext } from "./routes.js";
import { type ConsoleSession, loginCookie, sameTokenAsAny, sessionCookie, token } from "./sessions.js";
import { UNVOUCHED_FIELD, unvouchedRefusal, vouchedState, withVouched } from "./vouched.js";

const ID = "([0-9A-Za-z_-]{1,64})";

export function page(
  ctx: RouteContext,
  status: number,
  title: string,
  body: Html,
  active?: string,
  handoff?: { proofKey: string; next?: string },
): void {
  const s = ctx.session!;
  const held = ctx.app.sessions.held(s);
  // Why a held proof was dropped (the keys were rotated), said once, by a page the human opens:
  // the script's own refetch swaps only <main>, so its nav bar would say it to nobody.
  const refetch = ctx.req.headers[REFRESH_HEADER] === "1";
  const proofDropped = refetch ? null : (ctx.app.sessions.droppedNotice(s)?.cause ?? null);
  const provenFor = held ? Math.max(0, Math.ceil((s.proofUntil - Date.now()) / 1000)) : null;
  // A page answering a POST (a proof form, a message) is not fetched again: that would be a GET
  // of a POST-only path.
  const live = ctx.req.method === "GET" || ctx.req.method === "HEAD" ? ctx.app.changes.current() : undefined;
  const passkeyDecisions = !held && passkeyDecisionsOf(ctx)?.here === true;
  // A page another site opened (another loopback port is the same *site*: its navigation carries
  // the session cookie) decides nothing until the human opens it from the console itself: that
  // page could have put it under a click the human meant for itself (double-click-jacking).
  const from = ctx.req.headers["sec-fetch-site"];
  const foreign = ctx.req.method === "GET" && (from === "cross-site" || from === "same-site");
  sendHtml(
    ctx.res,
    status,
    layout(
      {
        title,
        csrf: s.csrf,
        provenFor,
        proofDropped,
        passkeyDecisions,
        active,
        live,
        handoff,
        ...(foreign ? { openedFrom: `${ctx.url.pathname}${ctx.url.search}` } : {}),
      },
      body,
    ),
  );
}

/**
 * After a passphrase was proven by this request: `next`, by way of a page that hands the new
 * proof key to the console's script (sessions.ts); a plain redirect when nothing is held.
 */
export function handOver(ctx: RouteContext, proofKey: string | null, next: string): void {
  if (proofKey === null) {
    redirect(ctx.res, next);
    return;
  }
  const body = html`<p class="message" role="status">Passphrase proven. <a href="${next}">Continue</a></p>`;
  sendHtml(ctx.res, 200, layout({ title: "Proven", handoff: { proofKey, next } }, body));
}

/**
 * How decisions are proven on this page when no passphrase proof is held and a passkey is
 * registered: by the passkey here (at localhost), or by a link there (at 127.0.0.1). The rows
 * only choose what to show: whether a passkey counts is decided when its answer is verified.
 */
function passkeyDecisionsOf(ctx: RouteContext): PasskeyDecisions | undefined {
  const { app } = ctx;
  if (app.sessions.held(ctx.session!) || passkeyRows(app.db).length === 0) return undefined;
  return onPasskeyOrigin(ctx.req, app.port) ? { here: true } : { here: false, url: passkeyOrigin(app.port) };
}

export function cookie(name: string, value: string, path = "/", clear = false): string {
  return `${name}=${value}; HttpOnly; SameSite=Strict; Path=${path}${clear ? "; Max-Age=0" : ""}`;
}

/** Where to go after logging in: one of our own paths, never a URL from input. */
export function safeNext(next: string | null): string {
  return next && /^\/[A-Za-z0-9/_-]{0,200}$/.test(next) && !next.startsWith("//") ? next : "/";
}

export function by(how: string): string {
  let user = "unknown user";
  try {
    user = userInfo().username;
  } catch {
    /* no passwd entry */
  }
  return `${user} via the console (pid ${process.pid}, ${how})`;
}

function loginForm(ctx: RouteContext, status: number, problem?: string): void {
  const t = token();
  ctx.res.setHeader("Set-Cookie", cookie(loginCookie(ctx.app.port), t, "/login"));
  const next = safeNext(ctx.url.searchParams.get("next") ?? ctx.form?.get("next") ?? null);
  const passkey =
    passkeyRows(ctx.app.db).length === 0
      ? null
      : { here: onPasskeyOrigin(ctx.req, ctx.app.port), url: passkeyOrigin(ctx.app.port) };
  sendHtml(ctx.res, status, loginPage(t, next, problem, passkey));
}

export function proofProblem(e: unknown): string | null {
  if (e instanceof ApproverKeyMismatchError) return e.message;
  if (e instanceof KeyringError) return e.message;
  if (e instanceof LoginThrottled) return e.message;
  if (e instanceof PassphraseMissing) return e.message;
  return null;
}

async function login(ctx: RouteContext): Promise<void> {
  const { form, app } = ctx;
  if (!sameTokenAsAny(form!.get("csrf"), cookieValues(ctx.req, loginCookie(app.port)))) {
    return loginForm(ctx, 403, "the login form expired or did not come from this console; try again");
  }
  const passphrase = form!.get("passphrase") ?? "";
  let proof: Proof;
  try {
    proof = await app.prove(passphrase, ctx.ticketed);
  } catch (e) {
    const problem = proofProblem(e);
    if (problem === null) throw e;
    // a form sent empty is asked for the passphrase again: no attempt was made, none failed
    if (!(e instanceof PassphraseMissing)) app.log.warn("a login failed");
    const status = e instanceof LoginThrottled ? 429 : e instanceof PassphraseMissing ? 400 : 401;
    return loginForm(ctx, status, problem);
  }
  const s = app.sessions.create(proof);
  ctx.res.setHeader("Set-Cookie", [
    cookie(sessionCookie(app.port), s.id),
    cookie(loginCookie(app.port), "", "/login", true),
  ]);
  handOver(ctx, s.proofKey, safeNext(form!.get("next")));
}

const ACTIONS: Record<string, Decision | "deny"> = {
  "approve-session": { approve: true, for: "session" },
  "approve-call": { approve: true, for: "call" },
  deny: "deny",
};

/**
 * Closes the overdue pending requests and those a dead gateway left (src/approval/abandoned.ts)
 * before a list or a request is drawn; best effort: a failure to close leaves them as they were.
 */
function closeAbandoned(app: RouteContext["app"]): void {
  try {
    expireAbandoned(app.db, app.stateDir, `the console (pid ${process.pid})`);
  } catch (e) {
    // the store's sentence (the file, the cause: another process holding its lock, a full disk)
    // and the one thing to do, not SQLite's "database is locked", which names neither
    const failure = storeFailure(e);
    app.log.warn(
      `could not close abandoned approval requests: ${failure ? `${failure.message} To fix it: ${storeAdvice(failure)}.` : (e as Error).message}`,
    );
  }
}

/** A decision nobody would use (the gateway that asked is gone) is refused before it is signed. */

export function refuseWithoutGateway(app: RouteContext["app"], req: ApprovalRequest): void {
  const run = getRun(app.db, req.agentRun);
  if (req.state === "pending" && !run?.gatewayAlive) {
    throw new DecisionError(
      `the gateway that asked for ${req.request} is no longer running; nothing would use the decision`,
      "not-pending",
    );
  }
}

async function decide(ctx: RouteContext): Promise<void> {
  const { app, form, params } = ctx;
  const s = ctx.session as ConsoleSession;
  const id = params[0]!;
  const req = getRequest(app.db, id);
  if (!req)
    return page(ctx, 404, "Not found", messageBody("Not found", `there is no approval request ${id}`));
  const action = form!.get("action") ?? "";
  // own keys only: "constructor" is a key of every object
  const chosen = Object.hasOwn(ACTIONS, action) ? ACTIONS[action] : undefined;
  if (!chosen) return page(ctx, 400, "Bad request", messageBody("Bad request", "choose approve or deny"));
  const reason = decisionReason(form!.get("reason") ?? "");
  // The digest of the review the page showed: an approval is made on that review or not at all.
  const reviewed = form!.get("reviewed") ?? "";
  if (chosen !== "deny" && reviewed === "")
    return page(
      ctx,
      400,
      "Bad request",
      messageBody("Bad request", "reload the request's page and decide there"),
    );
  // Refused before a passphrase is asked or checked, as `approve` refuses it (decidableRequest
  // refuses it too): the page never offers this button, so only a forged form sends it, and it
  // must not get a passphrase prompt, a proof made or an attempt counted before its refusal.
  if (chosen !== "deny" && chosen.approve && chosen.for === "session" && req.mode === "per-call") {
    const why = `${perCallOnlyReason(req)}. Nothing was approved.`;
    return page(ctx, 409, "Not decided", messageBody("Not decided", why, `/requests/${id}`));
  }
  // Refused before a passphrase is asked, as `approve` refuses it (decidableRequest refuses it too)
  if (chosen !== "deny" && chosen.approve && chosen.for === "call") {
    const partlyHidden = argumentsPartlyHidden(req.review);
    if (partlyHidden.length > 0) {
      const why = `${partlyHiddenReason(partlyHidden, id)}; nothing was approved.`;
      return page(ctx, 409, "Not decided", messageBody("Not decided", why, `/requests/${id}`));
    }
  }
  // Refused before a passphrase is asked: an approval of a row its gateway does not vouch for
  // needs the card's box ticked (vouched.ts); a denial does not (deny first)
  const unconfirmed = chosen === "deny" ? null : unvouchedRefusal(app.db, req, form!.get(UNVOUCHED_FIELD));
  if (unconfirmed !== null)
    return page(ctx, 409, "Not decided", messageBody("Not decided", `${unconfirmed}.`, `/requests/${id}`));
  // `perCallProof: "fresh"`: one call of a per-call tool is approved on a proof this very request
  // brings, never on the one held since an earlier passphrase (a denial removes authority: it may).
  const freshNeeded =
    app.perCallProof === "fresh" &&
    chosen !== "deny" &&
    chosen.approve &&
    chosen.for === "call" &&
    req.mode === "per-call";
  let proof = freshNeeded ? null : app.sessions.proof(s, ctx.proofKey);
  let how = "passphrase verified at login";
  let proofKey: string | null = null;
  if (!proof) {
    const passphrase = form!.get("passphrase");
    const asked = (status: number, problem?: string) =>
      page(
        ctx,
        status,
        "Prove it is you",
        proofBody(
          req,
          action,
          reason,
          s.csrf,
          reviewed,
          problem,
          freshNeeded,
          form!.get(UNVOUCHED_FIELD) ?? "",
        ),
      );
    // No passphrase is no attempt: the form asks for it (a card's buttons send none). A proof
    // dropped before its window ended (the keys were rotated): the form says why it asks.
    if (!passphrase) return asked(200, app.sessions.held(s) ? undefined : s.proofDropped?.why);
    try {
      proof = await app.prove(passphrase, ctx.ticketed);
    } catch (e) {
      const problem = proofProblem(e);
      if (problem === null) throw e;
      return asked(401, problem);
    }
    proofKey = app.sessions.proven(s, proof);
    how = "passphrase verified";
  }
  const decision: Decision =
    chosen === "deny"
      ? reason
        ? { approve: false, reason }
        : { approve: false }
      : chosen.approve
        ? { ...chosen, reviewed }
        : chosen;
  try {
    refuseWithoutGateway(app, req);
    const result = decideRequest(app.db, id, decision, by(how), proof.signer, app.stateDir);
    app.log.info(
      `${result.grant ? `approved ${id} (grant ${result.grant.grant}, ${result.grant.mode})` : `denied ${id}`}${
        result.epochMovedOn
          ? `; its epoch ${req.executionEpoch} ended (now ${result.epochMovedOn}): it covers nothing`
          : ""
      }`,
    );
  } catch (e) {
    if (!(e instanceof DecisionError)) throw e;
    // Proving the passphrase above replaced the session's proof key even though nothing was
    // decided: the page must still get the new one, or the held proof is lost to it.
    const handoff = proofKey === null ? undefined : { proofKey };
    const body = messageBody("Not decided", `${e.message}.`, `/requests/${id}`);
    return page(ctx, 409, "Not decided", body, undefined, handoff);
  }
  handOver(ctx, proofKey, `/requests/${id}`);
}

function revoke(ctx: RouteContext): void {
  const { app, params } = ctx;
  const id = params[0]!;
  const g = getGrant(app.db, id);
  const active = activeGrants(app.db).some((a) => a.grant === id);
  if (!g || !active) {
    const why = !g ? `there is no grant ${id}` : `grant ${id} is no longer active`;
    page(ctx, g ? 409 : 404, "Not revoked", messageBody("Not revoked", why, "/grants"));
    return;
  }
  try {
    revokeGrant(app.db, id, by("revoked"), app.stateDir);
  } catch (e) {
    if (!(e instanceof GrantError)) throw e;
    page(ctx, 409, "Not revoked", messageBody("Not revoked", e.message, "/grants"));
    return;
  }
  app.log.info(`revoked ${id}`);
  redirect(ctx.res, "/grants");
}

/**
 * The audit opened: with the passphrase given, or (none given) the proof held for this key. None
 * given and no proof for it (the form was drawn while one was held, and it ended or was dropped
 * since): the passphrase is asked for, saying why; nothing is tried, so no attempt is counted.
 */
async function openAudit(ctx: RouteContext): Promise<void> {
  const { app, form } = ctx;
  const s = ctx.session!;
  const passphrase = form!.get("passphrase") ?? "";
  // which page of the Sessions table (thousands of runs may be in the log: auditSessions.ts)
  const from = intParam(form!.get("sessions-from")) ?? 0;
  const held = passphrase === "" ? app.sessions.proof(s, ctx.proofKey) : null;
  if (held)
    return page(ctx, 200, "Audit", auditBody(auditData(app.db, held.auditKey, from), s.csrf, true), "/audit");
  if (passphrase === "") {
    const d = {
      ...auditData(app.db, null),
      openProblem: app.sessions.passphraseNeeded(s, "to open the audit"),
    };
    return page(ctx, 200, "Audit", auditBody(d, s.csrf, app.sessions.held(s)), "/audit");
  }
  try {
    const proof = await app.prove(passphrase, ctx.ticketed);
    const proofKey = app.sessions.proven(s, proof);
    const opened = auditBody(auditData(app.db, proof.auditKey, from), s.csrf, proofKey !== null);
    return page(ctx, 200, "Audit", opened, "/audit", proofKey === null ? undefined : { proofKey });
  } catch (e) {
    const problem = proofProblem(e);
    if (problem === null) throw e;
    const d = { ...auditData(app.db, null), openProblem: problem };
    return page(ctx, 401, "Audit", auditBody(d, s.csrf, app.sessions.held(s)), "/audit");
  }
}

/** Server-sent events: `change` when the store's requests, grants, gateways or catalogs change. */
function events(ctx: RouteContext): void {
  const { res, app, req } = ctx;
  const s = ctx.session!;
  res.writeHead(200, { "Content-Type": "text/event-stream", Connection: "keep-alive" });
  res.write("retry: 2000\n\n");
  let beat = 0;
  const changed = () => res.write("event: change\ndata: {}\n\n");
  const stop = app.changes.subscribe(changed);
  // The page was rendered at state `since`: anything that changed before this stream opened.
  const since = ctx.url.searchParams.get("since");
  if (since !== null && since !== app.changes.current()) changed();
  const timer = setInterval(() => {
    // The stream does not keep the session alive; it ends when the session does.
    if (!app.sessions.get(s.id, false)) {
      res.write("event: ended\ndata: {}\n\n");
      return res.end();
    }
    if (++beat % 15 === 0) res.write(": keep-alive\n\n");
  }, 1000);
  const done = () => {
    clearInterval(timer);
    stop();
  };
  req.on("close", done);
  res.on("close", done);
}

function asset(type: string, body: string): Route["handle"] {
  return ({ res }) => {
    res.statusCode = 200;
    res.setHeader("Content-Type", type);
    res.end(body);
  };
}

function intParam(v: string | null): number | null {
  return v !== null && /^\d{1,9}$/.test(v) ? Number(v) : null;
}

export const CONSOLE_ROUTES: Route[] = [
  {
    method: "GET",
    path: assetRoute("console.js"),
    session: false,
    handle: asset("text/javascript; charset=utf-8", CONSOLE_SCRIPT),
  },
  {
    method: "GET",
    path: assetRoute("console.css"),
    session: false,
    handle: asset("text/css; charset=utf-8", CONSOLE_CSS),
  },
  {
    method: "GET",
    path: /^\/favicon\.ico$/,
    session: false,
    handle: ({ res }) => {
      res.statusCode = 204;
      res.end();
    },
  },
  {
    method: "GET",
    path: /^\/login$/,
    session: false,
    handle: (ctx) => {
      const live = ctx.app.sessions.fromCookie(cookieValues(ctx.req, sessionCookie(ctx.app.port)));
      if (live) return redirect(ctx.res, safeNext(ctx.url.searchParams.get("next")));
      loginForm(ctx, 200);
    },
  },
  { method: "POST", path: /^\/login$/, session: false, handle: login },
  {
    method: "POST",
    path: /^\/logout$/,
    session: true,
    handle: (ctx) => {
      ctx.app.sessions.end(ctx.session!);
      ctx.res.setHeader("Set-Cookie", cookie(sessionCookie(ctx.app.port), "", "/", true));
      redirect(ctx.res, "/login");
    },
  },
  {
    method: "GET",
    path: /^\/$/,
    session: true,
    handle: (ctx) => {
      closeAbandoned(ctx.app);
      const offset = intParam(ctx.url.searchParams.get("from")) ?? 0;
      const listed = pendingPage(ctx.app.db, offset, CARDS_SHOWN);
      // each card says whether its gateway vouches for its row (vouched.ts)
      const shown = { offset, total: listed.total, rows: withVouched(ctx.app.db, listed.rows) };
      page(ctx, 200, "Requests", requestsBody(shown, ctx.session!.csrf, passkeyDecisionsOf(ctx)), "/");
    },
  },
  {
    // the Requests page's form: one request's own page, by the ID a gateway printed
    method: "GET",
    path: /^\/requests$/,
    session: true,
    handle: (ctx) => {
      const id = (ctx.url.searchParams.get("id") ?? "").trim();
      if (new RegExp(`^${ID}$`).test(id)) return redirect(ctx.res, `/requests/${id}`);
      page(
        ctx,
        400,
        "Not found",
        messageBody(
          "Not found",
          "a request's ID is 1 to 64 letters, digits, '-' or '_', and the one given is not",
        ),
      );
    },
  },
  {
    method: "GET",
    path: new RegExp(`^/requests/${ID}$`),
    session: true,
    handle: (ctx) => {
      const id = ctx.params[0]!;
      // whether its gateway is alive and a call waits on it, for a request still pending
      closeAbandoned(ctx.app);
      const listed = listedPending(ctx.app.db, id);
      const req = getRequest(ctx.app.db, id);
      if (!req)
        return page(ctx, 404, "Not found", messageBody("Not found", `there is no approval request ${id}`));
      page(
        ctx,
        200,
        `Request ${id}`,
        requestBody(
          {
            ...req,
            waiting: listed?.waiting,
            callWaiting: listed?.callWaiting,
            callWaitingSince: listed?.callWaitingSince,
            callLeft: listed?.callLeft,
            epochMovedOn: epochMovedOn(ctx.app.db, req.executionEpoch),
            notHonoured: new ShownDecisions(ctx.app.db, ctx.app.stateDir).decision(req),
            vouched: listed ? vouchedState(ctx.app.db, listed) : null,
          },
          ctx.session!.csrf,
          passkeyDecisionsOf(ctx),
        ),
      );
    },
  },
  { method: "POST", path: new RegExp(`^/requests/${ID}/decide$`), session: true, handle: decide },
  {
    method: "GET",
    path: /^\/servers$/,
    session: true,
    handle: (ctx) => {
      const offset = intParam(ctx.url.searchParams.get("from")) ?? 0;
      page(ctx, 200, "Servers", serversBody(listGateways(ctx.app.db), offset), "/servers");
    },
  },
  {
    method: "GET",
    path: /^\/catalog$/,
    session: true,
    handle: (ctx) => {
      const q = ctx.url.searchParams;
      const body = catalogBody(
        ctx.app.db,
        labelAskedIn(q),
        intParam(q.get("from")),
        intParam(q.get("to")),
        intParam(q.get("labels-from")) ?? 0,
      );
      page(ctx, 200, "Catalog", body, "/catalog");
    },
  },
  {
    method: "GET",
    path: /^\/grants$/,
    session: true,
    handle: (ctx) =>
      page(
        ctx,
        200,
        "Grants",
        grantsBody(
          ctx.app.db,
          ctx.app.stateDir,
          ctx.session!.csrf,
          intParam(ctx.url.searchParams.get("from")) ?? 0,
        ),
        "/grants",
      ),
  },
  { method: "POST", path: new RegExp(`^/grants/${ID}/revoke$`), session: true, handle: revoke },
  {
    method: "GET",
    path: /^\/audit$/,
    session: true,
    // A GET opens nothing: the held proof is used only by a POST that brings its key.
    handle: (ctx) => {
      const held = ctx.app.sessions.held(ctx.session!);
      page(ctx, 200, "Audit", auditBody(auditData(ctx.app.db, null), ctx.session!.csrf, held), "/audit");
    },
  },
  { method: "POST", path: /^\/audit\/open$/, session: true, handle: openAudit },
  { method: "GET", path: /^\/events$/, session: true, handle: events },
];
