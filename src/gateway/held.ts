import type { Id, Request } from "../relay/jsonrpc.js";

/**
 * Requests the gateway keeps until the current epoch's catalog is verified (tools/list and
 * tools/call while identity-pending). Past the hold timeout a request is handed to `expired`
 * (which answers identity_pending), so no client waits forever on a server whose catalog
 * cannot be fetched.
 */
export class HeldRequests {
  private readonly held: { msg: Request; timer: NodeJS.Timeout; bytes: number }[] = [];
  /** the JSON text length of the requests held, as `hold` was told it */
  private heldBytes = 0;

  constructor(
    private readonly timeoutMs: number,
    private readonly expired: (msg: Request) => void,
  ) {}

  /** Keeps `msg`, `bytes` long as JSON text (what `bytes` sums), until drained, cancelled or expired. */
  hold(msg: Request, bytes: number): void {
    const entry = {
      msg,
      bytes,
      timer: setTimeout(() => {
        const i = this.held.indexOf(entry);
        if (i === -1) return;
        this.held.splice(i, 1);
        this.heldBytes -= entry.bytes;
        this.expired(msg);
      }, this.timeoutMs),
    };
    entry.timer.unref();
    this.held.push(entry);
    this.heldBytes += bytes;
  }

  get size(): number {
    return this.held.length;
  }

  /** The JSON text length of the requests held. */
  get bytes(): number {
    return this.heldBytes;
  }

  /** Whether a request with this client id is held. */
  has(id: Id): boolean {
    return this.held.some((h) => h.msg.id === id);
  }

  /** Forgets the request with this client id (cancelled); false if none is held. */
  cancel(id: Id): boolean {
    const i = this.held.findIndex((h) => h.msg.id === id);
    if (i === -1) return false;
    const [entry] = this.held.splice(i, 1);
    clearTimeout(entry?.timer);
    this.heldBytes -= entry?.bytes ?? 0;
    return true;
  }

  /** Every held request, oldest first; none is held any more. */
  drain(): Request[] {
    this.heldBytes = 0;
    return this.held.splice(0).map((h) => {
      clearTimeout(h.timer);
      return h.msg;
    });
  }
}
