/**
 * The console's route table. Each route says whether it needs a session; every POST is checked
 * for Origin and the CSRF token by the server before its handler runs (src/console/server.ts).
 * Another module can add its routes (passkey registration and assertions, for instance) with
 * `extraRoutes` when the console is started: the same checks apply to them.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Store } from "../store/db.js";
import type { Logger } from "../util/log.js";
import type { ChangeWatch } from "./changes.js";
import type { PerCallProof } from "./config.js";
import type { ConsoleSession, Sessions } from "./sessions.js";

export interface RouteContext {
  req: IncomingMessage;
  res: ServerResponse;
  /** the path's captured groups (decoded) */
  params: string[];
  url: URL;
  /** the form, already read for POST routes (the CSRF token checked); null for JSON routes */
  form: URLSearchParams | null;
  /** the JSON body of a POST route declared `body: "json"` (its CSRF token is the X-CSRF-Token header) */
  json: unknown;
  /** the live session (null only on routes with `session: false`) */
  session: ConsoleSession | null;
  /** the proof key a POST brought (form field `proof` or header X-Proof-Key; see sessions.ts) */
  proofKey: string | null;
  /** whether the request's cookies hold the console's ticket (ticket.ts) */
  ticketed: boolean;
  app: ConsoleApp;
}

export interface ConsoleApp {
  stateDir: string;
  /** the port listened on (cookie names carry it) */
  port: number;
  db: Store;
  sessions: Sessions;
  changes: ChangeWatch;
  /** "fresh": approving a call of a per-call tool never uses the held passphrase proof */
  perCallProof: PerCallProof;
  log: Pick<Logger, "info" | "warn">;
  /**
   * proves a passphrase (one at a time, rate-limited: attempts of a request holding the ticket
   * apart from all others); see server.ts
   */
  prove(passphrase: string, ticketed: boolean): Promise<import("./proof.js").Proof>;
}

export interface Route {
  method: "GET" | "POST";
  path: RegExp;
  /** false: served before the human proved who they are (the login page, static assets) */
  session: boolean;
  /** what a POST carries: a form (default) or JSON (e.g. WebAuthn responses from a script) */
  body?: "form" | "json";
  handle(ctx: RouteContext): Promise<void> | void;
}
