/**
 * The console's passkey routes: registering (after the passphrase), logging in, deciding a
 * request, listing and removing. The browser side is /static/console.js with the
 * @simplewebauthn/browser bundle, served from node_modules (never a CDN). Everything that decides
 * whether a passkey proves anything is src/approval/passkey.ts; here we keep each ceremony's
 * server-side half (its challenge, the prepared decision, the signer of a registration) for two
 * minutes, for one use, bound to the session that started it (or, at login, to this console).
 *
 * Every ceremony runs on the passkey origin (http://localhost:PORT, passkeyOrigin.ts): a JSON
 * route reached at 127.0.0.1 is refused, a page is redirected there.
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import type { AuthenticationResponseJSON, RegistrationResponseJSON } from "@simplewebauthn/server";
import {
  completePasskeyDecision,
  finishPasskeyRegistration,
  listPasskeys,
  PasskeyError,
  type PreparedPasskeyDecision,
  passkeyLoginOptions,
  passkeyRegistrationOptions,
  preparePasskeyDecision,
  removePasskey,
  verifyPasskeyLogin,
} from "../approval/passkey.js";
import { DecisionError, getRequest } from "../approval/requests.js";
import type { DecisionSigner } from "../keyring/approver.js";
import { decisionReason } from "../util/cut.js";
import { assetRoute } from "./assetPaths.js";
import { answeredChallenge, Ceremonies } from "./ceremonies.js";
import { by, cookie, page, proofProblem, refuseWithoutGateway, safeNext } from "./handlers.js";
import { cookieValues, redirect } from "./http.js";
import { onPasskeyOrigin, PASSKEY_RP_ID, PASSKEY_RP_NAME, passkeyOrigin } from "./passkeyOrigin.js";
import { passkeysBody } from "./passkeyPages.js";
import type { ConsoleApp, Route, RouteContext } from "./routes.js";
import { type ConsoleSession, loginCookie, sameTokenAsAny, sessionCookie } from "./sessions.js";
import { UNVOUCHED_FIELD, unvouchedRefusal } from "./vouched.js";

/** at most this many login ceremonies in flight (each is two requests from a page of ours) */
const MAX_LOGINS = 32;

interface SessionCeremonies {
  registrations: Ceremonies<{ signer: DecisionSigner }>;
  decisions: Ceremonies<PreparedPasskeyDecision>;
}

const bySession = new WeakMap<ConsoleSession, SessionCeremonies>();
const logins = new WeakMap<ConsoleApp, Ceremonies<true>>();

function ceremoniesOf(s: ConsoleSession): SessionCeremonies {
  let c = bySession.get(s);
  if (!c) {
    c = { registrations: new Ceremonies(4), decisions: new Ceremonies(16) };
    bySession.set(s, c);
  }
  return c;
}

function loginsOf(app: ConsoleApp): Ceremonies<true> {
  let c = logins.get(app);
  if (!c) {
    c = new Ceremonies(MAX_LOGINS);
    logins.set(app, c);
  }
  return c;
}

function sendJson(ctx: RouteContext, status: number, body: unknown): void {
  ctx.res.statusCode = status;
  ctx.res.setHeader("Content-Type", "application/json; charset=utf-8");
  ctx.res.end(JSON.stringify(body));
}

function refuse(ctx: RouteContext, status: number, error: string): void {
  sendJson(ctx, status, { error });
}

function field(json: unknown, name: string): unknown {
  return json && typeof json === "object" ? (json as Record<string, unknown>)[name] : undefined;
}

/** JSON routes run only on the passkey origin: an RP id of localhost is checked against it. */
function wrongOrigin(ctx: RouteContext): boolean {
  if (onPasskeyOrigin(ctx.req, ctx.app.port)) return false;
  refuse(ctx, 400, `passkeys work only at ${passkeyOrigin(ctx.app.port)} (browsers refuse an IP address)`);
  return true;
}

function passkeyProblem(e: unknown): string | null {
  if (e instanceof PasskeyError || e instanceof DecisionError) return e.message;
  return null;
}

// ---- the page: list, register, remove --------------------------------------------------------

