/**
 * URL-mode elicitation (MCP 2025-11-25): when a call waits for a human and the client declared
 * `capabilities.elicitation.url`, the gateway asks the client to send its user to the console
 * page of the approval request (`elicitation/create`, mode `url`), and tells it when the request
 * is decided (`notifications/elicitation/complete`).
 *
 * The client's answer (accept, decline, cancel) is only logged: it is never a decision. A client
 * can say "accept" without any human having seen anything; only a signed decision made in the
 * console or the CLI approves. The URL names the request and nothing else (no token): the
 * console asks the human to prove who they are before it shows or decides anything.
 *
 * Legacy era: the gateway's own requests to the client use string ids of their own, which never
 * collide with the numbers the gateway puts on the server's requests it relays.
 *
 * 2026-07-28 era: there are no server→client requests (the client drops them). As the SDK does
 * for them, the call is answered at once with an `input_required` result embedding the
 * `elicitation/create` (mode url, no elicitationId in that era) and a `requestState` naming the
 * request; the client shows the URL, then retries the call with its `inputResponses` and the
 * `requestState`. The gateway takes both out of the retry (the server never sees them: they
 * answer the gateway, not the server), logs the answer, and the retry waits on the same request
 * like any other retry of the call.
 */
import { ulid } from "ulid";
import type { RequestState } from "../approval/requests.js";
import { quotedName } from "../catalog/text.js";
import type { ReadFacts } from "../guard/guard.js";
import type { Request, Response } from "../relay/jsonrpc.js";
import type { Logger } from "../util/log.js";
import type { Era } from "./protocol.js";

export interface UrlElicitationOptions {
  send(msg: unknown): void;
  era(): Era | null;
  /** the capabilities the client declared (legacy: initialize; modern: the request envelope) */
  clientCapabilities(): unknown;
  /** the console page of a request, or null when no console runs */
  consolePage?: (request: string) => string | null;
  /** the request's state in the store, null when it is not there */
  requestState(request: string): RequestState | null;
  log: Pick<Logger, "info" | "warn" | "debug">;
  /**
   * What the client wrote, with released credential values taken out: applied before it is cut
   * short for a log line, where a value cut in two would no longer be found (absent: as written)
   */
  scrub?: (text: string) => string;
  /** how often open elicitations' requests are read for a decision (default 500 ms) */
  pollMs?: number;
}

/** How long a waiting call looks for a console starting on demand: 20 × 250 ms. */
const CONSOLE_WAIT_TRIES = 20;
const CONSOLE_WAIT_MS = 250;

/**
 * What a request waiting for a human asked for, as its elicitation names it: a call of a tool, or
 * a guarded read (a resource read or subscription, a prompt, a completion) by its method and target.
 */
export type Waiting = { tool: string } | { read: ReadFacts };

/**
 * The message shown with the URL: it names what was asked (the tool called, the resource read or
 * subscribed to, and the request it was asked as when that is another), never an argument. A name
 * is written as every view of the gateway writes one inside a sentence (`quotedName`: in quotes,
 * `"` and `\` escaped, control and invisible characters as escapes, a long one cut with its
 * digest), so a tool's or a uri's own quotes and line breaks cannot end the sentence and write
 * another in the gateway's voice.
 */
export function elicitationMessage(what: Waiting): string {
  return `portcullis: a human must approve ${askedFor(what)}. Open the portcullis console to review and decide it.`;
}

function askedFor(what: Waiting): string {
  if ("tool" in what) return `the call of tool ${quotedName(what.tool)}`;
  const { method, target, via } = what.read;
  switch (method) {
    case "resources/read":
      return `a read of resource ${quotedName(target)}`;
    case "resources/subscribe":
      // (as the gateway's stderr line and the console say it: the name a grant carries, and how it was asked)
      return `a subscription to resource ${quotedName(target)}${via === undefined ? "" : ` (asked as ${via})`}`;
    case "prompts/get":
      return `a request for prompt ${quotedName(target)}`;
    case "completion/complete":
      // (the target names its reference: "prompt NAME", "resource URI")
      return `a completion for ${quotedName(target)}`;
    default:
      return `the request ${quotedName(method)} for ${quotedName(target)}`;
  }
}

/** Whether declared client capabilities include URL-mode elicitation. */
export function declaresUrlElicitation(capabilities: unknown): boolean {
  const e = (capabilities as { elicitation?: unknown } | null | undefined)?.elicitation;
  const url = (e as { url?: unknown } | null | undefined)?.url;
  return typeof url === "object" && url !== null;
}

/** The key of the gateway's embedded input request in an `input_required` result (modern era). */
export const INPUT_REQUEST_KEY = "portcullis-approval";
/** How the gateway's own `requestState` begins, followed by the approval request id. */
export const REQUEST_STATE_PREFIX = "portcullis-approval:";

export class UrlElicitations {
  /** elicitationId → the approval request it sends the user to */
  private readonly open = new Map<string, string>();
  /** the gateway's elicitation/create requests not answered yet: JSON-RPC id → request */
  private readonly asked = new Map<string, string>();
  private timer: NodeJS.Timeout | null = null;
  private seq = 0;

  constructor(private readonly o: UrlElicitationOptions) {}

  /** Whether this client would be sent to the console for a waiting call. */
  supported(): boolean {
    return declaresUrlElicitation(this.o.clientCapabilities());
  }

