/**
 * The console's HTTP server: loopback only (127.0.0.1 and ::1), one state directory. Every request: security
 * headers, the Host check (DNS rebinding), then the route table; routes that need a session get
 * none without the session cookie; every POST needs the console's own Origin and the session's
 * CSRF token (the login form has its own pre-session token, double-submitted in a cookie). A GET
 * carrying the console's ticket trades it for a cookie first (ticket.ts).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { KeyringError } from "../keyring/keyring.js";
import { openStore } from "../store/db.js";
import { StoreFileLost, StoreFiles } from "../store/storeFiles.js";
import { closeStoreUnlessLost, watchStoreFiles } from "../store/storeWatch.js";
import { capConnections } from "../transport/httpConnections.js";
import { forwardingHeader } from "../util/forwarded.js";
import type { Logger } from "../util/log.js";
import { TICKET_PARAM } from "./address.js";
import { REFRESH_HEADER } from "./assets.js";
import { ChangeWatch } from "./changes.js";
import type { PerCallProof } from "./config.js";
import { CONSOLE_ROUTES } from "./handlers.js";
import {
  BodyError,
  consoleHosts,
  cookieValues,
  hostAllowed,
  originAllowed,
  parserRefusal,
  readForm,
  readJson,
  redirect,
  securityHeaders,
  sendText,
} from "./http.js";
import { PASSKEY_ROUTES } from "./passkeys.js";
import {
  LoginLimiter,
  LoginThrottled,
  PassphraseMissing,
  type Proof,
  proofOutdatedBy,
  prove,
} from "./proof.js";
import type { ConsoleApp, Route } from "./routes.js";
import { Sessions, sameToken, sessionCookie, token } from "./sessions.js";
import { refuseStoreLost } from "./storeLost.js";
import { acceptTicket, fromAnotherUser, holdsTicket } from "./ticket.js";

export interface ConsoleOptions {
  stateDir: string;
  /** 0 (default): any free port */
  port?: number;
  /** idle timeout of a session (default 15 minutes) */
  idleMs?: number;
  /** how long a passphrase proof is held for decisions (default 5 minutes; 0: every decision asks) */
  proofWindowMs?: number;
  /** approving a call of a per-call tool: with the held proof ("window", default) or a fresh one */
  perCallProof?: PerCallProof;
  log: Pick<Logger, "info" | "warn">;
  /** more routes (e.g. passkeys), checked like the console's own */
  extraRoutes?: Route[];
  /**
   * Called once when one of the store's files is found deleted or replaced (on a request or the
   * heartbeat; said once on `log`): the console must stop, and `close` then leaves the store open.
   */
  onStoreLost?: (lost: StoreFileLost) => void;
}

export interface RunningConsole {
  url: string;
  port: number;
  /** this run's ticket, for the links handed to the human (ticket.ts) */
  ticket: string;
  /** when the last request arrived (ms since the epoch) */
  lastActivity(): number;
  /**
   * Stops serving and closes the store, unless one of its files was lost (then it is left open:
   * src/store/storeWatch.ts). Resolves to whether the store was closed.
   */
  close(): Promise<boolean>;
}

