import type { AuditEvent, AuditLog } from "../audit/index.js";
import type { Logger } from "../util/log.js";
import type { EventSink, GatewayEvent } from "./events.js";
import type { OpenIntents } from "./openIntents.js";

/** How long a best-effort event may wait to share a transaction (lost on SIGKILL: only intents must survive). */
const BEST_EFFORT_DELAY_MS = 25;

interface Queued {
  event: GatewayEvent;
  condition?: () => boolean;
  done?: { resolve: (written: boolean) => void; reject: (e: Error) => void };
}

/**
 * Gateway events into the audit log with group commit: everything emitted in one
 * turn of the event loop is appended in one transaction, so concurrent calls share
 * one fsync instead of paying one each. Order is kept: events are chained in the
 * order they were emitted.
 *
 * A durable event (`tool_called`) resolves only after its transaction committed;
 * if the group cannot be written every durable event in it rejects and the guard
 * refuses those calls. Its condition, if any, is read inside that transaction: the
 * guard's way of making what a decision rested on hold when the intent is recorded. Best-effort events that cannot be written are reported on
 * stderr; they never block a call.
 */
export function auditSink(audit: AuditLog, log: Logger, intents?: OpenIntents): EventSink {
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
    const item = (q: Queued) => ({ event: q.event as AuditEvent, condition: tracked(q) });
    try {
      const written = audit.appendIf(batch.map(item));
      for (let i = 0; i < batch.length; i++) batch[i]?.done?.resolve(written[i] !== null);
    } catch (err) {
      // One bad event must not take the others down: retry them one by one.
      for (const q of batch) {
        try {
          const [written] = audit.appendIf([item(q)]);
          q.done?.resolve(written !== null);
        } catch (e) {
          if (q.done) q.done.reject(e as Error);
          else log.warn(`audit: cannot record ${q.event.type}: ${(e as Error).message}`);
        }
      }
      if (batch.length > 1)
        log.debug(`audit: a group of ${batch.length} was written one by one: ${(err as Error).message}`);
    }
  };

  // A call's intent opens its row in the open-intents table, its end closes it: inside the
  // transaction that writes the record (a condition runs there), so the two never disagree.
  const tracked = (q: Queued): (() => boolean) | undefined => {
    const e = q.event as AuditEvent;
    if (!intents) return q.condition;
    if (e.type === "tool_called")
      return () => {
        if (q.condition && !q.condition()) return false;
        intents.opened(e);
        return true;
      };
    if (e.type === "tool_result" || e.type === "call_interrupted")
      return () => {
        intents.closed(e);
        return true;
      };
    return q.condition;
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
    emitDurable(e, condition) {
      return new Promise<boolean>((resolve, reject) => {
        queue.push({ event: e, condition, done: { resolve, reject } });
        if (!immediate) immediate = setImmediate(flush);
      });
    },
    flush,
  };
}
