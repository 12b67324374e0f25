import type { OpenListen } from "./clientSession.js";

/**
 * A call being decided: whether the client cancelled it, and the signal that stops a wait for a
 * human. The AbortController behind it is made only when a wait asks for the signal: most calls
 * never wait, and one per call was a measurable share of the hot path.
 */
export class Deciding {
  cancelled = false;
  /**
   * the client's open listen this decision re-opens on a new process: over the moment the client
   * cancels it (GuardedRequests.cancel), since the decision may return after a new listen under
   * its id was opened
   */
  listen?: OpenListen;
  private aborted = false;
  /**
   * why it was aborted, when someone said (the signal's reason): only the connection's end says
   * why (abortDecisions), and the request then closes with the run rather than wait for a retry
   */
  private why: string | undefined;
  private controller: AbortController | null = null;

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.aborted) this.controller.abort(this.why);
    }
    return this.controller.signal;
  }

  /** whether the wait was stopped (cancelled, sent to the console, or the connection's end) */
  get isAborted(): boolean {
    return this.aborted;
  }

  /** why the connection's end cut this decision short; undefined while it did not */
  get endedBy(): string | undefined {
    return this.why;
  }

  /**
   * Stops the wait. A reason given after an abort without one (the client cancelled, or a
   * modern call was sent to the console, then the connection ended) is still recorded, and the
   * signal read from now on carries it: the wait's end is then told as the run's, not as one a
   * retry will pick up. (The earlier signal has fired already; nothing waits on it any more.)
   */
  abort(why?: string): void {
    if (this.aborted) {
      if (why === undefined || this.why !== undefined) return;
      this.why = why;
      this.controller = null;
      return;
    }
    this.aborted = true;
    this.why = why;
    this.controller?.abort(why);
  }
}