export async function startConsole(o: ConsoleOptions): Promise<RunningConsole> {
  const db = openStore(o.stateDir);
  // Every request checks the store's files first, decisions again under their write lock, and
  // this heartbeat while nobody uses the console: it holds the store open for hours.
  // The stop comes after the request that found the loss was answered (its refusal ended: close
  // lets such answers out before it cuts the connections).
  const storeWatch = watchStoreFiles(db, o.log, (lost) => setImmediate(() => o.onStoreLost?.(lost)));
  // A held proof is dropped once keyring.json names another approver key (rotate-keys): said once
  // per session on the console's output, and on the page that asks for the passphrase again.
  const outdated = proofOutdatedBy(o.stateDir);
  const sessions = new Sessions(o.idleMs ?? 15 * 60_000, o.proofWindowMs ?? 5 * 60_000, (proof) => {
    const dropped = outdated(proof);
    if (dropped !== null) o.log.info(`a held passphrase proof was dropped: ${dropped.why}`);
    return dropped;
  });
  const changes = new ChangeWatch(db);
  const ticket = token();
  // Wrong passphrases slow the next attempt. Attempts from a browser holding the ticket are
  // counted apart from everyone else's, so nobody without it can make the human wait.
  const limiters = { ticketed: new LoginLimiter(), others: new LoginLimiter() };
  let proving: Promise<unknown> = Promise.resolve();
  const app: ConsoleApp = {
    stateDir: o.stateDir,
    port: 0,
    db,
    sessions,
    changes,
    perCallProof: o.perCallProof ?? "window",
    log: o.log,
    // One key derivation at a time (scrypt is costly), and none while throttled. An empty
    // passphrase is no attempt (a form drawn while a proof was held sends one): it is refused
    // before the limiter is asked or told, whatever route let it through.
    prove(passphrase: string, ticketed: boolean): Promise<Proof> {
      if (passphrase === "") return Promise.reject(new PassphraseMissing());
      const limiter = ticketed ? limiters.ticketed : limiters.others;
      const run = proving.then(async () => {
        const wait = limiter.wait();
        if (wait > 0) throw new LoginThrottled(wait);
        try {
          const proof = await prove(db, o.stateDir, passphrase, (line) => o.log.info(line));
          limiter.succeeded();
          return proof;
        } catch (e) {
          if (e instanceof KeyringError) limiter.failed();
          throw e;
        }
      });
      proving = run.catch(() => {});
      return run;
    },
  };
  const routes = [...(o.extraRoutes ?? []), ...PASSKEY_ROUTES, ...CONSOLE_ROUTES];
  let port = 0;
  // none until the sockets are bound: a request cannot come before
  let hosts: ReadonlySet<string> = new Set();
  let lastRequest = Date.now();
  const answering = new Set<ServerResponse>();
  const onRequest = (req: IncomingMessage, res: ServerResponse) => {
    lastRequest = Date.now();
    answering.add(res);
    res.once("close", () => answering.delete(res));
    handle(app, routes, port, hosts, ticket, req, res).catch((e: unknown) => {
      // a decision that found a store file lost under its write lock (the check before it passed)
      if (e instanceof StoreFileLost && !res.headersSent) {
        const json = /^application\/json\b/.test(req.headers["content-type"] ?? "");
        return refuseStoreLost(res, json, e);
      }
      o.log.warn(`${req.method} ${pathOf(req)}: ${(e as Error)?.message ?? String(e)}`);
      if (!res.headersSent) sendText(res, 500, "internal error");
      else res.destroy();
    });
  };
  let servers: Server[];
  try {
    servers = await listenOnLoopback(onRequest, o.port ?? 0);
  } catch (e) {
    clearInterval(storeWatch);
    changes.close();
    sessions.close();
    closeStoreUnlessLost(db);
    throw e;
  }
  // Connections are descriptors, held before the Host check has read a byte: capped, both
  // listeners together, so that a local process opening them without end cannot run the console
  // out of descriptors (an accept that failed with EMFILE ended it). One past the cap is closed
  // as it is accepted; the log says so, thinned (src/transport/httpConnections.ts).
  capConnections(servers, "console", (line) => o.log.warn(line));
  port = (servers[0]!.address() as AddressInfo).port;
  hosts = consoleHosts(
    servers.map((s) => (s.address() as AddressInfo).address),
    port,
  );
  app.port = port;
  const url = `http://127.0.0.1:${port}`;
  let closed: Promise<boolean> | null = null;
  return {
    url,
    port,
    ticket,
    lastActivity: () => lastRequest,
    close() {
      closed ??= new Promise<boolean>((resolve) => {
        clearInterval(storeWatch);
        changes.close();
        sessions.close();
        // Answers already ended but not yet handed to the system (a refusal naming a lost store
        // file) go out first; the rest (event streams, handlers still working) are cut.
        const ended = [...answering].filter((r) => r.writableEnded && !r.writableFinished);
        const out = (r: ServerResponse) =>
          new Promise((done) => {
            r.once("finish", done);
            r.once("close", done);
          });
        Promise.all(ended.map(out))
          .then(() => Promise.all(servers.map(closeServer)))
          .then(() => resolve(closeStoreUnlessLost(db)));
      });
      return closed;
    },
  };
}