function passkeysPage(ctx: RouteContext, status = 200, problem?: string): void {
  const { app } = ctx;
  const s = ctx.session!;
  const held = app.sessions.held(s);
  page(
    ctx,
    status,
    "Passkeys",
    passkeysBody(listPasskeys(app.db, app.stateDir), s.csrf, held, problem),
    "/passkeys",
  );
}

function showPasskeys(ctx: RouteContext) {
  const { app } = ctx;
  // Registration needs the passkey origin; a session at 127.0.0.1 is not one there: log in again.
  if (!onPasskeyOrigin(ctx.req, app.port)) {
    ctx.req.resume();
    ctx.res.statusCode = 303;
    ctx.res.setHeader("Location", `${passkeyOrigin(app.port)}/passkeys`);
    ctx.res.end();
    return;
  }
  if (!ctx.session) return redirect(ctx.res, "/login?next=%2Fpasskeys");
  passkeysPage(ctx);
}

/**
 * Options for navigator.credentials.create. Adding a passkey needs the approver key (it signs
 * the pin): the one held for the proven window, or the passphrase given with this request.
 */
async function registrationOptions(ctx: RouteContext): Promise<void> {
  if (wrongOrigin(ctx)) return;
  const { app } = ctx;
  const s = ctx.session!;
  let signer = app.sessions.proof(s, ctx.proofKey)?.signer ?? null;
  let proofKey: string | null = null;
  if (!signer) {
    const passphrase = field(ctx.json, "passphrase");
    // The form was drawn while a proof was held (its field left empty) and that proof ended or
    // was dropped since: say why, and try nothing (no attempt counted).
    if (typeof passphrase !== "string" || passphrase === "") {
      return refuse(
        ctx,
        401,
        `adding a passkey needs the passphrase: ${app.sessions.passphraseNeeded(s, "to add one")}`,
      );
    }
    try {
      const proof = await app.prove(passphrase, ctx.ticketed);
      proofKey = app.sessions.proven(s, proof);
      signer = proof.signer;
    } catch (e) {
      const problem = proofProblem(e);
      if (problem === null) throw e;
      return refuse(ctx, 401, problem);
    }
  }
  const options = await passkeyRegistrationOptions(
    { rpId: PASSKEY_RP_ID, rpName: PASSKEY_RP_NAME, userName: "approver" },
    app.db,
  );
  ceremoniesOf(s).registrations.put(options.challenge, { signer });
  // A passphrase proven here: its proof key, for the page's script to keep (sessions.ts).
  sendJson(ctx, 200, proofKey === null ? { options } : { options, proofKey });
}

async function register(ctx: RouteContext): Promise<void> {
  if (wrongOrigin(ctx)) return;
  const { app } = ctx;
  const response = field(ctx.json, "response") as RegistrationResponseJSON;
  const challenge = answeredChallenge(response);
  const started = ceremoniesOf(ctx.session!).registrations.take(challenge);
  if (!started || challenge === null) {
    return refuse(ctx, 400, "this registration was not started here, or it took too long: start again");
  }
  const name = field(ctx.json, "name");
  try {
    const added = await finishPasskeyRegistration(app.db, app.stateDir, started.signer, response, {
      challenge,
      origin: passkeyOrigin(app.port),
      rpId: PASSKEY_RP_ID,
      ...(typeof name === "string" ? { name } : {}),
    });
    app.log.info(`passkey ${added.credentialId} added (audit record ${added.seq})`);
    sendJson(ctx, 200, { passkey: added.credentialId, location: "/passkeys" });
  } catch (e) {
    const problem = passkeyProblem(e);
    if (problem === null) throw e;
    refuse(ctx, 400, problem);
  }
}

/** Needs no proof, like revoking a grant: it only takes authority away. */
function remove(ctx: RouteContext) {
  const { app } = ctx;
  const id = ctx.form!.get("passkey") ?? "";
  try {
    const seq = removePasskey(app.db, app.stateDir, id, by("passkey removed"));
    app.log.info(`passkey ${id} removed (audit record ${seq})`);
  } catch (e) {
    if (!(e instanceof PasskeyError)) throw e;
    return passkeysPage(ctx, e.kind === "not-found" ? 404 : 409, e.message);
  }
  // Sessions it opened prove nobody any more (this one too, when it was one of them).
  app.sessions.endOpenedWith(id);
  redirect(ctx.res, ctx.session && app.sessions.get(ctx.session.id, false) ? "/passkeys" : "/login");
}