  /** A request asking `what` now waits on approval request `request`: send the user to its page. */
  offer(request: string, what: Waiting, attempt = 0): void {
    if (!this.supported()) return;
    if (this.o.era() !== "legacy") return; // no server→client requests in the modern era
    if ([...this.open.values()].includes(request)) return; // one at a time per request
    let url: string | null = null;
    try {
      url = this.o.consolePage?.(request) ?? null;
    } catch {
      url = null;
    }
    // A console started on demand for this very request takes a moment to listen: look again
    // for a few seconds while the request is still pending.
    if (!url && attempt < CONSOLE_WAIT_TRIES && this.o.requestState(request) === "pending") {
      setTimeout(() => this.offer(request, what, attempt + 1), CONSOLE_WAIT_MS).unref();
      return;
    }
    if (!url) {
      this.o.log.info(
        `the client accepts URL elicitation, but no console runs: request ${request} is decided with 'portcullis approve'`,
      );
      return;
    }
    const elicitationId = ulid();
    const id = `portcullis-elicitation-${++this.seq}`;
    this.open.set(elicitationId, request);
    this.asked.set(id, request);
    this.o.send({
      jsonrpc: "2.0",
      id,
      method: "elicitation/create",
      params: { mode: "url", elicitationId, url, message: elicitationMessage(what) },
    });
    this.o.log.info(`asked the client to open the console page of request ${request}`);
    this.watch();
  }

  /**
   * A response from the client; true when it answers one of the gateway's own elicitations (the
   * gateway then forwards it nowhere). The answer is logged, never taken as a decision.
   */
  onResponse(msg: Response): boolean {
    if (typeof msg.id !== "string") return false;
    const request = this.asked.get(msg.id);
    if (request === undefined) return false;
    this.asked.delete(msg.id);
    const action = (msg.result as { action?: unknown } | undefined)?.action;
    const said = msg.error
      ? `an error (${this.clip(String(msg.error.message), 200)})`
      : typeof action === "string"
        ? JSON.stringify(this.clip(action, 20))
        : "no action";
    this.o.log.info(
      `the client answered the URL elicitation of request ${request} with ${said}: not a decision; the request waits for a human`,
    );
    return true;
  }

  /**
   * Modern era: the `input_required` result that sends the user to the console page of
   * `request`, or null when this client is not to be sent (no capability, no console).
   */
  inputRequired(request: string, what: Waiting): Record<string, unknown> | null {
    if (!this.supported() || this.o.era() !== "modern") return null;
    let url: string | null = null;
    try {
      url = this.o.consolePage?.(request) ?? null;
    } catch {
      url = null;
    }
    if (!url) {
      this.o.log.info(
        `the client accepts URL elicitation, but no console runs: request ${request} is decided with 'portcullis approve'`,
      );
      return null;
    }
    this.o.log.info(`asked the client to open the console page of request ${request}`);
    return {
      resultType: "input_required",
      inputRequests: {
        [INPUT_REQUEST_KEY]: {
          method: "elicitation/create",
          params: { mode: "url", url, message: elicitationMessage(what) },
        },
      },
      requestState: `${REQUEST_STATE_PREFIX}${request}`,
    };
  }

  /**
   * Modern era: a call that retries after the gateway's `input_required`. Returns the call
   * without the gateway's `requestState` and its entry of `inputResponses` (anything else is the
   * server's and stays), and whether it was such a retry; the client's answer is logged only.
   */
  takeRetry(msg: Request): { msg: Request; answered: boolean } {
    const params = msg.params as Record<string, unknown> | undefined;
    const state = params?.requestState;
    if (typeof state !== "string" || !state.startsWith(REQUEST_STATE_PREFIX)) return { msg, answered: false };
    const { requestState: _ours, inputResponses, ...rest } = params as Record<string, unknown>;
    const responses = { ...((inputResponses as Record<string, unknown> | undefined) ?? {}) };
    const answer = (responses[INPUT_REQUEST_KEY] as { action?: unknown } | undefined)?.action;
    delete responses[INPUT_REQUEST_KEY];
    const request = this.clip(state.slice(REQUEST_STATE_PREFIX.length), 64);
    this.o.log.info(
      `the client answered the URL elicitation of request ${request} with ${typeof answer === "string" ? JSON.stringify(this.clip(answer, 20)) : "no action"}: not a decision; the request waits for a human`,
    );
    const cleaned = Object.keys(responses).length > 0 ? { ...rest, inputResponses: responses } : rest;
    return { msg: { ...msg, params: cleaned }, answered: true };
  }

  /** The client's text, scrubbed, then cut to `max` characters for a log line. */
  private clip(text: string, max: number): string {
    return (this.o.scrub ? this.o.scrub(text) : text).slice(0, max);
  }

  /** Stops watching (the connection ends). */
  close(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.open.clear();
  }

  /** Reads the open elicitations' requests until each is decided, then says so to the client. */
  private watch(): void {
    if (this.timer) return;
    this.timer = setInterval(() => this.check(), this.o.pollMs ?? 500);
    this.timer.unref();
  }

  private check(): void {
    for (const [elicitationId, request] of this.open) {
      let state: RequestState | null;
      try {
        state = this.o.requestState(request);
      } catch {
        return; // the store is closed: the connection is ending
      }
      if (state === "pending") continue;
      this.open.delete(elicitationId);
      this.o.send({
        jsonrpc: "2.0",
        method: "notifications/elicitation/complete",
        params: { elicitationId },
      });
    }
    if (this.open.size === 0) this.close();
  }
}
