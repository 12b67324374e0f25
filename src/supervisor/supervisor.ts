import type { ChildProcessWithoutNullStreams } from "node:child_process";
import { EventEmitter } from "node:events";
import { resolve } from "node:path";
import { contentChangedPaths } from "../identity/changedPaths.js";
import { collectWhenIdle } from "../identity/collect.js";
import { realpathOr } from "../identity/files.js";
import {
  captureStaticIdentity,
  changedParts,
  type DigestCache,
  type LaunchSpec,
  type StaticIdentity,
  selfWatcherOf,
} from "../identity/index.js";
import { resolveLaunch } from "../identity/resolve.js";
import type { Logger } from "../util/log.js";
import type { SpawnCredentials } from "../vault/delivery.js";
import { type AfterCrash, CrashLoop, type LoopStop } from "./crashLoop.js";
import type { EarlyStart } from "./earlyStart.js";
import { type Generation, newGeneration, settleGeneration } from "./generation.js";
import { leaderOf } from "./groupSignal.js";
import { spawnAndCapture } from "./launchCapture.js";
import type { LinkEvents, ServerLink } from "./link.js";
import { ProcessGroups } from "./processGroups.js";
import { ReplacementDetector, ROOT_GONE } from "./replacement.js";
import { discard, LaunchError, type Started } from "./spawn.js";
import type { LineScrubber } from "./stderrLines.js";
import { WatchedSet } from "./watchedSet.js";
import {
  exitsWithin,
  readPipes,
  STDIN_BACKLOG_BYTES,
  stdinBacklog,
  stopChild,
  writeLine,
} from "./workerPipes.js";

export type { Generation } from "./generation.js";
export type { DownReason } from "./link.js";
export type { SettledProcess } from "./replacement.js";
export { LaunchError } from "./spawn.js";

/** The events of a launched server: see link.ts (`changed` carries the new StaticIdentity). */
export type SupervisorEvents = LinkEvents<Generation>;

/**
 * How long a worker whose pipe closed may take to exit before it counts as one that lives on
 * without it: a pipe closes as its process exits too, a moment before the exit is seen.
 */
const PIPE_LOST_EXIT_MS = 500;

export interface SupervisorOptions {
  spec: LaunchSpec;
  cache: DigestCache;
  log: Logger;
  maxMessageBytes?: number;
  crashLoop?: { max: number; windowMs: number };
  backoff?: { initialMs: number; maxMs: number };
  shutdownGraceMs?: number;
  /** how often replacement is checked while idle */
  pollMs?: number;
  /**
   * Values put into the server's environment at this spawn only (credentials delivered in the
   * environment, from the unlocked vault). Never digested, stored or logged: the execution
   * record's envDigest covers `spec.env`, where these variables hold placeholders.
   */
  spawnEnv?: () => Promise<{ env: Record<string, string>; credentials: SpawnCredentials }>;
  /**
   * Every line the server writes to stderr (cut into pieces of MAX_STDERR_LINE characters when
   * longer) is scrubbed with this before it is printed (the vault's released values,
   * src/vault/scrub.ts); absent: printed as written.
   */
  stderrScrub?: LineScrubber;
  /**
   * A crash loop (or a server that cannot be started again) pauses supervision instead of
   * ending it, when a file of the running code is watched: the gateway stays connected and the
   * next change of those files launches the server again. Set for onChange report and restart
   * of a stdio gateway, where the point is an edit-build loop under one agent session; without it
   * (or with nothing to watch) a crash loop ends supervision (`gave-up`). Never set for the HTTP
   * sessions of --listen: a paused session would keep its slot while serving nothing.
   */
  waitForChangeOnCrashLoop?: boolean;
  /**
   * Files to digest into the cache alongside the first launch's capture (the client's
   * executables, which the agent run records when the client initializes): hashed in parallel
   * with the server's tree instead of on the event loop after it, and never part of its identity.
   */
  warmAtLaunch?: () => readonly string[];
  /**
   * The server already spawned while the gateway was loading (earlyStart.ts): the first launch
   * takes it when it was spawned as that launch would spawn it, and shutdown ends it otherwise.
   */
  early?: EarlyStart | null;
}