// ---- logging in ------------------------------------------------------------------------------

/** Pre-session: the login form's own token (double-submitted in its cookie) stands for CSRF. */
function loginTokenOk(ctx: RouteContext): boolean {
  const given = ctx.req.headers["x-csrf-token"];
  const ok = sameTokenAsAny(
    typeof given === "string" ? given : null,
    cookieValues(ctx.req, loginCookie(ctx.app.port)),
  );
  if (!ok) refuse(ctx, 403, "the login form expired or did not come from this console; reload it");
  return ok;
}

function loginOptions(ctx: RouteContext) {
  if (wrongOrigin(ctx) || !loginTokenOk(ctx)) return;
  const options = passkeyLoginOptions(ctx.app.db, { rpId: PASSKEY_RP_ID });
  if (!options.allowCredentials?.length) return refuse(ctx, 409, "no passkey is registered");
  loginsOf(ctx.app).put(options.challenge, true);
  sendJson(ctx, 200, { options });
}

async function loginWithPasskey(ctx: RouteContext): Promise<void> {
  if (wrongOrigin(ctx) || !loginTokenOk(ctx)) return;
  const { app } = ctx;
  const response = field(ctx.json, "response") as AuthenticationResponseJSON;
  const challenge = answeredChallenge(response);
  if (!loginsOf(app).take(challenge) || challenge === null) {
    return refuse(ctx, 400, "this login was not started here, or it took too long: try again");
  }
  let who: { credentialId: string; name: string };
  try {
    who = await verifyPasskeyLogin(app.db, app.stateDir, response, {
      challenge,
      origin: passkeyOrigin(app.port),
      rpId: PASSKEY_RP_ID,
    });
  } catch (e) {
    if (!(e instanceof PasskeyError)) throw e;
    app.log.warn("a passkey login failed");
    return refuse(ctx, 401, e.message);
  }
  const s = app.sessions.create(null, who.credentialId);
  app.log.info(`logged in with passkey ${who.credentialId}`);
  ctx.res.setHeader("Set-Cookie", [
    cookie(sessionCookie(app.port), s.id),
    cookie(loginCookie(app.port), "", "/login", true),
  ]);
  const next = field(ctx.json, "next");
  sendJson(ctx, 200, { location: safeNext(typeof next === "string" ? next : null) });
}

// ---- deciding a request ----------------------------------------------------------------------

const DECISIONS: Record<string, { decision: "approve" | "deny"; mode?: "session" | "call" }> = {
  "approve-session": { decision: "approve", mode: "session" },
  "approve-call": { decision: "approve", mode: "call" },
  deny: { decision: "deny" },
};

/** The decision exactly as it will be recorded; its digest is the challenge the passkey signs. */
function decisionOptions(ctx: RouteContext) {
  if (wrongOrigin(ctx)) return;
  const { app } = ctx;
  const id = ctx.params[0]!;
  const action = String(field(ctx.json, "action") ?? "");
  const chosen = Object.hasOwn(DECISIONS, action) ? DECISIONS[action] : undefined;
  if (!chosen) return refuse(ctx, 400, "choose approve or deny");
  const reasonGiven = field(ctx.json, "reason");
  const reason = typeof reasonGiven === "string" ? decisionReason(reasonGiven) : "";
  // the digest of the review the page showed (card.ts): an approval is prepared on it or not at all
  const reviewed = field(ctx.json, "reviewed");
  if (chosen.decision === "approve" && (typeof reviewed !== "string" || reviewed === ""))
    return refuse(ctx, 400, "reload the request's page and decide there");
  try {
    const req = getRequest(app.db, id);
    if (!req) throw new DecisionError(`there is no approval request ${id}`, "not-found");
    refuseWithoutGateway(app, req);
    // an approval of a row its gateway does not vouch for needs the card's box ticked (vouched.ts)
    const unconfirmed =
      chosen.decision === "approve" ? unvouchedRefusal(app.db, req, field(ctx.json, UNVOUCHED_FIELD)) : null;
    if (unconfirmed !== null) return refuse(ctx, 409, unconfirmed);
    const prepared = preparePasskeyDecision(app.db, id, chosen.decision, {
      ...(chosen.mode ? { mode: chosen.mode } : {}),
      ...(chosen.decision === "deny" && reason ? { reason } : {}),
      ...(chosen.decision === "approve" ? { reviewed: reviewed as string } : {}),
      rpId: PASSKEY_RP_ID,
    });
    ceremoniesOf(ctx.session!).decisions.put(prepared.options.challenge, prepared);
    sendJson(ctx, 200, { options: prepared.options });
  } catch (e) {
    if (!(e instanceof DecisionError)) throw e;
    refuse(ctx, e.kind === "not-found" ? 404 : 409, `${e.message}`);
  }
}

