import type { ClientIds } from "../relay/clientIds.js";

/**
 * A message toward the client: the port a transport (src/transport/) implements for the gateway.
 */
export interface Downstream {
  send(msg: unknown): void;
  /**
   * As `send`, for a message already serialised with the client's ids as it wrote them (a relayed
   * answer with its id restored, `src/relay/rawSplice.ts`); absent: the gateway uses `send`.
   */
  sendText?(text: string): void;
  /**
   * true: the transport writes the client's own subscription id into a message that names one
   * (`_meta["io.modelcontextprotocol/subscriptionId"]` of its params or result: HTTP sessions), so
   * such a message is always written again from what the gateway read, never sent as text.
   */
  readonly rewritesSubscriptionIds?: boolean;
  close(): void;
  /** how the transport keeps the client's ids byte-exact (absent: ids are taken as parsed) */
  clientIds?: ClientIds;
}