export class Supervisor extends EventEmitter<SupervisorEvents> implements ServerLink<Generation> {
  current: Generation | null = null;
  /** non-null while no server runs until its files change (a crash loop under a watcher): why */
  paused: string | null = null;
  private stopping = false;
  /** the client reads slower than the server talks: the server's stdout is left unread (setReading) */
  private unread = false;
  /** the artifact watcher, following the identity captured at each launch */
  private readonly watched = new WatchedSet(
    (paths) => this.onArtifacts(paths),
    (open) => {
      // a change seen before the current generation first answered (see settle): at the batch's
      // first event, since a self-watcher swaps its worker sooner than the debounce ends
      const cur = this.current;
      if (open && cur?.alive && cur.settled === null) this.changedUnsettled.add(cur);
      this.loop.batch(open);
      // (after the batch was reported, if it was: see onArtifacts)
      if (!open) this.ownBatch = false;
      this.moveWindow(() => (this.stirs = Math.max(0, this.stirs + (open ? 1 : -1))));
    },
    (since) => {
      if (!this.stopping) this.emit("change-unseen", since);
    },
  );
  /** the watcher's batches opened and not yet handed over (watchArtifacts' `stirred`) */
  private stirs = 0;
  /** captures under way that compare a change with the running code (compareWithRunning) */
  private judging = 0;
  /**
   * Paths the watcher reported while no live generation could be compared with them (a launch,
   * respawn, restart or replacement under way): compared with the next one once it is up.
   */
  private missed: string[] | null = null;
  /**
   * The batch of changes the watcher had open when supervision paused for a server that keeps
   * changing its files as it starts (restart): that server's own writes, which resume nothing.
   */
  private ownBatch = false;
  /**
   * A change that ended a pause whose report could not be made (the capture for it failed: a
   * build caught half-written): the generation that crashed and the paths. Reported against that
   * generation by the next capture that succeeds, before the epoch it launches comes up (launch),
   * or by the next resume's, its paths then joined to that resume's: never dropped.
   */
  private unreported: { gen: Generation; paths: string[] } | null = null;
  private poll: NodeJS.Timeout | null = null;
  private respawnTimer: NodeJS.Timeout | null = null;
  private restarting = false;
  /** the worker a replacement's identity is being captured for (replace), while it is */
  private replacing: ChildProcessWithoutNullStreams | null = null;
  private readonly replacements = new ReplacementDetector();
  /**
   * The generation shutdown is stopping while its answers are still read (its stdin closed, its
   * grace running), with the timer that ends the wait; null once it is `down`.
   */
  private draining: { gen: Generation; timer: NodeJS.Timeout } | null = null;
  private readonly groups: ProcessGroups;
  /** what counts toward a crash loop, the backoff, and whether the loop pauses or ends supervision */
  private readonly loop: CrashLoop;
  /** workers stopped because a pipe of theirs closed while they ran: what happened, for their exit */
  private readonly pipeLost = new WeakMap<ChildProcessWithoutNullStreams, string>();
  /**
   * Workers the supervisor stopped itself (a restart, an uncapturable replacement): their exit is
   * never a crash. `restarting` alone does not cover it: stopChild gives up waiting after its
   * grace, and on a loaded machine the exit of the worker it killed is read later, while the
   * restart's launch is under way and the stopped worker is still `current`. Taken for a crash,
   * that exit was counted toward the crash loop and respawned the server beside the launch: two
   * launches, one epoch left running unseen.
   */
  private readonly stoppedByUs = new WeakSet<ChildProcessWithoutNullStreams>();
  /** generations whose files' content changed before they first answered (settle) */
  private readonly changedUnsettled = new WeakSet<Generation>();
  /** the swaps before the first answer already reported, per generation (checkEarly) */
  private readonly swapsSaid = new WeakMap<Generation, Set<string>>();
  /** the quick look due before the first answer (lookSoon), if any */
  private soon: { gen: Generation; timer: NodeJS.Timeout } | null = null;
  /** serverExes, once resolved (undefined: not yet) */
  private launchExes: ReadonlySet<string> | null | undefined = undefined;

  constructor(private readonly opts: SupervisorOptions) {
    super();
    this.groups = new ProcessGroups(opts.shutdownGraceMs ?? 1500);
    this.loop = new CrashLoop({
      crashLoop: opts.crashLoop,
      backoff: opts.backoff,
      waitForChange: opts.waitForChangeOnCrashLoop === true,
      watching: () => this.watched.watching,
    });
  }

  /** First launch. Throws LaunchError (exit 2 material) when the server cannot start at all. */
  async start(): Promise<Generation> {
    const gen = await this.launch("launch", this.opts.warmAtLaunch?.() ?? [], this.opts.early ?? null);
    this.poll = setInterval(() => this.checkReplacement(true), this.opts.pollMs ?? 500);
    this.poll.unref();
    collectWhenIdle();
    return gen;
  }

