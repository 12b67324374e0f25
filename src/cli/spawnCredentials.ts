import type { EventSink } from "../gateway/events.js";
import { quotedCommand } from "../store/stateDir.js";
import type { Logger } from "../util/log.js";
import { envHeldLine, type SpawnCredentials, type Withheld } from "../vault/delivery.js";
import type { DeliveryMismatch } from "../vault/deliveryMismatch.js";

/**
 * What the vault put in a new epoch's environment at spawn: recorded, and said on stderr. A
 * scope it withheld is said with its cause and the fix for that cause: an unlock, a `vault set`,
 * or (for a secret stored for HTTP delivery) the flag or the configuration key that makes the
 * two agree, from `mismatch`.
 */
export function reportSpawnCredentials(
  given: SpawnCredentials,
  events: EventSink,
  statusLog: Logger,
  serverLabel: string,
  epoch: string,
  mismatch: (scope: string) => DeliveryMismatch | null = () => null,
  /** the state directory, named in the commands given when it is not the default */
  stateDir?: string,
): void {
  const cmd = (args: string) => quotedCommand(args, stateDir);
  const { released, withheld } = given;
  if (released.length > 0) {
    events.emit({ type: "credential_released", serverLabel, epoch, deliver: "env", scopes: [...released] });
    statusLog.status(envHeldLine(epoch, released));
  }
  const of = (cause: Withheld["cause"]) => withheld.filter((w) => w.cause === cause).map((w) => w.scope);
  const locked = of("locked");
  if (locked.length > 0)
    statusLog.status(
      `vault locked: ${locked.join(", ")} withheld; the server started with placeholders, which it keeps after an unlock (environment credentials are given only when it starts): run ${cmd("unlock")}, then have your MCP client reconnect the server`,
    );
  for (const scope of of("missing"))
    statusLog.status(
      `no secret "${scope}" in the vault: the server started with a placeholder for it; store it with ${cmd(`vault set ${scope} --deliver env`)}, then have your MCP client reconnect the server`,
    );
  for (const scope of of("nul"))
    statusLog.status(
      `the secret "${scope}" holds a NUL byte, which no environment variable can carry: the server started with a placeholder for it; store it again with ${cmd(`vault set ${scope} --deliver env`)}, then have your MCP client reconnect the server`,
    );
  for (const scope of of("not-env")) {
    const m = mismatch(scope);
    statusLog.status(
      m
        ? `${m.why}: the server started with a placeholder for it; ${m.fix}, then restart the gateway`
        : `the vault stores "${scope}" for HTTP delivery only: the server started with a placeholder for it; store it with ${cmd(`vault set ${scope} --deliver env`)}, then have your MCP client reconnect the server`,
    );
  }
}
