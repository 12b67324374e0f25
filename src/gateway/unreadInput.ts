// What the gateway writes to a launched server beside requests: the client's notifications and
// the answers to the server's own requests. While the server reads none of its input (more than
// STDIN_BACKLOG_BYTES wait for it, Supervisor.notReading), requests are refused to whoever sent
// them; these have nobody to refuse to, and queued they would grow the gateway's memory without
// end (a client's notifications, or a server that asks and asks but reads no answer). So they
// are dropped, and said on stderr sparingly (a peer decides how many there are).
import type { ServerLink } from "../supervisor/link.js";
import type { Logger } from "../util/log.js";
import { SparingWarnings } from "../util/sparingWarnings.js";

export class UnreadInput {
  private readonly lines: SparingWarnings;

  constructor(log: Logger) {
    this.lines = new SparingWarnings((line) => log.warn(line));
  }

  /**
   * True when `what` (in words: "a notification of the client's") is not written to the server
   * because it reads none of its input; the caller then drops it. False: write it.
   */
  dropped(link: Pick<ServerLink, "notReading">, what: string): boolean {
    const why = link.notReading;
    if (!why) return false;
    this.drop(what, why);
    return true;
  }

  /** `what` is dropped, not written to the server, for `why`: said sparingly. */
  drop(what: string, why: string): void {
    this.lines.say(what, `dropped ${what}, not written to the server: ${why}`);
  }
}

/**
 * The gateway's own request (a catalog page, its own subscription, a subscription re-opened on a
 * new process …) was not written: the server reads none of its input (`why`, Supervisor.notReading).
 * Written, it would wait behind what the server does not read, in the gateway's memory, for an
 * answer that does not come; each caller says what not sending it means (InFlight.request).
 */
export class NotWritten extends Error {
  constructor(
    readonly method: string,
    readonly why: string,
  ) {
    super(`${why}; ${method} was not sent to it`);
  }
}
