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
  /** best effort: a failure is logged, never fatal */
  emit(e: GatewayEvent): void;
  /** durable: throws when the record cannot be written (then the call is refused) */
  emitDurable(e: GatewayEvent): void;
}

export const nullSink: EventSink = { emit() {}, emitDurable() {} };