/** How many fresh ports the console tries when it picks its own and ::1 already has one taken. */
const PORT_ATTEMPTS = 5;

/**
 * The console's listening sockets: 127.0.0.1:PORT and [::1]:PORT, one handler behind both.
 * Its passkey origin is http://localhost:PORT, and browsers try ::1 first for `localhost`: were
 * [::1]:PORT free, any process of this user could listen there and receive what the human sends
 * to localhost (the passphrase, the session cookie, the proof key). Holding both names leaves no
 * such gap. With `port` 0 the console takes a port free on both; with a given port, ::1 busy is
 * an EADDRINUSE naming ::1. A machine without an IPv6 loopback gets 127.0.0.1 alone: there
 * `localhost` cannot lead to ::1 either.
 */
async function listenOnLoopback(
  onRequest: (req: IncomingMessage, res: ServerResponse) => void,
  port: number,
): Promise<Server[]> {
  for (let attempt = 0; attempt < (port === 0 ? PORT_ATTEMPTS : 1); attempt++) {
    const v4 = newServer(onRequest);
    await listen(v4, "127.0.0.1", port);
    const chosen = (v4.address() as AddressInfo).port;
    const v6 = newServer(onRequest);
    try {
      await listen(v6, "::1", chosen);
      return [v4, v6];
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === "EADDRNOTAVAIL" || code === "EAFNOSUPPORT") return [v4];
      await closeServer(v4);
      if (code !== "EADDRINUSE" || port !== 0) throw e;
    }
  }
  throw new LoopbackPortsBusy(PORT_ATTEMPTS);
}

/** Picking its own port, the console found none free on both 127.0.0.1 and ::1. */
export class LoopbackPortsBusy extends Error {
  constructor(attempts: number) {
    super(`no port free on both 127.0.0.1 and ::1 in ${attempts} attempts`);
  }
}

function newServer(onRequest: (req: IncomingMessage, res: ServerResponse) => void): Server {
  const server = createServer(onRequest);
  server.on("clientError", parserRefusal);
  server.headersTimeout = 20_000;
  // Every header is read: node keeps the first 2000 by default and drops the rest unseen, and
  // 2000 short ones fit in its 16 KiB head, so a proxy's X-Forwarded-* written after a rebound
  // page's filler escaped the check. The head's size still bounds what is kept.
  server.maxHeadersCount = 0;
  server.requestTimeout = 60_000;
  return server;
}

function listen(server: Server, host: string, port: number): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen({ host, port, ipv6Only: host === "::1" }, () => {
      server.off("error", reject);
      resolve();
    });
  });
}

function closeServer(server: Server): Promise<void> {
  return new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}

function pathOf(req: IncomingMessage): string {
  return (req.url ?? "/").split("?")[0]!.slice(0, 200);
}

