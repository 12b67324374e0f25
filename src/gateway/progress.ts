import type { Id, Notification } from "../relay/jsonrpc.js";

/**
 * Tokens kept at most. Every path that ends a request frees its token (the server's answer, the
 * gateway's own, the client's cancellation); the bound is what holds should one be missed.
 */
const MAX_TOKENS = 1024;

/** One progress token the gateway spoke under, as the client has seen its values. */
interface TokenState {
  /** the highest value the client has been sent for this token */
  last: number;
  /** what is added to the server's values; fixed at its first notification (null before) */
  shift: number | null;
  /** the request the token belongs to */
  request: string;
}

/**
 * Keeps progress increasing per token as the client sees it. While a call (or a guarded read)
 * waits for a human, the gateway sends its own notifications/progress under the client's token
 * (1, 2, … "waiting for human approval"); once the call is forwarded, the server numbers its own
 * from wherever it likes (0, 1 of 4, …). MCP requires the value to increase with each
 * notification for a token, so the server's values under a token the gateway spoke under are
 * shifted past the gateway's last one, and `total` with them (the shown fraction stays the
 * server's, give or take the waiting steps). Tokens the gateway never spoke under pass untouched.
 */
export class ProgressTokens {
  private readonly byToken = new Map<string, TokenState>();
  /** request key → token key, to forget a token when its request is answered */
  private readonly byRequest = new Map<string, string>();

  /** The value of the gateway's next own notification under `token` for request `id`. */
  own(token: string | number, id: Id): number {
    const key = tokenKey(token);
    const request = requestKey(id);
    let state = this.byToken.get(key);
    if (!state) {
      state = { last: 0, shift: null, request };
      this.byToken.set(key, state);
      this.trim();
    } else if (state.request !== request) {
      // the token's earlier request ended on a path that did not say so: this one takes it over,
      // and its values still go on from the last the client saw
      this.byRequest.delete(state.request);
      state.request = request;
      state.shift = null;
    }
    this.byRequest.set(request, key);
    // (after the server spoke the gateway does not: its notifications end when the call is sent)
    state.last += 1;
    return state.last;
  }

  /** A server's notifications/progress, with its values moved past the gateway's when needed. */
  relayed(msg: Notification): Notification {
    if (this.byToken.size === 0) return msg;
    const params = msg.params as { progressToken?: unknown; progress?: unknown; total?: unknown } | undefined;
    const token = params?.progressToken;
    if (typeof token !== "string" && typeof token !== "number") return msg;
    const state = this.byToken.get(tokenKey(token));
    const progress = params?.progress;
    // a value that is not a number is passed as the server wrote it: nothing to compare
    if (!state || typeof progress !== "number" || !Number.isFinite(progress)) return msg;
    if (state.shift === null) state.shift = progress > state.last ? 0 : state.last + 1 - progress;
    const shift = state.shift;
    state.last = Math.max(state.last, progress + shift);
    if (shift === 0) return msg;
    const total = params?.total;
    return {
      ...msg,
      params: {
        ...params,
        progress: progress + shift,
        ...(typeof total === "number" ? { total: total + shift } : {}),
      },
    };
  }

  /** Whether the gateway sent progress of its own under `token` (for a request still open). */
  spokeUnder(token: string | number): boolean {
    return this.byToken.size > 0 && this.byToken.has(tokenKey(token));
  }

  /** Whether the gateway sent progress of its own for request `id` (still open). */
  spoke(id: Id): boolean {
    return this.byRequest.size > 0 && this.byRequest.has(requestKey(id));
  }

  /** Request `id` was answered: its token may be used again by a later request. */
  ended(id: Id): void {
    if (this.byRequest.size === 0) return;
    const request = requestKey(id);
    const key = this.byRequest.get(request);
    if (key === undefined) return;
    this.byRequest.delete(request);
    if (this.byToken.get(key)?.request === request) this.byToken.delete(key);
  }

  private trim(): void {
    while (this.byToken.size > MAX_TOKENS) {
      const [key, state] = this.byToken.entries().next().value as [string, TokenState];
      this.byToken.delete(key);
      this.byRequest.delete(state.request);
    }
  }
}

function tokenKey(token: string | number): string {
  return `${typeof token}:${token}`;
}

function requestKey(id: Id): string {
  return `${typeof id}:${id}`;
}
