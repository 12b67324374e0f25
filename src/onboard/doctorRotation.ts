// doctor's finding about a key rotation its command left unrecorded: keyring.json holds the keys
// `portcullis rotate-keys` made and the signed rotation record (`pendingRotation`), while the
// audit chain still honours the key it replaced (src/approval/rotation.ts). Doctor asks for no
// passphrase and writes nothing: it says what this means and which command records it.
import { PinChain } from "../approval/pinChain.js";
import { loadPublicKeyring } from "../keyring/keyring.js";
import { keyringPath } from "../keyring/keyringRead.js";
import type { Store } from "../store/db.js";
import { stateDirFlagFor } from "../store/stateDir.js";

/** What doctor reports of a rotation not yet in the chain: null when there is none. */
export function unrecordedRotationFinding(
  db: Store,
  stateDir: string,
): { ok: false; what: string; next: string } | null {
  let keyring: ReturnType<typeof loadPublicKeyring>;
  try {
    keyring = loadPublicKeyring(stateDir);
  } catch {
    return null; // a keyring that does not read: its own finding says so
  }
  const pending = keyring?.pendingRotation;
  if (!keyring?.approver || !pending) return null;
  const now = keyring.approver.publicKeyRaw;
  if (pending.event.approverPublicKey !== now.toString("base64url")) return null;
  const chain = new PinChain(db).follow({
    approvers: [now, ...keyring.earlierApprovers],
    audits: [keyring.publicKeyRaw, ...keyring.earlierAudits],
  });
  if (chain.state !== "head" || chain.head.approverRaw.equals(now)) return null;
  // the chain's key is the one this rotation replaced: only its record is missing
  const from = (pending.event.rotation as { from?: unknown } | undefined)?.from;
  if (chain.head.approverRaw.toString("base64url") !== from) return null;
  return {
    ok: false,
    what: `${keyringPath(stateDir)}: its keys were rotated (portcullis rotate-keys), but the audit chain holds no record of the rotation yet (its command was killed before recording it, or could not write the store then): no gateway honours a decision until it does`,
    next: `run a command that takes the passphrase (the new one): it records the rotation late: portcullis audit sessions${stateDirFlagFor(stateDir)}`,
  };
}