  /**
   * Starts the server while its identity is captured (spawnAndCapture). The epoch is minted, the
   * record made and `up` emitted only once both are done, and nothing reaches the server before
   * `up` (the gateway holds every client message until then), so no call is forwarded before the
   * epoch's identity is recorded.
   */
  private async launch(
    reason: Generation["reason"],
    alsoWarm: readonly string[] = [],
    early: EarlyStart | null = null,
  ): Promise<Generation> {
    const { spec, cache, log } = this.opts;
    const given = this.opts.spawnEnv ? await this.opts.spawnEnv() : null;
    const extra = given?.env ?? {};
    const prestarted = early?.take(spec, extra) ?? null;
    // its group is ours from the spawn: a shutdown during the capture ends it with the others
    const launched = (s: Started) => {
      const leader = leaderOf(s.child);
      if (leader !== null) this.groups.launched(leader);
    };
    const { started, stat } = await spawnAndCapture(spec, cache, log, extra, alsoWarm, prestarted, launched);
    if (this.stopping) {
      await discard(started);
      throw new LaunchError("the gateway is shutting down", true);
    }
    const child = await started.spawned;
    // a change that ended the pause, whose own capture failed: reported now, before the epoch
    const unreported = this.unreported;
    this.unreported = null;
    if (unreported !== null) this.reportChange(unreported.paths, unreported.gen, stat);
    const gen = newGeneration(stat, child, reason, started.startedAt, started.channel, given?.credentials);
    this.wire(gen);
    const previous = this.current;
    this.current = gen;
    this.loop.cameUp();
    const swapped = this.watched.follow(stat);
    this.emit("up", gen, previous);
    this.caughtUp(swapped);
    return gen;
  }

  private wire(gen: Generation): void {
    // Its group was recorded at its spawn (launch), with the start time read then: read here,
    // after the capture, it could be another process's, given the pid of a server reaped meanwhile.
    const { child } = gen;
    readPipes(
      child,
      {
        line: (text) => {
          const cur = this.current;
          // The pipe outlives a replaced worker; its bytes belong to whichever
          // generation currently owns the child.
          if (cur && cur.child === child) this.emit("line", text, cur);
        },
        oversize: (bytes, rawId, hasMethod) => {
          const cur = this.current;
          if (cur && cur.child === child) this.emit("oversize", bytes, cur, rawId, hasMethod);
        },
      },
      {
        maxMessageBytes: this.opts.maxMessageBytes,
        label: this.opts.spec.serverLabel,
        scrub: this.opts.stderrScrub ?? null,
        pipeLost: (detail) => this.onPipeLost(child, detail),
      },
    );
    // a new process while the client is backed up starts unread, as the one it replaces was
    if (this.unread) child.stdout.pause();
    child.on("exit", (code, signal) => this.onExit(child, code, signal));
    // It was spawned before its identity was captured: it may already have exited.
    if (child.exitCode !== null || child.signalCode !== null) {
      const { exitCode, signalCode } = child;
      setImmediate(() => this.onExit(child, exitCode, signalCode));
    }
  }

  private onExit(
    child: ChildProcessWithoutNullStreams,
    code: number | null,
    signal: NodeJS.Signals | null,
  ): void {
    const cur = this.current;
    if (!cur || cur.child !== child) return;
    cur.alive = false;
    this.groups.end(child.pid!); // leftovers of the group (a watcher's worker, a forked child)
    const lost = this.pipeLost.get(child);
    const detail = lost ?? (signal ? `killed by ${signal}` : `exited with code ${code}`);
    if (this.stopping || this.restarting || this.stoppedByUs.has(child)) return;
    if (lost === undefined) this.emit("down", cur, "exit", detail); // else said when the pipe closed
    this.respawnAfter(detail);
  }

  /** The server exited on its own (`detail`: how), its epoch already down: respawn it, or stop. */
  private respawnAfter(detail: string): void {
    const stop = this.loop.crashed(detail);
    if (stop) {
      this.stopFor(stop);
      return;
    }
    const delay = this.loop.nextBackoff();
    this.opts.log.info(`server ${detail}; respawning in ${delay} ms`);
    this.respawnTimer = setTimeout(() => {
      this.respawnTimer = null;
      if (this.stopping) return;
      this.launch("respawn").catch((e) => this.launchFailed(e));
    }, delay);
  }

  /**
   * A pipe of the worker closed (`detail`: which). Only a worker still running after a moment is
   * stuck: one that exited is the exit handler's. A worker that can neither be written to nor
   * heard from serves nobody, yet would be held as the live epoch for ever (calls waiting on
   * it, lists held for a catalog that never comes): its epoch ends as a crash's does (`down`,
   * its calls in flight answered), it is stopped with its process group, and its exit then
   * counts toward the crash loop and respawns it, under the detail said here. With a wrapper
   * (sh, npx) the pipes are shared by it and the server it started: they close only once every
   * process holding them closed them, so a server that closes its copy behind a wrapper that
   * keeps its own is not seen here.
   */
  private onPipeLost(child: ChildProcessWithoutNullStreams, detail: string): void {
    if (this.stopping || this.pipeLost.has(child)) return; // at shutdown, the pipes close as they should
    void exitsWithin(child, PIPE_LOST_EXIT_MS).then((exited) => {
      const cur = this.current;
      if (exited || cur?.child !== child || this.stopping || this.pipeLost.has(child)) return;
      const live = cur.alive && !this.restarting;
      // A replaced worker whose replacement is being captured has no epoch to end, but dropped
      // here it would be given one when the capture ends, on a pipe nobody will ever answer on.
      // A worker a restart is stopping is that restart's.
      if (!live && this.replacing !== child) return;
      const what = `${detail} while still running`;
      this.pipeLost.set(child, what);
      this.opts.log.warn(
        `server ${what}: it can no longer serve; stopping it (process group ${child.pid}) as after a crash`,
      );
      if (live) {
        cur.alive = false;
        this.emit("down", cur, "exit", what);
      }
      void stopChild(child, this.opts.shutdownGraceMs ?? 1500);
    });
  }

