// The crash-loop policy of a launched server (src/supervisor/supervisor.ts): what counts toward
// the loop limit, the backoff between respawns, and whether reaching the limit (or a server that
// cannot be started again) pauses supervision until the server's files change or ends it.

import { envMs } from "../util/envMs.js";

/**
 * A change the watcher saw (its batch's first event: the report comes after the debounce) before
 * the server answered its first request, or within this long after, counts as seen while it
 * started (Supervisor.restart): a server that writes its files as it starts does so before it
 * serves. The
 * window runs from the answer, not the spawn: on a loaded machine a server can take seconds to
 * come up, and a window from the spawn closed before its own write was seen, so it was restarted
 * for ever. A developer's next save comes later than that as a rule; one that does not counts
 * once, and only crashLoop.max of them within crashLoop.windowMs pause, until the next change.
 */
const LAUNCH_WINDOW_MS = 2_000;
/**
 * PORTCULLIS_LAUNCH_WINDOW_MS (for tests) replaces it: a test of a server that writes its files
 * late in its start waits past the window at every start, and a shorter window lets it wait less.
 */
const launchWindowMs = (): number => envMs("PORTCULLIS_LAUNCH_WINDOW_MS", LAUNCH_WINDOW_MS);
/** A server that has not answered after this long is not "starting" any more, for this rule. */
const STARTING_AT_MOST_MS = 30_000;

export interface CrashLoopOptions {
  crashLoop?: { max: number; windowMs: number };
  backoff?: { initialMs: number; maxMs: number };
  /** SupervisorOptions.waitForChangeOnCrashLoop */
  waitForChange: boolean;
  /** whether a file the running code depends on is watched now (a change of it can be seen) */
  watching: () => boolean;
}

/**
 * How each kind of pause begins its reason (`LoopStop.pause`, and `told`): fixed words of
 * portcullis, never a server's, so a refusal can say which kind it is (src/guard/refusals.ts).
 */
export const PAUSE_CAUSES = {
  crashing: "the server keeps crashing",
  changing: "the server's files keep changing as it starts",
  unstartable: "the server cannot be started",
} as const;

/** What supervision does when it cannot go on running the server. */
export type LoopStop =
  /** no server runs until its files change: `pause` is logged, `told` (absent: `pause`) is what the client is told */
  | { pause: string; told?: string }
  /** supervision ends (`gave-up`) with this message */
  | { giveUp: string };

/**
 * What one more crash would do (CrashLoop.afterNextCrash): respawn the server, or reach the loop
 * limit (`crashes` already within `windowSeconds`) and pause supervision until the server's files
 * change, or end it.
 */
export type AfterCrash =
  | { does: "respawn" }
  | { does: "pause" | "end"; crashes: number; windowSeconds: number };

export class CrashLoop {
  private crashes: number[] = [];
  /**
   * Restarts after a change seen while the server was starting (see LAUNCH_WINDOW_MS): a server
   * that rewrites its own watched files as it starts would otherwise be restarted for ever,
   * each restart a fresh crash count. Limited like crashes (crashLoop).
   */
  private startChanges: number[] = [];
  /** when the current generation came up, answered first (0: not yet), and the watcher last reported a change */
  private upAt = 0;
  private answeredAt = 0;
  private changeSeenAt = 0;
  /** the first event of the batch the watcher has not reported yet (0: none open) */
  private batchAt = 0;
  private backoffMs: number;

  constructor(private readonly opts: CrashLoopOptions) {
    this.backoffMs = opts.backoff?.initialMs ?? 200;
  }

  /** A generation came up (a launch, respawn, restart or replacement). */
  cameUp(): void {
    this.upAt = Date.now();
    this.answeredAt = 0;
  }

  /** The current generation answered its first request: it has started. */
  answered(): void {
    if (this.answeredAt === 0) this.answeredAt = Date.now();
  }

  /**
   * The watcher's first event of a batch of changes, or the batch's end (`open` false). A batch is
   * reported after its debounce (up to a second, longer on a loaded machine): the change was seen
   * at its first event, and that is the moment the launch window is judged by.
   */
  batch(open: boolean): void {
    if (!open) this.batchAt = 0;
    else if (this.batchAt === 0) this.batchAt = Date.now();
  }

