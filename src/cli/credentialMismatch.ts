import type { ServerConfig } from "../config/config.js";
import type { Store } from "../store/db.js";
import { credentialPlaceOf, type DeliveryMismatch, deliveryMismatch } from "../vault/deliveryMismatch.js";
import { type SecretPolicy, storedPolicies } from "../vault/secrets.js";

/**
 * How the vault's stored policy for `scope` disagrees with `server`'s configuration, read from
 * the store now (a secret may have been stored again since the gateway started); null when it
 * agrees, or when nothing is stored under that name (a missing secret, said as such).
 */
export function credentialMismatch(
  server: ServerConfig,
  store: Store,
  scope: string,
  /** the gateway's state directory, named in the fix's commands when it is not the default */
  stateDir?: string,
): DeliveryMismatch | null {
  let policy: SecretPolicy | undefined;
  try {
    policy = storedPolicies(store).get(scope);
  } catch {
    // advice only: a store busy past its timeout leaves the plain reason
    return null;
  }
  if (!policy) return null;
  const place = credentialPlaceOf(server);
  for (const spec of server.credentialSpecs) {
    const m = spec.secret === scope ? deliveryMismatch(spec, policy, place, stateDir) : null;
    if (m) return m;
  }
  return null;
}
