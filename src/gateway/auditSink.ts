import type { AuditEvent, AuditLog } from "../audit/index.js";
import type { AppendCondition, OwnSession } from "../audit/log.js";
import { safeText } from "../catalog/text.js";
import { BRIEF_WAIT_MS, busyTimeoutMs, isBusy, writeProblem, writeRefused } from "../store/db.js";
import { cutShort } from "../util/cut.js";
import type { Logger } from "../util/log.js";
import type { EventSink, GatewayEvent } from "./events.js";
import type { OpenIntents } from "./openIntents.js";

interface Queued {
  event: GatewayEvent;
  condition?: AppendCondition;
  ownSession?: OwnSession | undefined;
  done?: { resolve: (written: boolean) => void; reject: (e: Error) => void };
}

/**
 * Gateway events into the audit log with group commit: everything emitted in one
 * turn of the event loop is appended in one transaction, so concurrent calls share
 * one transaction (one fsync) instead of paying one each. Order is kept: events are chained in
 * the order they were emitted.
 *
 * A durable event (`tool_called`) resolves only after its transaction committed;
 * if the group cannot be written every durable event in it rejects and the guard
 * refuses those calls. Its condition, if any, is read inside that transaction: the
 * guard's way of making what a decision rested on hold when the intent is recorded. Before every
 * group the store's files (the database, -wal and -shm) are checked (AuditLog.checkStoreFiles): once one
 * of them was deleted or replaced, every durable event rejects with the sentence naming it and nothing
 * more is written, best-effort events included (the gateway ends: src/store/storeWatch.ts).
 *
 * With the log's sync "full", a group holding intents is committed without an fsync and the
 * intents resolve once an fsync of the WAL, run off the event loop, has covered their commit: the
 * same durability as an fsync inside the commit, without stopping the gateway while the disk
 * works, so that the calls arriving meanwhile form the next group. A lone intent while no other
 * call is in flight and syncs are quick is synced on the loop instead (see syncNow).
 *
 * Best-effort events (a call's result, emitted once the result was forwarded) are written at the
 * end of the turn that emitted them, after whatever that turn sent, so that they are not carried
 * by the next call's intent, on its way to the server: when no other call is in flight. While
 * other calls are in flight (intents written, ends not yet emitted), they wait for the next group
 * that commits anyway (the next intents, or the end of the last call in flight), at most
 * RIDE_MS: one transaction for both instead of one each (see docs/performance-history.md, "Audit
 * commits at c=16, sixth pass"). A group with no durable event commits without an fsync
 * (`relaxed`): it survives the gateway being killed once committed; the next durable commit's fsync
 * covers it against a power loss. Those that cannot be written are reported on stderr; they never
 * block a call.
 *
 * Another process holding the store's lock (a database browser inside a transaction, an sqlite3
 * shell, a backup) is waited for GROUP_BUSY_MS at most by a group, not the connection's busy
 * timeout: better-sqlite3 is synchronous, and that wait held the event loop (every other call, a
 * ping, the server's answers, signals) for 10 s per group. A group that meets the lock is kept,
 * ahead of what comes after it, and tried again after growing pauses, with the loop free
 * meanwhile; its intents' calls wait, as they waited inside the statement before. Once the lock
 * has been held for the busy timeout (`patienceMs`), as before: the intents reject (their calls
 * are refused) and the other events are dropped, said in one line.
 *
 * While the gateway ends (`holdOnBusy`, src/store/ending.ts), a group that meets another
 * process's lock is neither waited for nor dropped: its best-effort events stay queued, in order,
 * for the next flush (the gateway's last attempt), and what is still queued after it
 * (`unwritten`) is said once by the gateway.
 */
export interface AuditSink extends EventSink {
  /** From now on a group that fails on the store's lock is kept, not dropped (the gateway ends). */
  holdOnBusy(): void;
  /** The types of the events still queued, in order (after the last flush: never written). */
  unwritten(): string[];
  /** Says now the counts of records not written not said yet (unwrittenWarnings; the gateway ends). */
  sayUnwrittenCounts(): void;
}