  /** The watcher reported a change of the server's files. */
  changeSeen(): void {
    this.changeSeenAt = this.batchAt || Date.now();
  }

  /** Whether the last change was seen while the current generation was starting (or just after). */
  changeSeenAtStart(): boolean {
    if (this.answeredAt === 0) return this.changeSeenAt - this.upAt < STARTING_AT_MOST_MS;
    return this.changeSeenAt - Math.max(this.upAt, this.answeredAt) < launchWindowMs();
  }

  /** The server exited on its own (`detail`: how): why supervision stops, or null to respawn it. */
  crashed(detail: string): LoopStop | null {
    this.crashes = this.recent(this.crashes);
    if (this.crashes.length < this.loopMax()) return null;
    const loop = `${detail} ${this.crashes.length} times within ${this.loopSeconds()} s`;
    return this.loopStops(`${PAUSE_CAUSES.crashing} (${loop})`, `the server ${loop}`);
  }

  /**
   * What one more crash now would do (the stop of a process whose input closed, which counts as
   * a crash once it has exited): `respawn`, or stop supervision, `pause` (until the files change)
   * or `end`, with the crashes already within the window. Asked before that crash is counted, by
   * a refusal that must say what follows (src/guard/refusals.ts, serverInputClosed). Judged now:
   * the process is counted when it has exited, within a second or two, so only an earlier crash
   * leaving the window in between could make it respawn after all, never the other way round.
   */
  afterNextCrash(): AfterCrash {
    const before = this.recent(this.crashes).length - 1;
    if (before + 1 < this.loopMax()) return { does: "respawn" };
    return {
      does: this.waitsForChange() ? "pause" : "end",
      crashes: before,
      windowSeconds: this.loopSeconds(),
    };
  }

  /** How long to wait before the next respawn; each wait doubles the next, up to backoff.maxMs. */
  nextBackoff(): number {
    const delay = this.backoffMs;
    this.backoffMs = Math.min(this.backoffMs * 2, this.opts.backoff?.maxMs ?? 5_000);
    return delay;
  }

  /** A restart for a change seen as the server started: why supervision stops, or null to launch. */
  restartedAtStart(): LoopStop | null {
    this.startChanges = this.recent(this.startChanges);
    if (this.startChanges.length < this.loopMax()) return null;
    const loop = `${this.startChanges.length} restarts within ${this.loopSeconds()} s, each for a change seen as it started`;
    return this.loopStops(
      `${PAUSE_CAUSES.changing} (${loop})`,
      `the server's files kept changing as it started (${loop})`,
    );
  }

  /** A new build (or a resume after a pause): the crash count and backoff start afresh. */
  reset(): void {
    this.crashes = [];
    this.startChanges = [];
    this.backoffMs = this.opts.backoff?.initialMs ?? 200;
  }

  /** A launch after the first could not start the server (its identity cannot be captured). */
  cannotStart(message: string): LoopStop {
    if (this.waitsForChange())
      return { pause: `${PAUSE_CAUSES.unstartable}: ${message}`, told: PAUSE_CAUSES.unstartable };
    return { giveUp: message };
  }

  /** Whether a crash loop waits for the next change of the server's files instead of ending. */
  waitsForChange(): boolean {
    return this.opts.waitForChange && this.opts.watching();
  }

  private loopMax(): number {
    return this.opts.crashLoop?.max ?? 5;
  }

  private loopSeconds(): number {
    return Math.round((this.opts.crashLoop?.windowMs ?? 30_000) / 1000);
  }

  /** `times` within the crash-loop window, with now added. */
  private recent(times: number[]): number[] {
    const now = Date.now();
    const windowMs = this.opts.crashLoop?.windowMs ?? 30_000;
    return [...times.filter((t) => now - t < windowMs), now];
  }

  /**
   * The loop limit was reached: supervision pauses until the files change (`paused`: why), or
   * ends (`ended`: what happened) when it does not wait for changes.
   */
  private loopStops(paused: string, ended: string): LoopStop {
    if (this.waitsForChange()) return { pause: paused };
    return { giveUp: `${ended}; supervision stopped. Fix the server, then restart your MCP client.` };
  }
}