  /** The loop limit was reached, or the server cannot be started: pause until its files change, or end. */
  private stopFor(stop: LoopStop): void {
    if ("pause" in stop) this.pause(stop.pause, stop.told);
    else this.emit("gave-up", stop.giveUp);
  }

  /**
   * No server runs until one of its watched files changes. The gateway stays connected and
   * answers at once, with `paused` as the reason, what would otherwise wait for a server.
   * `told`: what the client is told instead of `why` (absent: `why`), for a reason that quotes
   * more than the client needs (a capture's error names files and commands; the log is redacted,
   * a refusal is not).
   */
  private pause(why: string, told = why): void {
    this.paused = `${told}; portcullis starts it again at the next change of its files`;
    this.opts.log.status(
      `${why}; supervision paused, the client stays connected: portcullis waits for the next change of the server's files to start it again`,
    );
    this.emit("paused", this.paused);
    // a change seen since the last launch came up is a change after the code that crashed
    const missed = this.missed;
    this.missed = null;
    if (missed !== null && missed.length > 0) this.resume(missed);
  }

  /**
   * The files changed while paused: a new launch (a new epoch), with a fresh crash count and
   * backoff. The change is reported first as any change is (`changed`, against the generation
   * that crashed: the audit's artifact_changed names the paths and parts), then the server is
   * started; the gateway does not act on a change of a generation that is gone. When the capture
   * for the report fails (a build caught half-written), the change is kept (`unreported`) and
   * reported by the next capture that succeeds: the launch's own, before its epoch comes up, or,
   * when the launch cannot capture either and supervision pauses again, the next resume's.
   */
  private resume(paths: string[]): void {
    this.paused = null;
    this.loop.reset();
    const crashed = this.current;
    // a change kept from an earlier resume (its launch could not capture either) is this one's too
    const earlier = this.unreported?.paths ?? [];
    this.unreported = null;
    const changed = [...new Set([...earlier, ...paths])].sort();
    const start = () => {
      if (this.stopping) return;
      this.opts.log.status(`${changed.join(", ")} changed; starting the server again`);
      this.launch("restart").catch((e) => this.launchFailed(e));
    };
    if (!crashed) {
      start();
      return;
    }
    captureStaticIdentity(this.opts.spec, this.opts.cache)
      .then(
        (next) => {
          if (!this.stopping) this.reportChange(changed, crashed, next);
        },
        (e) => {
          this.unreported = { gen: crashed, paths: changed };
          this.opts.log.warn(
            `cannot read the server's identity after ${changed.join(", ")} changed (the change is recorded at the next capture that succeeds): ${(e as Error).message}`,
          );
        },
      )
      .catch((e) =>
        this.opts.log.warn(`cannot report the change of the server's files: ${(e as Error).message}`),
      )
      .finally(start);
  }

  /** `changed`: `paths` changed since `gen`'s code (gone: the gateway only records it), `next` captured after. */
  private reportChange(paths: string[], gen: Generation, next: StaticIdentity): void {
    const parts = changedParts(gen.static, next);
    const named = parts.length > 0 ? contentChangedPaths(paths, gen.static, next) : paths;
    this.emit("changed", named, parts, next, gen);
  }

  /**
   * A launch after the first, or a replacement, could not start the server (its identity cannot
   * be captured): paused until its files change, or supervision ends.
   */
  private launchFailed(e: unknown): void {
    if (this.stopping) return;
    this.stopFor(this.loop.cannotStart((e as Error).message));
  }

  /** Writes one message to the current worker. False when no worker can take it. */
  send(msg: unknown): boolean {
    return this.sendText(JSON.stringify(msg));
  }

  /**
   * Why the current worker is sent no more requests: more than STDIN_BACKLOG_BYTES written to it
   * wait for it to read them (it reads none of its input, or far slower than it is sent); null
   * otherwise. Requests are refused meanwhile rather than queued in the gateway's memory.
   */
  get notReading(): string | null {
    const cur = this.current;
    if (!cur?.alive) return null;
    const waiting = stdinBacklog(cur.child);
    return waiting > STDIN_BACKLOG_BYTES
      ? `the server process is not reading its input: ${(waiting / (1024 * 1024)).toFixed(1)} MiB written to it wait to be read`
      : null;
  }