export function auditSink(
  audit: AuditLog,
  log: Logger,
  intents?: OpenIntents,
  opts: {
    // the bound a test sets wider, so that a loaded machine's slow turns cannot reach it
    rideMs?: number;
    /** how long a group keeps trying while another process holds the lock (the busy timeout) */
    patienceMs?: number;
  } = {},
): AuditSink {
  const rideMs = opts.rideMs ?? RIDE_MS;
  const warnings = unwrittenWarnings(log);
  const patienceMs = opts.patienceMs ?? busyTimeoutMs();
  let queue: Queued[] = [];
  let holding = false;
  let immediate: NodeJS.Immediate | null = null;
  // Best-effort events waiting for the next group (see ridesLater), and the bound on their wait.
  let deferred: NodeJS.Timeout | null = null;
  /** Ends (tool_result, call_interrupted) in the queue: calls no longer in flight. */
  let queuedEnds = 0;
  // A held lock (see GROUP_BUSY_MS): since when the queue's head has met it, and the next try.
  let lockedSince: number | null = null;
  let tries = 0;
  let retry: NodeJS.Timeout | null = null;
  /** when the last group's write began, performance.now() (its wait for the lock counts toward `patienceMs`) */
  let tried = 0;
  // Pipelined durability (sync "full"): groups are committed without an fsync and made durable
  // by one fsync of the WAL in the thread pool; groups committed while one runs wait for the
  // next, which covers them all. The event loop keeps relaying and gathering meanwhile.
  let syncing = false;
  let afterSync: ((err: Error | null) => void)[] = [];
  const startSync = () => {
    const covered = afterSync;
    afterSync = [];
    syncing = true;
    const started = performance.now();
    audit.syncWal((err) => {
      syncing = false;
      timed(started);
      for (const settle of covered) settle(err);
      if (afterSync.length > 0) startSync();
    });
  };
  const whenDurable = (settle: (err: Error | null) => void) => {
    afterSync.push(settle);
    if (!syncing) startSync();
  };

  // A lone intent with no fsync under way and no other call at the server (one call at a time):
  // synced on the event loop. The loop has nothing else to do meanwhile, and the thread pool's hop
  // there and back (a wake-up of a pool thread, then of the loop) would only add to the call's
  // latency. With other calls in flight their answers must not wait for the disk: the pool.
  // `open` counts the calls whose intent was written and whose end was not yet emitted (an
  // estimate for this choice only: durability is the same either way).
  // Only while syncs are quick (`syncMs`, a moving average of both kinds): on a disk that takes a
  // millisecond or more the hop is lost in the sync, and measured in alternating blocks of calls
  // on such a disk the pool did better (inline/pool p50 1.23 and 1.53; 0.91 where syncs took
  // ~0.4 ms), while the loop stays free for its timers.
  let open = 0;
  let syncMs = 0;
  const timed = (started: number) => {
    syncMs += (performance.now() - started - syncMs) / 8;
  };
  const countOpen = (batch: Queued[], written: readonly unknown[]) => {
    for (let i = 0; i < batch.length; i++) {
      const type = batch[i]?.event.type as string;
      if (isIntent(type) && written[i] !== null) open++;
      else if (isEnd(type) && open > 0) open--;
    }
  };
  // A best-effort event rides in the next group while calls other than those ending in the queue
  // are in flight: their ends, or the client's next calls, bring a group soon. Once the last call
  // in flight ended, nothing would: the group commits at the end of this turn.
  const ridesLater = () => open - queuedEnds > 0;
  const syncNow = (): Error | null => {
    const started = performance.now();
    try {
      audit.syncWalNow();
      return null;
    } catch (e) {
      return e as Error;
    } finally {
      timed(started);
    }
  };

  /**
   * Writes the queue as one group. `scheduled`: a group of the sink's own timing (the end of a
   * turn, a ride's bound, a held lock's next try) waits GROUP_BUSY_MS at most for another
   * process's lock and is kept when it meets it. A flush the caller asks for (`flush()`) is
   * one whose caller reads the outcome at once (a record whose condition writes a row, then the
   * row looked for): it waits the busy timeout, and what it cannot write is given up now.
   */
  const flushGroup = (scheduled: boolean) => {
    if (immediate) clearImmediate(immediate);
    immediate = null;
    if (retry) clearTimeout(retry);
    retry = null;
    if (deferred) clearTimeout(deferred);
    deferred = null;
    queuedEnds = 0;
    if (queue.length === 0) return;
    const batch = queue;
    queue = [];
    const item = (q: Queued) => ({
      event: q.event as AuditEvent,
      condition: tracked(q),
      ownSession: q.ownSession,
    });
    const durable = batch.some((q) => q.done);
    const later = durable && audit.canSyncLater;
    try {
      // Nothing is written once the store's files are no longer the ones this connection
      // writes through: an intent would be claimed durable in a log nobody reads, and any record
      // written through a deleted -shm lands where its index says the -wal ends, over the frames
      // a gateway that opened the store since appended there (its records gone, the chain still
      // verifying). One stat of each per group, at most once every 25 ms (a lost file makes
      // appendIf throw, below): best-effort groups too, the first after an idle spell included.
      audit.checkStoreFiles();
      tried = performance.now();
      closedElsewhere.clear();
      const written = audit.appendIf(batch.map(item), {
        relaxed: !durable || later,
        // a kept group's next tries wait only a little: the loop is not held while they repeat
        waitMs: scheduled ? (lockedSince === null ? GROUP_BUSY_MS : RETRY_BUSY_MS) : undefined,
      });
      sayClosedElsewhere();
      if (lockedSince !== null) unlocked(batch.length);
      const settle = (err: Error | null) => {
        for (let i = 0; i < batch.length; i++) {
          const done = batch[i]?.done;
          if (!done) continue;
          if (err) done.reject(new Error(`the audit log could not be made durable: ${err.message}`));
          else done.resolve(written[i] !== null);
        }
      };
      countOpen(batch, written);
      if (!later) settle(null);
      else if (!syncing && open <= 1 && syncMs < QUICK_SYNC_MS && lone(batch)) settle(syncNow());
      else whenDurable(settle);
    } catch (err) {
      // A try that did not meet the lock ends the lock's episode (a later one starts anew).
      if (!isBusy(err)) lockedSince = null;
      // The store's files were lost: nothing can be written any more, and that was said once.
      const lost = audit.lost;
      if (lost) {
        for (const q of batch) q.done?.reject(lost);
        return;
      }
      // The gateway ends and another process holds the lock: kept for the last attempt, ahead of
      // what was emitted since (nothing, the append being synchronous), instead of dropped one by
      // one (each a failure said on stderr). An intent is not kept: its call is refused.
      if (holding && isBusy(err)) {
        for (const q of batch) q.done?.reject(err as Error);
        queue = [...batch.filter((q) => !q.done), ...queue];
        return;
      }
      // Another process holds the lock: a one-by-one retry would only wait for it once per event.
      if (isBusy(err)) {
        if (scheduled) stillLocked(batch, err as Error);
        else givenUp(batch, err as Error, "past the busy timeout");
        return;
      }
      // One bad event must not take the others down: retry them one by one.
      for (const q of batch) {
        try {
          closedElsewhere.clear();
          const [written] = audit.appendIf([item(q)], {
            relaxed: !q.done,
            waitMs: scheduled ? GROUP_BUSY_MS : undefined,
          });
          sayClosedElsewhere();
          q.done?.resolve(written !== null);
        } catch (e) {
          if (q.done) q.done.reject(fileProblem(e));
          else warnings.failed(q.event.type, e);
        }
      }
      if (batch.length > 1)
        log.debug(`audit: a group of ${batch.length} was written one by one: ${(err as Error).message}`);
    }
  };

  const flushScheduled = () => flushGroup(true);

  // Ends whose open-intents row another process had taken (see tracked), in the transaction
  // being tried: cleared before each try (one rolled back runs its conditions again), said after
  // the one that committed.
  const closedElsewhere = new Set<AuditEvent>();
  const sayClosedElsewhere = () => {
    for (const e of closedElsewhere)
      log.warn(
        `audit: the ${e.type} of call ${callNamed(e)} was written, but its call had already been closed by another process (its open-intents row in the store was gone: the store was edited): a gateway that took this one for gone (its gateways or runs rows edited) may have recorded another end for it and ended this agent run; 'portcullis audit activity' shows a call with two ends as such`,
      );
    closedElsewhere.clear();
  };

  /**
   * The group met another process's lock: kept at the head of the queue and tried again after a
   * pause (25 ms, doubling to 250; each try waiting RETRY_BUSY_MS for the lock), nothing else
   * flushing meanwhile (see emit); past `patienceMs` since its first try began, given up.
   */
  const stillLocked = (batch: Queued[], err: Error) => {
    const now = performance.now();
    if (lockedSince === null) {
      lockedSince = tried;
      tries = 0;
      log.warn(
        `the store ${audit.storePath} is locked by another process: the audit records, and the calls whose intent is among them, wait for it (at most ${patienceMs} ms)`,
      );
    }
    if (now - lockedSince < patienceMs) {
      queue = [...batch, ...queue];
      retry = setTimeout(flushScheduled, Math.min(25 * 2 ** tries++, 250));
      return;
    }
    givenUp(batch, err, `for ${patienceMs} ms`);
  };
  /** The intents reject (their calls are refused), the other events are dropped: said in one line. */
  const givenUp = (batch: Queued[], err: Error, how: string) => {
    lockedSince = null;
    const dropped: string[] = [];
    for (const q of batch) {
      if (q.done) q.done.reject(err);
      else dropped.push(q.event.type);
    }
    log.warn(
      `audit: the store ${audit.storePath} stayed locked by another process ${how}: ${dropped.length} record(s) not written${dropped.length > 0 ? ` (${dropped.join(", ")})` : ""}${dropped.length < batch.length ? ", and the calls waiting for their intent refused" : ""}`,
    );
  };
  const unlocked = (written: number) => {
    lockedSince = null;
    log.info(
      `the store ${audit.storePath} is writable again: ${written} audit record(s) that waited for it written`,
    );
  };

  // A call's intent (or a guarded read's: request_forwarded) opens its row in the open-intents
  // table, its end closes it: inside the transaction that writes the record (a condition runs
  // there), so the two never disagree.
  const tracked = (q: Queued): AppendCondition | undefined => {
    const e = q.event as AuditEvent;
    if (!intents) return q.condition;
    if (e.type === "tool_called" || e.type === "request_forwarded")
      return (seq) => {
        if (q.condition && !q.condition(seq)) return false;
        intents.opened(e);
        return true;
      };
    if (e.type === "tool_result" || e.type === "call_interrupted")
      return () => {
        // The end is written either way (it is what this gateway saw); a row already taken is
        // said once, after the commit (a group retried under a held lock runs this again).
        if (!intents.closed(e)) closedElsewhere.add(e);
        return true;
      };
    return q.condition;
  };

  return {
    emit(e, condition, ownSession) {
      queue.push({ event: e, condition, ownSession });
      if (immediate) return; // a group is due at the end of this turn already
      if (retry) return; // the queue waits for a held lock: its next try takes this too
      if (isEnd(e.type)) queuedEnds++;
      if (!ridesLater()) {
        if (deferred) clearTimeout(deferred);
        deferred = null;
        immediate = setImmediate(flushScheduled);
      } else deferred ??= setTimeout(flushScheduled, rideMs);
    },
    emitDurable(e, condition, ownSession) {
      return new Promise<boolean>((resolve, reject) => {
        queue.push({ event: e, condition, ownSession, done: { resolve, reject } });
        if (!immediate && !retry) immediate = setImmediate(flushScheduled);
      });
    },
    flush: () => flushGroup(false),
    openOwn: (seq, esk) => audit.openOwn(seq, esk) as GatewayEvent | null,
    holdOnBusy() {
      holding = true;
    },
    unwritten() {
      return queue.map((q) => q.event.type);
    },
    sayUnwrittenCounts: () => warnings.end(),
  };
}

