import type { AuditEvent, AuditLog } from "../audit/index.js";
import type { Logger } from "../util/log.js";
import type { EventSink } from "./events.js";

/**
 * Gateway events into the audit log. Best-effort events that cannot be written
 * are reported on stderr; the durable one (`tool_called`) throws, and the guard
 * then refuses the call.
 */
export function auditSink(audit: AuditLog, log: Logger): EventSink {
  return {
    emit(e) {
      try {
        audit.append(e as AuditEvent);
      } catch (err) {
        log.warn(`audit: cannot record ${e.type}: ${(err as Error).message}`);
      }
    },
    emitDurable(e) {
      audit.append(e as AuditEvent);
    },
  };
}