  /**
   * The current worker still runs, but its stdin is closed (what sendText refuses to write to):
   * a request it cannot take is refused saying so, not as if no process ran, and saying what
   * follows: the worker is stopped as after a crash, and that crash respawns it or, at the loop
   * limit, pauses (or ends) supervision. Null while it can take input, or none runs.
   */
  get inputClosed(): AfterCrash | null {
    const cur = this.current;
    return cur?.alive === true && cur.child.stdin.destroyed ? this.loop.afterNextCrash() : null;
  }

  /** Writes one serialised message (one line, no newline) to the current worker. */
  sendText(text: string): boolean {
    const cur = this.current;
    if (!cur?.alive || cur.child.stdin.destroyed) return false;
    writeLine(cur.child, text);
    return true;
  }

  /**
   * Records the processes that answer for this generation. Called when the
   * worker has answered its first request, so wrappers (npx, sh) have started
   * the real server by then.
   */
  settle(gen: Generation): void {
    if (gen.settled || !gen.alive) return;
    // one more look before the tree is settled: a swap since the last is reported as one (the
    // gateway's probe judges it), not taken for the tree the epoch started with
    if (gen === this.current && !this.restarting && !this.stopping) this.checkEarly(gen, true);
    if (gen === this.current) this.loop.answered();
    settleGeneration(gen);
    // Replacement detection compares with the processes settled here: a server under its own
    // watcher (node --watch, nodemon…) whose worker the watcher swapped for the new build before
    // the first answer (a build broken at launch, fixed while the client's initialize waited in
    // the pipe) would have that new worker settled as the epoch's own, and serve the new build
    // under the epoch whose identity is the old one. Its files changed (or were written) since
    // the capture: the code that answered may be the new build, so it is a replacement (deny first).
    const watcher = this.changedUnsettled.has(gen) ? selfWatcherOf(gen.record) : null;
    if (watcher !== null && gen === this.current && !this.restarting && !this.stopping)
      this.replace(gen, `its files changed before it first answered, under its own watcher (${watcher})`);
  }

  /**
   * Cheap check (a few /proc reads) that the settled processes are the ones running the code
   * they ran. A watcher that keeps the pipe and swaps its child (node --watch, tsx watch,
   * nodemon) is caught here, before the next request is forwarded; so is a process that
   * execve()s into other code under the same pid (its code and stack addresses, in the stat
   * line the start time is read from; `thorough`, on the idle poll: also its executable file
   * and auxiliary vector). A helper the server ran (git, a shell) that exits with nothing in
   * its place is not a replacement: the code that answers is unchanged. One that answered on the
   * gateway's pipe (a watcher's worker, killed) leaves the code that reads the next request
   * unknown until something takes its place: the generation's `codeUnknown` says so, and the
   * gateway holds guarded requests meanwhile. Before the first answer (nothing settled yet) the
   * look is checkEarly's.
   */
  checkReplacement(thorough = false): boolean {
    const cur = this.current;
    if (!cur?.alive || this.restarting) return false;
    if (!cur.settled) {
      this.checkEarly(cur);
      return false; // a swap before the first answer is no replacement by itself (checkEarly)
    }
    const found = this.replacements.look(cur, thorough); // at most once per event-loop turn
    if (found === null || found === ROOT_GONE) return false; // ROOT_GONE: the exit handler owns this case
    if (typeof found === "object") {
      this.readerGone(cur, found.unknown);
      return false;
    }
    this.replace(cur, found);
    return true;
  }

  /**
   * Before `gen`'s first answer, on the idle poll and as each client request arrives (and once
   * more as it settles): its processes so far, and whether a watcher restarted its worker
   * meanwhile (ReplacementDetector.lookEarly). The settled set is taken only at the first answer,
   * so without this a worker replaced before it answered anything (a watcher's swap while the
   * client's first initialize waits in the killed worker) was never seen: that initialize was
   * never answered, and the new worker served under the epoch recorded for the old code.
   */
  private checkEarly(gen: Generation, force = false): void {
    const { replaced, answering, againMs } = this.replacements.lookEarly(gen, this.serverExes(), force);
    if (againMs !== null) this.lookSoon(gen, againMs);
    for (const a of answering)
      this.opts.log.debug(
        `before its first answer, process ${a.pid} (${a.exe ?? "unknown executable"}) holds the gateway's output pipe: epoch=${gen.epoch}`,
      );
    if (replaced === null) return;
    // Said once per swap. Not a replacement by itself: nothing under /proc says whether the gone
    // worker read what the gateway wrote (a build broken at launch dies before reading anything,
    // and the next worker answers the request still in the pipe). The gateway finds out with a
    // request of its own behind what waits, and calls replaceBeforeAnswer when something was lost.
    const said = this.swapsSaid.get(gen) ?? new Set<string>();
    this.swapsSaid.set(gen, said);
    if (said.has(replaced)) return;
    said.add(replaced);
    this.opts.log.debug(`${replaced}: epoch=${gen.epoch}, before its first answer`);
    // After what is being handled now: a client request whose arrival made this look is written
    // first (the probe goes behind it), and a first answer being read is taken first.
    queueMicrotask(() => this.emit("swapped-before-answer", gen, replaced));
  }