/**
 * How long a best-effort event waits, at most, for the next group while calls are in flight. At
 * 16 calls at a time the client's next call comes within a fraction of it; a gateway killed
 * meanwhile leaves the call's row in open_intents, closed by the next gateway (call_interrupted).
 */
const RIDE_MS = 2;

/** How long a group waits for another process's lock before it is kept and tried again later. */
const GROUP_BUSY_MS = BRIEF_WAIT_MS;
/** How long each later try of a kept group waits for the lock. */
const RETRY_BUSY_MS = 10;

const isIntent = (type: string) => type === "tool_called" || type === "request_forwarded";
const isEnd = (type: string) => type === "tool_result" || type === "call_interrupted";

/** Below this average an fsync is quick enough for the thread pool's hop to matter (see syncNow). */
const QUICK_SYNC_MS = 0.5;

/** The group holds one durable event (a lone intent). */
function lone(batch: Queued[]): boolean {
  let durable = 0;
  for (const q of batch) if (q.done && ++durable > 1) return false;
  return durable === 1;
}

/**
 * A write the file system refused (the disk full, the file size limit reached, a read-only file)
 * as the store's sentence and the one thing to do, which a refused call's reason then says (SQLite
 * says only "database or disk is full" or "disk I/O error"); any other failure as it is.
 */
