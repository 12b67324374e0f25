import type { EventEmitter } from "node:events";
import type { ExecutionRecord } from "../identity/index.js";
import type { SpawnCredentials } from "../vault/delivery.js";
import type { AfterCrash } from "./crashLoop.js";

/**
 * What the gateway needs of whatever stands between it and the server: a process it launched
 * (supervisor.ts) or a server reached over Streamable HTTP (remote.ts). Both mint epochs, and
 * only they do: the gateway never decides which code answers, it is told.
 */

/** Why an epoch exists. */
export type EpochReason =
  | "launch"
  | "respawn"
  | "restart"
  | "replaced"
  /** remote: the server ended or forgot our upstream session; a new one was opened */
  | "new-session"
  /** remote: the TLS certificate chain presented on a new connection differs */
  | "certificate-changed"
  /** remote: the server describes itself differently (serverInfo) */
  | "server-info-changed";

/** One execution epoch as the gateway sees it; each link keeps its own details beside these. */
export interface LinkGeneration {
  epoch: string;
  record: ExecutionRecord;
  reason: EpochReason;
  /** non-null once the code behind the epoch answered and the record is complete */
  settled: unknown;
  alive: boolean;
  /**
   * Non-null while the code that would read a request sent now is not known (a launched
   * server's process that answered on the gateway's pipe went away, nothing seen in its place yet):
   * why. Guarded requests are held, never forwarded, while it is set.
   */
  codeUnknown?: string | null;
  /**
   * Requests of this epoch (by wire id) that the server answered, at its end, with the HTTP status
   * of a session it no longer knows: it did not run them, and their refusal says so. Only a link
   * to a server reached by URL fills it.
   */
  notRun?: Map<unknown, number>;
  /**
   * What the vault put in the launched process's environment when it was spawned (a worker that
   * replaced another under the same process inherits it: the same spawn's). Only a launched
   * server's link fills it.
   */
  spawnCredentials?: SpawnCredentials;
}

export type DownReason = "exit" | "replaced" | "restart" | "shutdown";

export interface LinkEvents<G extends LinkGeneration = LinkGeneration> {
  /**
   * one JSON-RPC message from the current epoch, as text: the server's, or (`own`) one the link wrote itself in
   * the server's place (a remote server's HTTP error, a request it could not send), which is the
   * gateway's own word and never taken for the server's
   */
  line: [text: string, gen: G, own?: boolean];
  /** a message over the size limit was dropped (see supervisor.ts) */
  oversize: [bytes: number, gen: G, rawId: string | null, hasMethod: boolean];
  /** the epoch can no longer answer; its in-flight calls are lost */
  down: [gen: G, why: DownReason, detail: string];
  /** a new epoch answers; its execution record is captured */
  up: [gen: G, previous: G | null];
  /** identity inputs changed on disk (launched servers only) */
  changed: [paths: string[], parts: string[], next: unknown, gen: G];
  /**
   * The watcher saw a file of the running code change (launched servers only): until
   * `change-judged`, what runs may differ from what the epoch recorded (`changePending`).
   */
  "change-pending": [];
  /** every change seen since `change-pending` is judged (`changed` emitted first when it was one) */
  "change-judged": [];
  /**
   * The stat poll found a file of the running code changed, with no watcher event at the time
   * (a write through another hard link, a shared mapping): it was changed at some moment after
   * `since` (performance.now()), maybe well before the change window opened. Emitted once the
   * window is open (after `change-pending`, when this change opened it).
   */
  "change-unseen": [since: number];
  /**
   * A launched server's process that answered on the gateway's pipe went away with nothing seen
   * in its place: `gen.codeUnknown` says which, and guarded requests wait (see LinkGeneration).
   */
  "code-unknown": [gen: G];
  /**
   * Before `gen`'s first answer, a launched server's worker that held the gateway's output pipe
   * went away and the same command was started again in its place (a watcher's swap, `detail`
   * says which processes). Not a replacement by itself: the new worker may read what is waiting in
   * the pipe and answer it (a build broken at launch dies before reading anything). Whether a
   * request the gone worker had read was lost with it is for the gateway to find out (a probe of
   * its own behind it); `replaceBeforeAnswer` ends the epoch when one was.
   */
  "swapped-before-answer": [gen: G, detail: string];
  /** supervision stopped */
  "gave-up": [message: string];
  /**
   * A launched server kept crashing (or could not be started) while its files are watched: no
   * process runs until the next change of those files, which launches it again. `why` is
   * `paused` below.
   */
  paused: [why: string];
  /** a server reached by URL cannot be reached (the `unreachable` property says why) */
  unreachable: [];
}

