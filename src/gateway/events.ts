import type { KeyObject } from "node:crypto";
import type { AppendCondition, OwnSession } from "../audit/log.js";

/**
 * What the gateway reports happened. Every event goes to the audit log (when
 * one is attached) and the server-lifecycle ones also to the status table.
 * Events carry names, digests and ids — never secret values.
 */
export interface GatewayEvent {
  type: string;
  [k: string]: unknown;
}

export interface EventSink {
  /**
   * best effort: a failure is logged, never fatal; written with the next group. With a
   * `condition`, read under the audit log's write lock just before the record is written: false
   * writes nothing (how a record is written once when several processes may write it). It is told
   * the seq the record takes (a run's row records its start's). With an `ownSession`, the record
   * is sealed in a writer session of its own (a catalog revision's: src/catalog/revisionRecords.ts).
   */
  emit(e: GatewayEvent, condition?: AppendCondition, ownSession?: OwnSession): void;
  /**
   * durable: resolves true once the record is on disk; rejects when it cannot be written (then
   * the call is refused). With a `condition`, read under the audit log's write lock just before
   * the record is written: false resolves false, and nothing is written.
   */
  emitDurable(e: GatewayEvent, condition?: AppendCondition, ownSession?: OwnSession): Promise<boolean>;
  /**
   * The event of the record at `seq` when it was sealed in the writer session of its own whose
   * ephemeral private key is `esk` (`ownSession` above: derived publicly from what it is about),
   * else null. Absent: no audit log to read (nothing is taken for recorded).
   */
  openOwn?(seq: number, esk: KeyObject): GatewayEvent | null;
  /** writes whatever is still queued (at shutdown) */
  flush(): void;
}