function fileProblem(e: unknown): Error {
  return writeRefused(e) ? new Error(writeProblem(e)) : (e as Error);
}

/** How often, at most, the records not written for one cause are counted on stderr. */
const UNWRITTEN_EVERY_MS = 30_000;
/** How many causes unwrittenWarnings keeps count of; a failure of yet another is said as it is. */
const MAX_CAUSES = 16;

/**
 * The best-effort records that could not be written, said on stderr once per cause, then counted.
 * A full disk refuses every record of a busy agent: a line for each (SQLite's "database or disk
 * is full", as often as calls came) flooded the host's log and never said which store or what to
 * do. The first record a cause stops is said whole (the store's sentence and the one thing to do,
 * as a refused call's reason says them); the later ones are counted, by type, and the count said
 * at most every `everyMs` after the cause's last line (a timer that holds nothing up), and when
 * the gateway ends (`end`). A cause quiet for `everyMs`, its count said, is said whole again.
 * Failures of no known cause are keyed by their message, and said as they are.
 */
export function unwrittenWarnings(
  log: Pick<Logger, "warn">,
  everyMs = UNWRITTEN_EVERY_MS,
): { failed(type: string, e: unknown): void; end(): void } {
  interface Cause {
    sentence: string;
    said: number;
    count: number;
    types: Map<string, number>;
    timer: NodeJS.Timeout | null;
  }
  const causes = new Map<string, Cause>();
  const sayCount = (c: Cause) => {
    if (c.timer) clearTimeout(c.timer);
    c.timer = null;
    if (c.count === 0) return;
    const types = [...c.types].map(([type, n]) => `${type} ×${n}`).join(", ");
    log.warn(
      `audit: ${c.count} more record${c.count === 1 ? "" : "s"} not written (${types}), for the same reason: ${c.sentence}`,
    );
    c.said = performance.now();
    c.count = 0;
    c.types.clear();
  };
  return {
    failed(type, e) {
      const failure = writeRefused(e);
      const sentence = failure ? failure.message : ((e as Error)?.message ?? String(e));
      const key = failure ? `${failure.reason} ${failure.path}` : sentence;
      const now = performance.now();
      const c = causes.get(key);
      if (!c || (c.count === 0 && now - c.said >= everyMs)) {
        const whole = writeProblem(e).replace(/([^.])$/, "$1.");
        // a failure whose message varies from record to record is not kept past MAX_CAUSES
        if (!c && causes.size >= MAX_CAUSES) return log.warn(`audit: cannot record ${type}: ${whole}`);
        log.warn(
          `audit: cannot record ${type}: ${whole} Further records not written for this reason are counted, said at most every ${Math.round(everyMs / 1000)} s.`,
        );
        causes.set(key, { sentence, said: now, count: 0, types: new Map(), timer: null });
        return;
      }
      c.count++;
      c.types.set(type, (c.types.get(type) ?? 0) + 1);
      if (now - c.said >= everyMs) sayCount(c);
      else if (!c.timer) {
        c.timer = setTimeout(() => sayCount(c), everyMs - (now - c.said));
        c.timer.unref();
      }
    },
    end() {
      for (const c of causes.values()) sayCount(c);
    },
  };
}

/** A call as a warning names it: its tool and id, within its run (text a client chose, cut and made safe). */
function callNamed(e: AuditEvent): string {
  const tool = typeof e.tool === "string" ? e.tool : typeof e.method === "string" ? e.method : "?";
  const id = typeof e.requestIdText === "string" ? e.requestIdText : JSON.stringify(e.requestId ?? null);
  return (
    safeText(JSON.stringify(cutShort(`${tool} ${id}`))) +
    (typeof e.run === "string" ? ` of run ${safeText(e.run)}` : "")
  );
}