  /**
   * One more checkEarly of `gen` in `ms` (a process was seen only as its parent's copy), unless one
   * is already due for it: dropped once `gen` answered, went away, or the supervisor stops or
   * restarts. One due for an earlier generation gives way (a respawn's new tree is the one looked at).
   */
  private lookSoon(gen: Generation, ms: number): void {
    if (this.soon !== null) {
      if (this.soon.gen === gen) return;
      clearTimeout(this.soon.timer);
    }
    const timer = setTimeout(() => {
      this.soon = null;
      if (gen === this.current && gen.alive && !gen.settled && !this.restarting && !this.stopping)
        this.checkEarly(gen);
    }, ms);
    timer.unref();
    this.soon = { gen, timer };
  }

  /** See ServerLink.replaceBeforeAnswer. */
  replaceBeforeAnswer(gen: Generation, detail: string): void {
    // (settled by now, most often: the answer to the gateway's probe was its first)
    if (gen !== this.current || !gen.alive || this.restarting || this.stopping) return;
    this.replace(gen, detail);
  }

  /**
   * The executables the launch runs the server's code with, as its identity resolves them (the
   * command's own, and its runtime: node for `npx x`, `sh -c "… node server"`, a watcher), real
   * paths, as /proc names a process's; null when the launch cannot be resolved now (any executable
   * then counts, deny first). What checkEarly takes for a restart of the server's own command.
   */
  private serverExes(): ReadonlySet<string> | null {
    if (this.launchExes !== undefined) return this.launchExes;
    const { spec } = this.opts;
    try {
      const r = resolveLaunch(spec.command, spec.args, resolve(spec.cwd), spec.env);
      const exes = [r.executable, r.runtime?.exe ?? null].filter((e): e is string => e !== null);
      this.launchExes = new Set(exes.map((e) => realpathOr(e)));
    } catch {
      this.launchExes = null;
    }
    return this.launchExes;
  }

  /**
   * Says once that `gen`'s worker went away (the status line, and `code-unknown`: the gateway
   * shows the state and restarts the server if nothing takes its place); its requests wait.
   */
  private readerGone(gen: Generation, why: string): void {
    if (gen.codeUnknown !== null) return;
    gen.codeUnknown = `${why} and nothing has taken its place yet`;
    this.opts.log.status(
      `${gen.codeUnknown}: epoch=${gen.epoch}; tool calls and guarded reads are held until the server's next worker is seen (a new epoch)`,
    );
    this.emit("code-unknown", gen);
  }

  private replace(old: Generation, detail: string): void {
    old.alive = false;
    this.restarting = true;
    this.replacing = old.child;
    this.emit("down", old, "replaced", detail);
    const child = old.child;
    captureStaticIdentity(this.opts.spec, this.opts.cache)
      .then((stat) => {
        this.restarting = false;
        this.replacing = null;
        if (this.stopping) return;
        const lost = this.pipeLost.get(child);
        if (child.exitCode !== null || child.signalCode !== null) {
          // It exited while its new identity was captured: its exit handler saw `restarting` and
          // left it to us. Dropped here, nothing respawned it and the gateway held every later
          // call for a server gone for good. Its epoch is already down (replaced): it counts as
          // a crash and is respawned as after one.
          const { exitCode, signalCode } = child;
          this.respawnAfter(
            lost ?? (signalCode ? `killed by ${signalCode}` : `exited with code ${exitCode}`),
          );
          return;
        }
        // a pipe of its lost meanwhile (onPipeLost): it is being stopped, and its exit handler,
        // with `restarting` over, respawns it
        if (lost !== undefined) return;
        // the same process, so the environment of its spawn: what the vault gave it then
        const gen = newGeneration(
          stat,
          child,
          "replaced",
          new Date().toISOString(),
          old.channel,
          old.spawnCredentials,
        );
        this.current = gen;
        this.loop.cameUp();
        const swapped = this.watched.follow(stat);
        this.emit("up", gen, old);
        this.caughtUp(swapped);
      })
      .catch((e) => this.replacementUncapturable(child, e));
  }

