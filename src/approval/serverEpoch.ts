import type { Store } from "../store/db.js";

/**
 * The execution epoch the server of a request runs now, when it is no longer the epoch the
 * request named; null while that epoch is still the server's, or when the store cannot tell.
 *
 * Read from the status rows the gateways keep: the `epochs` row of the request's epoch names the
 * gateway whose supervisor minted it, and that gateway's row names the epoch it serves now (set
 * when a new epoch comes up). An approval is bound to the epoch its request named, so once the
 * server moved on it covers nothing: the human deciding should be told so.
 */
export function epochMovedOn(db: Store, epoch: string): string | null {
  const row = db
    .prepare(
      `SELECT g.epoch AS now FROM epochs e JOIN gateways g ON g.gateway_id = e.gateway_id
        WHERE e.epoch = ? AND g.ended_at IS NULL`,
    )
    .get(epoch) as { now: string | null } | undefined;
  return row?.now && row.now !== epoch ? row.now : null;
}
