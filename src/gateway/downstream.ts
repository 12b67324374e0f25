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
  close(): void;
  /** how the transport keeps the client's ids byte-exact (absent: ids are taken as parsed) */
  clientIds?: ClientIds;
}