export interface ServerLink<G extends LinkGeneration = LinkGeneration> extends EventEmitter<LinkEvents<G>> {
  current: G | null;
  /**
   * Non-null while supervision waits for a change of the server's files to launch it again
   * (see the `paused` event): why, in words a refusal can carry. Absent: the link never pauses.
   */
  readonly paused?: string | null;
  /**
   * Non-null while a server reached by URL cannot be reached (its epoch ended and reaching it
   * again fails, or its HTTP front answers for it with an error): why, naming the URL and the
   * error. Requests are refused at once meanwhile (server_unavailable), not held. Absent: the
   * link launches its server.
   */
  readonly unreachable?: string | null;
  /**
   * Non-null while the launched server reads none of what is written to it (its stdin backed up
   * past a bound): why, in words a refusal can carry. Requests are refused at once meanwhile
   * (server_unavailable), not queued. Absent: the link has no such input.
   */
  readonly notReading?: string | null;
  /**
   * Non-null while the launched server's process still runs but its stdin is closed (it closed
   * it, or the pipe broke): nothing can be sent to it. It is stopped as after a crash, and what
   * that crash does is given (respawn, or the loop limit: pause until the files change, or end).
   * Absent: the link has no such input.
   */
  readonly inputClosed?: AfterCrash | null;
  /**
   * True from the watcher's first event on a file of the running code until a fresh capture has
   * judged it (`change-pending` … `change-judged`). Absent: the link watches no files.
   */
  readonly changePending?: boolean;
  start(): Promise<G>;
  /** Hands one message to the current epoch. False when none can take it (nothing was sent). */
  send(msg: unknown): boolean;
  /** As `send`, for a message already serialised (a relayed line with its id replaced); absent: use `send`. */
  sendText?(text: string): boolean;
  /** The epoch answered its first request: complete its record. */
  settle(gen: G): void;
  /** A cheap synchronous look for a replaced server before anything is forwarded; true if one was found. */
  checkReplacement(): boolean;
  /**
   * `gen` (still current) lost requests with a worker swapped before its first
   * answer (`swapped-before-answer`): it is replaced (a new epoch, its identity captured again),
   * and what waited at it is answered as for any process gone. Absent: the link never swaps.
   */
  replaceBeforeAnswer?(gen: G, detail: string): void;
  /**
   * Replaces the server under our control (onChange: restart; a worker gone with nothing in its
   * place); null when shutting down, or when the new server could not be started and supervision
   * paused instead (the `paused` event). `detail`: why, as the epoch's end records it. `crash`:
   * the restart is for a worker gone, not a change (what happened, in a few words): it counts
   * toward the crash loop.
   */
  restart(detail?: string, crash?: string): Promise<G | null>;
  shutdown(): Promise<void>;
  /**
   * Cuts a shutdown's grace short (the gateway got a second signal): whatever still runs or waits
   * is ended now, and the shutdown under way resolves without waiting for anyone. Begins the
   * shutdown when none is under way.
   */
  hurry(): void;
  /**
   * The client reads slower than the server talks (`on` false: the transport's output to it is
   * backed up): what the server sends is left unread until `on` again, so that it waits in the
   * server and the network instead of the gateway's memory. Absent: the link reads all the time.
   */
  setReading?(on: boolean): void;
}
