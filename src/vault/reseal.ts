import type { Store } from "../store/db.js";
import { resealEgressCa } from "./egress/ca.js";
import { openSecret, policyOf, type SecretPolicy, sealSecret } from "./secrets.js";

/**
 * A key rotation's second step (docs/security.md, "Key rotation"): every vault secret, and the
 * egress CA key, that does not open under the keyring's data key but does under one it replaced
 * (UnlockedKeyring.earlierDataKeys) is sealed again under the current one. The secrets in one
 * transaction: all are resealed, or none. From then on a copy of the old keyring.json and the old
 * passphrase opens none of them.
 *
 * Run by rotate-keys right after the new keyring is in place, and again by every command that
 * opens the vault with the passphrase (unlock, vault set, vault rm): a rotation killed between
 * its keyring and its reseal is finished by the next one (until then the new keyring opens them
 * with the earlier data key it keeps). Nothing secret is said: counts only.
 */
export function resealVault(
  db: Store,
  stateDir: string,
  dataKey: Buffer,
  earlier: readonly Buffer[],
): { secrets: number; egressCa: boolean } {
  let secrets = 0;
  if (earlier.length > 0) {
    const rows = db.prepare("SELECT name, sealed, deliver, hosts_json FROM vault_secrets").all() as {
      name: string;
      sealed: Buffer;
      deliver: string;
      hosts_json: string;
    }[];
    const update = db.prepare("UPDATE vault_secrets SET sealed = ? WHERE name = ? AND sealed = ?");
    db.transaction(() => {
      for (const r of rows) {
        const policy = policyOf(r);
        if (opens(dataKey, r, policy)) continue;
        for (const k of earlier) {
          let value: string;
          try {
            value = openSecret(k, r.name, policy, r.sealed);
          } catch {
            continue;
          }
          update.run(sealSecret(dataKey, r.name, policy, value), r.name, r.sealed);
          secrets++;
          break;
        }
      }
    })();
  }
  return { secrets, egressCa: earlier.length > 0 && resealEgressCa(stateDir, dataKey, earlier) };
}

function opens(key: Buffer, r: { name: string; sealed: Buffer }, policy: SecretPolicy): boolean {
  try {
    openSecret(key, r.name, policy, r.sealed);
    return true;
  } catch {
    return false;
  }
}
