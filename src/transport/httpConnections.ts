import type { Server, Socket } from "node:net";
import { openFilesSoftLimit } from "../identity/proc.js";
import { SparingWarnings } from "../util/sparingWarnings.js";

/** The most connections a front holds when the process's descriptor limit cannot be read. */
const DEFAULT_CAP = 1024;
/** Never fewer than this, however low the limit (a front must take a few clients at once). */
const FLOOR = 32;

/**
 * How many connections a listening server holds open at once (the `run --listen` front, the
 * console, the egress proxy); one more is closed as it is accepted. Each is a descriptor, taken
 * before any check (Host, token, whose process it is) has read a byte, so without a cap a client
 * that opens connections and sends nothing ran the process out of descriptors: the next file it
 * opened (a module loaded late, the store, a server's pipes) threw EMFILE, and an accept that
 * failed so was an error no listener took, which ended it. Half the process's soft limit
 * (`/proc/self/limits` on Linux; node raises the soft limit to the hard one at start), at most
 * DEFAULT_CAP: the other half is the process's own (its servers' pipes, the store). A connection
 * that may hold `descriptorsEach` descriptors (the egress proxy's: its own and the upstream's it
 * dials) counts as many, so the connections together still hold at most `share` of the limit
 * (half unless said: the egress proxies of a process take a quarter, beside a front's half).
 */
export function connectionCap(
  softLimit: number | null = openFilesSoftLimit(),
  descriptorsEach = 1,
  share = 1 / 2,
): number {
  if (softLimit === null) return DEFAULT_CAP;
  return Math.max(FLOOR, Math.min(DEFAULT_CAP, Math.floor((softLimit * share) / descriptorsEach)));
}

/**
 * Caps `servers` together at connectionCap (shared out among them: the console's 127.0.0.1 and
 * ::1 listeners are one process's), and says on `warn` when one past the cap was closed, thinned
 * (a flood closes thousands), as `${what}: closed a connection as it was accepted: …`.
 */
export function capConnections(
  servers: readonly Server[],
  what: string,
  warn: (line: string) => void,
  descriptorsEach = 1,
): void {
  const each = Math.max(1, Math.floor(connectionCap(openFilesSoftLimit(), descriptorsEach) / servers.length));
  const drops = new SparingWarnings(warn);
  for (const server of servers) {
    server.maxConnections = each;
    server.on("drop", () =>
      drops.say(
        "cap",
        `${what}: closed a connection as it was accepted: ${each} are open, the most ${servers.length > 1 ? "each of its listeners" : "it"} holds`,
      ),
    );
  }
}

/**
 * One cap held by many listening servers together, servers that come and go: the egress proxies
 * of one process (under `run --listen` one per session, each started and closed with it). Capped
 * each on its own, N proxies held N caps, and the servers of several sessions flooding theirs at
 * once ran the gateway out of descriptors. A server's `connection` listener calls admit first,
 * before it reads anything for the connection (a file opened for it is a descriptor too): one
 * past the cap, whichever server it came to, is destroyed there, unread and unanswered, and the
 * caller does nothing more with it. Connections taken in are never closed for another's sake:
 * a flood through one server leaves the connections already open elsewhere working, and the
 * servers take new ones again as the flood's connections close.
 */
export class SharedConnectionCap {
  private held = 0;
  /** the warn of the server whose connection is being closed: each says it in its own log */
  private warnNow: (line: string) => void = () => {};
  /** thinned over every server together: a flood through many is one line a minute, not one per server */
  private readonly drops = new SparingWarnings((line) => this.warnNow(line));

  constructor(
    readonly cap: number,
    private readonly what: string,
  ) {}

  /** How many connections are held now, over every server. */
  get open(): number {
    return this.held;
  }

  /**
   * Takes `socket` (just accepted) into the cap and true; or, the cap being full, destroys it,
   * says so on `warn` (thinned) and false.
   */
  admit(socket: Socket, warn: (line: string) => void): boolean {
    if (this.held >= this.cap) {
      socket.destroy();
      this.warnNow = warn;
      this.drops.say(
        "cap",
        `${this.what}: closed a connection as it was accepted: ${this.held} are open, the most this process's ${this.what} listeners hold together`,
      );
      return false;
    }
    this.held++;
    socket.once("close", () => {
      this.held--;
    });
    return true;
  }
}
