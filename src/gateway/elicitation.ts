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
 * Legacy era only: there the gateway's own requests to the client use string ids of their own,
 * which never collide with the numbers the gateway puts on the server's requests it relays.
 * In the 2026-07-28 era server→client requests do not exist (the client drops them); see
 * `inputRequired` for what that era gets instead.
 */
import { ulid } from "ulid";
import type { RequestState } from "../approval/requests.js";
import type { Response } from "../relay/jsonrpc.js";
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
  /** how often open elicitations' requests are read for a decision (default 500 ms) */
  pollMs?: number;
}

/** The message shown with the URL: it names the tool, never an argument. */
export function elicitationMessage(tool: string): string {
  return `portcullis: a human must approve the call of tool "${tool}". Open the portcullis console to review and decide it.`;
}

/** Whether declared client capabilities include URL-mode elicitation. */
export function declaresUrlElicitation(capabilities: unknown): boolean {
  const e = (capabilities as { elicitation?: unknown } | null | undefined)?.elicitation;
  const url = (e as { url?: unknown } | null | undefined)?.url;
  return typeof url === "object" && url !== null;
}

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

  /** A call of `tool` now waits on approval request `request`: send the user to its page. */
  offer(request: string, tool: string): void {
    if (!this.supported()) return;
    if (this.o.era() !== "legacy") return; // no server→client requests in the modern era
    if ([...this.open.values()].includes(request)) return; // one at a time per request
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
      params: { mode: "url", elicitationId, url, message: elicitationMessage(tool) },
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
      ? `an error (${String(msg.error.message).slice(0, 200)})`
      : typeof action === "string"
        ? JSON.stringify(action.slice(0, 20))
        : "no action";
    this.o.log.info(
      `the client answered the URL elicitation of request ${request} with ${said}: not a decision; the request waits for a human`,
    );
    return true;
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
