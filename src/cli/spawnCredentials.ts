import type { EventSink } from "../gateway/events.js";
import type { Logger } from "../util/log.js";
import { type envDelivery, envHeldLine } from "../vault/delivery.js";

/** What the vault put in a new epoch's environment at spawn: recorded, and said on stderr. */
export function reportSpawnCredentials(
  delivery: ReturnType<typeof envDelivery>,
  events: EventSink,
  statusLog: Logger,
  serverLabel: string,
  epoch: string,
): void {
  const { released, withheld } = delivery.last();
  if (released.length > 0) {
    events.emit({ type: "credential_released", serverLabel, epoch, deliver: "env", scopes: released });
    statusLog.status(envHeldLine(epoch, released));
  }
  if (withheld.length > 0)
    statusLog.status(
      `vault locked or missing ${withheld.join(", ")}: the server started with placeholders; unlock, then restart it`,
    );
}
