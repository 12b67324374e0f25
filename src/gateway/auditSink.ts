import type { AuditEvent, AuditLog } from "../audit/index.js";
import type { Logger } from "../util/log.js";
import type { EventSink, GatewayEvent } from "./events.js";

/** How long a best-effort event may wait to share a transaction (lost on SIGKILL: only intents must survive). */
const BEST_EFFORT_DELAY_MS = 25;

interface Queued {
  event: GatewayEvent;
  done?: { resolve: () => void; reject: (e: Error) => void };
}

/**
 * Gateway events into the audit log with group commit: everything emitted in one
 * turn of the event loop is appended in one transaction, so concurrent calls share
 * one fsync instead of paying one each. Order is kept: events are chained in the
 * order they were emitted.
 *
 * A durable event (`tool_called`) resolves only after its transaction committed;
 * if the group cannot be written every durable event in it rejects and the guard
 * refuses those calls. Best-effort events that cannot be written are reported on
 * stderr; they never block a call.
 */
export function auditSink(audit: AuditLog, log: Logger): EventSink {
  let queue: Queued[] = [];
  let immediate: NodeJS.Immediate | null = null;
  let timer: NodeJS.Timeout | null = null;

  const flush = () => {
    if (immediate) clearImmediate(immediate);
    if (timer) clearTimeout(timer);
    immediate = null;
    timer = null;
    if (queue.length === 0) return;
    const batch = queue;
    queue = [];
    try {
      audit.appendMany(batch.map((q) => q.event as AuditEvent));
      for (const q of batch) q.done?.resolve();
    } catch (err) {
      // One bad event must not take the others down: retry them one by one.
      for (const q of batch) {
        try {
          audit.append(q.event as AuditEvent);
          q.done?.resolve();
        } catch (e) {
          if (q.done) q.done.reject(e as Error);
          else log.warn(`audit: cannot record ${q.event.type}: ${(e as Error).message}`);
        }
      }
      if (batch.length > 1)
        log.debug(`audit: a group of ${batch.length} was written one by one: ${(err as Error).message}`);
    }
  };

  return {
    emit(e) {
      // Best-effort events wait a little for company: a result written together
      // with the next call's intent costs no fsync of its own.
      queue.push({ event: e });
      if (!immediate && !timer) {
        timer = setTimeout(flush, BEST_EFFORT_DELAY_MS);
        timer.unref();
      }
    },
    emitDurable(e) {
      return new Promise<void>((resolve, reject) => {
        queue.push({ event: e, done: { resolve, reject } });
        if (!immediate) immediate = setImmediate(flush);
      });
    },
    flush,
  };
}