  /**
   * The replacement's identity cannot be captured (a build caught half-written): as for a
   * restart or respawn that cannot capture, supervision pauses until the files change, or ends.
   * The replaced worker runs code no epoch records, so it is stopped first, under `restarting`
   * as a restart stops its server: its exit is no crash, and nothing respawns it.
   */
  private async replacementUncapturable(child: ChildProcessWithoutNullStreams, e: unknown): Promise<void> {
    this.replacing = null;
    this.stoppedByUs.add(child);
    await stopChild(child, this.opts.shutdownGraceMs ?? 1500);
    this.restarting = false;
    this.launchFailed(
      new Error(`the replaced server's identity cannot be captured: ${(e as Error).message}`),
    );
  }

  /**
   * Replaces the worker under our control (onChange: restart; a worker gone with nothing in its
   * place: the gateway's fallback, `detail` then says so in the epoch's end). A change seen once
   * the server has run past its launch window is a new build: the crash count and backoff start
   * afresh. One seen while it was starting (or just after) may be the server writing its own
   * files: such restarts count toward the loop limit, and the limit pauses (or ends) supervision.
   * `crash`: the restart is for no change but a worker gone (what went wrong, in a few words): it
   * counts as a crash does, toward the crash loop.
   */
  async restart(
    detail = "restarted by portcullis after a change",
    crash?: string,
  ): Promise<Generation | null> {
    const cur = this.current;
    if (this.stopping) return null;
    // Judged by the last change seen only for a restart made for a change: a restart for a worker
    // gone was counted as one for a change seen as the server started (no change, or one older
    // than the generation, always looks so), and a node --watch server whose worker died a few
    // times was paused saying its files kept changing, when none had.
    const atStart = crash === undefined && cur !== null && this.loop.changeSeenAtStart();
    this.restarting = true;
    if (cur) {
      cur.alive = false;
      this.emit("down", cur, "restart", detail);
      this.stoppedByUs.add(cur.child);
      await stopChild(cur.child, this.opts.shutdownGraceMs ?? 1500);
    }
    this.restarting = false;
    if (this.stopping) return null;
    if (crash !== undefined) {
      const stop = this.loop.crashed(crash);
      if (stop) {
        this.stopFor(stop);
        return null;
      }
    } else if (atStart) {
      const stop = this.loop.restartedAtStart();
      if (stop) {
        // What the watcher saw while that server was being stopped, and what the kernel queued for
        // it before the server exited (read within this turn of the event loop), is the server's
        // own doing: its writes as it started, or as it stopped (state saved at exit). Taken for
        // a new build, it started the server again at once, the restart loop this pause ends.
        await new Promise((r) => setImmediate(r));
        if (this.stopping) return null;
        this.missed = null;
        this.ownBatch = this.stirs > 0;
        this.stopFor(stop);
        return null;
      }
    } else this.loop.reset();
    try {
      return await this.launch("restart");
    } catch (e) {
      // a build caught half-written (its entry gone for a moment) waits for the next change too
      if (this.stopping || !this.loop.waitsForChange()) throw e;
      this.launchFailed(e);
      return null;
    }
  }

  /**
   * The watcher saw `paths` change. Whether the running code changed is decided by a fresh
   * capture compared with the identity of the generation that runs: a change seen while none
   * runs (a launch under way) is kept for the next one, never judged against code that is gone.
   */
  private onArtifacts(paths: string[]): void {
    if (this.stopping) return;
    this.loop.changeSeen();
    if (this.paused !== null) {
      if (this.ownBatch) {
        this.ownBatch = false;
        this.opts.log.debug(`${paths.join(", ")} changed as the server stopped: still paused`);
        return;
      }
      if (paths.length > 0) this.resume(paths);
      return;
    }
    if (!this.current?.alive) {
      this.missed = [...(this.missed ?? []), ...paths];
      return;
    }
    this.compareWithRunning(paths);
  }

  private compareWithRunning(paths: string[]): void {
    const cur = this.current;
    if (!cur) return;
    this.moveWindow(() => this.judging++);
    captureStaticIdentity(this.opts.spec, this.opts.cache)
      .then((next) => {
        if (this.stopping) return;
        // another generation came up (or this one went) meanwhile: judge the change against it
        if (this.current !== cur || !cur.alive) return this.onArtifacts(paths);
        const parts = changedParts(cur.static, next);
        if (parts.length === 0 && paths.length === 0) return;
        if (parts.length > 0 && cur.settled === null) this.changedUnsettled.add(cur);
        // a change names only the files whose content changed; with none (written and put
        // back, or touched) the files written are what there is to say
        this.emit(
          "changed",
          parts.length > 0 ? contentChangedPaths(paths, cur.static, next) : paths,
          parts,
          next,
          cur,
        );
      })
      .catch((e) => this.opts.log.warn(`cannot re-read the server's identity: ${(e as Error).message}`))
      // after `changed` (whose restart, if any, has ended the generation by then)
      .finally(() => this.moveWindow(() => this.judging--));
  }