async function handle(
  app: ConsoleApp,
  routes: Route[],
  port: number,
  hosts: ReadonlySet<string>,
  ticket: string,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  securityHeaders(res);
  const host = req.headers.host;
  if (!hostAllowed(host, hosts)) {
    req.resume();
    return sendText(
      res,
      421,
      "this console answers only to 127.0.0.1, localhost or [::1] (where it listens there) on its own port",
    );
  }
  // A local reverse proxy that rewrites Host to ours would pass a rebound page on: the console is
  // never meant to sit behind one, so a request a proxy passed on is refused (src/util/forwarded.ts).
  const forwarded = forwardingHeader(req.headers);
  if (forwarded) {
    req.resume();
    return sendText(
      res,
      403,
      `refused: this request carries ${forwarded}, so a proxy passed it on; the console answers only a browser connected to it directly`,
    );
  }
  // A service worker script's fetch (a registration, or the update check of a worker an earlier
  // server on this port registered, which answers the console's pages itself from then on): the
  // console serves none, and asks the browser to drop what this origin registered and stored.
  if (req.headers["service-worker"] !== undefined) {
    req.resume();
    res.setHeader("Clear-Site-Data", '"cache", "storage"');
    return sendText(res, 403, "refused: the console serves no service worker");
  }
  const method = req.method === "HEAD" ? "GET" : req.method;
  if (method !== "GET" && method !== "POST") {
    req.resume();
    res.setHeader("Allow", "GET, POST");
    return sendText(res, 405, "method not allowed");
  }
  const url = new URL(req.url ?? "/", `http://${host}`);
  if (method === "GET" && url.searchParams.has(TICKET_PARAM)) {
    req.resume();
    // not touched: following a link is not a request of the session's
    const live = app.sessions.fromCookie(cookieValues(req, sessionCookie(port)), false) !== null;
    return acceptTicket(res, url, port, ticket, req.headers.cookie, live);
  }
  let params: string[] = [];
  const route = routes.find((r) => {
    if (r.method !== method) return false;
    const m = r.path.exec(url.pathname);
    if (!m) return false;
    try {
      params = m.slice(1).map((p) => decodeURIComponent(p ?? ""));
    } catch {
      return false;
    }
    return true;
  });
  if (!route) {
    req.resume();
    return sendText(res, 404, "not found");
  }
  // Whatever the route: a console whose store file was deleted or replaced shows a store nobody
  // else writes any more, and what it would write could be lost or copied over others' records.
  const lost = StoreFiles.of(app.db).check();
  if (lost) {
    req.resume();
    return refuseStoreLost(res, route.body === "json", lost);
  }
  const isEvents = url.pathname === "/events";
  // Neither the event stream nor the page fetching itself after a change (its script marks
  // that GET, assets.ts) is the human: neither keeps the session alive. Otherwise any change in
  // the store (an agent's new requests, a gateway's status lines) would renew an unattended
  // tab's session for ever, and the idle timeout would never end it.
  const background = isEvents || (method === "GET" && headerValue(req, REFRESH_HEADER) === "1");
  const session = app.sessions.fromCookie(cookieValues(req, sessionCookie(port)), !background);
  if (route.session && !session) {
    req.resume();
    if (method === "GET" && !isEvents) {
      const next = url.pathname === "/" ? "" : `?next=${encodeURIComponent(url.pathname)}`;
      return redirect(res, `/login${next}`);
    }
    return sendText(res, 403, "log in first: no console session");
  }
  let form: URLSearchParams | null = null;
  let json: unknown = null;
  if (method === "POST") {
    // A state change: from our own page (Origin), with the session's token (CSRF).
    if (!originAllowed(req.headers.origin, host!)) {
      req.resume();
      return sendText(res, 403, "refused: the Origin of this request is not the console");
    }
    try {
      if (route.body === "json") json = await readJson(req);
      else form = await readForm(req);
    } catch (e) {
      if (e instanceof BodyError) return sendText(res, e.status, e.message);
      throw e;
    }
    const given = form?.get("csrf") ?? headerValue(req, "x-csrf-token");
    if (route.session) {
      if (!sameToken(given, session!.csrf)) return sendText(res, 403, "refused: missing or wrong CSRF token");
    }
    // Session-less POSTs (login) check their own pre-session token in their handler.
  }
  const proofKey = method === "POST" ? (form?.get("proof") ?? headerValue(req, "x-proof-key")) : null;
  // Only a POST can carry a passphrase: the kernel's socket table is read for those alone.
  const ticketed =
    method === "POST" && holdsTicket(req.headers.cookie, port, ticket) && !fromAnotherUser(req);
  await route.handle({ req, res, params, url, form, json, session, proofKey, ticketed, app });
}

function headerValue(req: IncomingMessage, name: string): string | null {
  const v = req.headers[name];
  return typeof v === "string" ? v : null;
}