async function decideWithPasskey(ctx: RouteContext): Promise<void> {
  if (wrongOrigin(ctx)) return;
  const { app } = ctx;
  const id = ctx.params[0]!;
  const response = field(ctx.json, "response") as AuthenticationResponseJSON;
  // Taken only by the route of the request it was prepared for (ceremonies.ts, `belongs`).
  const prepared = ceremoniesOf(ctx.session!).decisions.take(
    answeredChallenge(response),
    (p) => p.request === id,
  );
  if (!prepared) {
    return refuse(ctx, 400, "this decision was not prepared here, or it took too long: decide again");
  }
  try {
    const result = await completePasskeyDecisionFor(app, prepared, response);
    app.log.info(
      `${result.grant ? `approved ${id} with a passkey (grant ${result.grant.grant})` : `denied ${id} with a passkey`}`,
    );
    sendJson(ctx, 200, { location: `/requests/${encodeURIComponent(id)}` });
  } catch (e) {
    const problem = passkeyProblem(e);
    if (problem === null) throw e;
    refuse(ctx, e instanceof PasskeyError ? 401 : 409, problem);
  }
}

async function completePasskeyDecisionFor(
  app: ConsoleApp,
  prepared: PreparedPasskeyDecision,
  response: AuthenticationResponseJSON,
) {
  const req = getRequest(app.db, prepared.request);
  if (req) refuseWithoutGateway(app, req);
  return completePasskeyDecision(app.db, prepared, response, {
    origin: passkeyOrigin(app.port),
    rpId: PASSKEY_RP_ID,
    stateDir: app.stateDir,
  });
}

// ---- the browser library, served locally ------------------------------------------------------

let bundle: string | null = null;

/** @simplewebauthn/browser's UMD bundle (defines SimpleWebAuthnBrowser), read once. */
function webauthnBundle(): string {
  if (bundle === null) {
    const main = createRequire(import.meta.url).resolve("@simplewebauthn/browser");
    bundle = readFileSync(join(dirname(main), "..", "dist", "bundle", "index.umd.min.js"), "utf8");
  }
  return bundle;
}

const ID = "([0-9A-Za-z_-]{1,64})";

export const PASSKEY_ROUTES: Route[] = [
  {
    method: "GET",
    path: assetRoute("webauthn.js"),
    session: false,
    handle: ({ res }) => {
      res.statusCode = 200;
      res.setHeader("Content-Type", "text/javascript; charset=utf-8");
      res.end(webauthnBundle());
    },
  },
  // session: false so that a visit at 127.0.0.1 is sent to localhost before any login
  { method: "GET", path: /^\/passkeys$/, session: false, handle: showPasskeys },
  { method: "POST", path: /^\/passkeys\/options$/, session: true, body: "json", handle: registrationOptions },
  { method: "POST", path: /^\/passkeys\/register$/, session: true, body: "json", handle: register },
  { method: "POST", path: /^\/passkeys\/remove$/, session: true, handle: remove },
  { method: "POST", path: /^\/login\/passkey\/options$/, session: false, body: "json", handle: loginOptions },
  { method: "POST", path: /^\/login\/passkey$/, session: false, body: "json", handle: loginWithPasskey },
  {
    method: "POST",
    path: new RegExp(`^/requests/${ID}/passkey/options$`),
    session: true,
    body: "json",
    handle: decisionOptions,
  },
  {
    method: "POST",
    path: new RegExp(`^/requests/${ID}/passkey$`),
    session: true,
    body: "json",
    handle: decideWithPasskey,
  },
];