  /**
   * True from the watcher's first event on a file of the running code until a fresh capture has
   * judged every change seen (the debounce and the capture: a file written and put back within
   * them compares equal, yet what ran meanwhile may have loaded it). The gateway holds guarded
   * requests while it is true under onChange restart and disconnect.
   */
  get changePending(): boolean {
    return this.stirs > 0 || this.judging > 0;
  }

  /** Applies `step` to the change window's counts and tells when the window opens or closes. */
  private moveWindow(step: () => void): void {
    const was = this.changePending;
    step();
    const now = this.changePending;
    if (!was && now) this.emit("change-pending");
    else if (was && !now) this.emit("change-judged");
  }

  /**
   * A generation is up. Changes seen while it was being launched are compared with it now; so is
   * a fresh capture when the watched set was just replaced, since a file of the new set that
   * changed after the launch digested it and before its watcher was set up has no event.
   */
  private caughtUp(swapped: boolean): void {
    const missed = this.missed;
    this.missed = null;
    if (swapped || missed !== null) this.compareWithRunning([...new Set(missed)].sort());
  }

  /** Ends supervision: close stdin → SIGTERM → SIGKILL, the whole process group, and every earlier one. */
  async shutdown(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    if (this.poll) clearInterval(this.poll);
    if (this.soon !== null) clearTimeout(this.soon.timer);
    this.replacements.close();
    if (this.respawnTimer) clearTimeout(this.respawnTimer);
    this.groups.cancelPending();
    // a server spawned early that no launch took (shutdown came first) is ended with the rest
    const early = this.opts.early?.abandon();
    const cur = this.current;
    const graceMs = this.opts.shutdownGraceMs ?? 1500;
    // A server that already exited (paused after a crash loop, given up) is stopped by nothing
    // but ProcessGroups, which checks that its pid still names its group (stopChild sends nothing
    // to an exited one): reaped, its pid is free, and after a long pause may lead someone else's.
    const exited = cur !== null && (cur.child.exitCode !== null || cur.child.signalCode !== null);
    const earlier = this.groups.pgids().filter((g) => exited || g !== cur?.child.pid);
    // the watcher closes alongside: the server's end begins at once, so a hurry (a second
    // signal) that comes while the watcher closes finds every group it has to kill
    const stopping: Promise<void>[] = [this.watched.close(), this.groups.endNow(earlier)];
    if (early) stopping.push(early);
    if (cur) {
      // Nothing new is sent to it (no longer alive), but what it answers while it winds down is
      // still read and reaches the calls waiting on it, as when the client closes its input: it
      // is `down` (what is unanswered then is interrupted) only once it exited or the grace ran out.
      if (cur.alive) this.drain(cur, graceMs);
      cur.alive = false;
      stopping.push(stopChild(cur.child, graceMs).then(() => this.drained()));
    }
    await Promise.all(stopping);
    this.groups.clear();
  }

  /**
   * The client reads slower than the server talks (ServerLink.setReading): the current process's
   * stdout is left unread until `on` again, so that its writes wait in the pipe and in the server,
   * not in the gateway's memory (a server that floods notifications to a client that does not
   * read grew the gateway past a gigabyte in 15 s). Nothing is dropped. A process being stopped
   * (drained) is never read again.
   */
  setReading(on: boolean): void {
    this.unread = !on;
    const child = this.current?.child;
    if (!child || this.draining?.gen.child === child) return;
    if (on) child.stdout.resume();
    else child.stdout.pause();
  }

  /** Waits for `gen`'s last answers: until its pipes close (it exited) or `graceMs` passed. */
  private drain(gen: Generation, graceMs: number): void {
    // set before stopChild's own timer of the same length, so it fires first: the grace is over
    // for the answers before SIGTERM goes out
    const timer = setTimeout(() => this.drained(), graceMs);
    this.draining = { gen, timer };
    // "close", not "exit": an exit can be seen before the last lines of its stdout are read
    gen.child.once("close", () => this.drained());
  }

  /** The generation being stopped is down: its calls still unanswered are interrupted. */
  private drained(): void {
    const d = this.draining;
    if (d === null) return;
    this.draining = null;
    clearTimeout(d.timer);
    // Nothing the server says now reaches anyone: stop reading it. A server that floods its
    // output would otherwise keep the event loop busy, and the kill timers late, for seconds.
    d.gen.child.stdout.pause();
    this.emit("down", d.gen, "shutdown", "gateway shutting down");
  }

  /**
   * The gateway was told again to end while it shuts down (a second Ctrl-C): the grace is cut
   * short. The server is down at once (its calls still unanswered are interrupted); every process
   * group this supervisor launched, the current server's and the earlier ones', gets SIGKILL now,
   * and the shutdown under way ends as soon as they are gone.
   */
  hurry(): void {
    if (!this.stopping) void this.shutdown();
    // what the server has not answered by now never will be
    this.drained();
    this.groups.killAll();
  }
}
