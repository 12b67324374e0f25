// What the tests of `portcullis rotate-keys` share: the rotation itself as a real CLI process, the
// chain of approver key pins as a gateway follows it, a session grant given before a rotation, and
// a rotation record forged by a same-user writer.
import { expect } from "vitest";
import { PinTracker } from "../../src/approval/pin.js";
import { type PIN_EVENT_TYPE, rotationSessionPrivateKey } from "../../src/approval/pinChain.js";
import { signedRotation } from "../../src/approval/rotation.js";
import { AuditLog } from "../../src/audit/log.js";
import type { DecisionSigner } from "../../src/keyring/approver.js";
import { loadPublicKeyring } from "../../src/keyring/keyring.js";
import { openStore, type Store } from "../../src/store/db.js";
import { decideByCli, nextStoredRequest } from "./approvals.js";
import { held } from "./browser.js";
import { type CliResult, runCli, type startInventory } from "./gateway.js";
import { passphraseFile } from "./passphraseChange.js";

/** `portcullis rotate-keys ...extra` with `from` (the env that gives the current passphrase) to `to`. */
export function rotateByCli(
  stateDir: string,
  from: Record<string, string>,
  to: string,
  extra: string[] = [],
): Promise<CliResult> {
  return runCli(["rotate-keys", ...extra], {
    stateDir,
    env: { ...from, PORTCULLIS_NEW_PASSPHRASE_FILE: passphraseFile(to) },
  });
}

/**
 * The chain of pins as a gateway follows it from keyring.json's keys: each link's approver key id,
 * oldest first; null when the chain does not reach keyring.json's key (no head).
 */
export function pinChain(stateDir: string): string[] | null {
  const keyring = loadPublicKeyring(stateDir)!;
  const db = openStore(stateDir);
  try {
    const s = new PinTracker(db).follow(keyring.approver!.publicKeyRaw, keyring.publicKeyRaw, {
      approvers: keyring.earlierApprovers,
      audits: keyring.earlierAudits,
    });
    return s.state === "head" ? s.links.map((l) => l.approverKeyId) : null;
  } finally {
    db.close();
  }
}

/**
 * A read_status of the inventory fixture approved for the session by the CLI (the current
 * passphrase), and answered: the grant a rotation then takes authority from.
 */
export async function readStatusGranted(
  gw: Awaited<ReturnType<typeof startInventory>>,
  stateDir: string,
  seen: Set<string>,
): Promise<void> {
  const first = held(gw.client.callTool({ name: "read_status", arguments: {} }));
  const asked = await nextStoredRequest(stateDir, seen);
  await decideByCli(stateDir, "approve", asked.request, "--for", "session");
  expect((await first).isError).toBeFalsy();
}

/**
 * A rotation record as a same-user writer makes one: signed by `signer`, to `to`'s approver key
 * and the audit key `auditRaw` (sealed to it), naming `from` as the key replaced when given (only
 * the signature is then `signer`'s).
 */
export function forgedRotation(signer: DecisionSigner, to: DecisionSigner, auditRaw: Buffer, from?: Buffer) {
  const forged = signedRotation(
    signer,
    { approverRaw: to.publicKeyRaw, auditRaw },
    auditRaw,
    new Date().toISOString(),
  );
  if (from) (forged.event.rotation as Record<string, unknown>).from = from.toString("base64url");
  return forged;
}

/** `forged` appended to `db` as a real rotation is: in the rotation session of `replaced` (raw), sealed to `auditRaw`; its seq. */
export function appendRotation(
  db: Store,
  forged: ReturnType<typeof forgedRotation>,
  auditRaw: Buffer,
  replaced: Buffer,
): number {
  const log = AuditLog.openSealingTo(db, auditRaw);
  try {
    return log.appendInOwnSession(
      forged.event as { type: typeof PIN_EVENT_TYPE },
      rotationSessionPrivateKey(replaced),
    ).seq;
  } finally {
    log.close();
  }
}
