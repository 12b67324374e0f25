import { type GrantDbRow, toGrantRecord } from "../approval/grants.js";
import { thisCommand } from "../approval/lateWrapping.js";
import { earlierOf, mismatchError, PinTracker, pinnedSigner } from "../approval/pin.js";
import { appendRotation, signedRotation } from "../approval/rotation.js";
import { DecisionVerifier } from "../approval/trust.js";
import { AuditLog } from "../audit/log.js";
import { safeText } from "../catalog/text.js";
import { loadPublicKeyring } from "../keyring/keyring.js";
import { KeyringMissingError, SamePassphraseError } from "../keyring/keyringErrors.js";
import { keyringExists } from "../keyring/keyringRead.js";
import { INSECURE_TEST_KDF_ENV } from "../keyring/keyWrapping.js";
import { rotateKeyring } from "../keyring/rotate.js";
import { openStore, type Store } from "../store/db.js";
import { liveHolderPids } from "../vault/liveHolders.js";
import { resealVault } from "../vault/reseal.js";
import { parse } from "./args.js";
import { EXIT_OK, UsageError } from "./errors.js";
import { commandList, RECORDS_LATE_ROTATION } from "./lateRecords.js";
import {
  MIN_PASSPHRASE_LENGTH,
  NEW_PASSPHRASE_FILE_ENV,
  PASSPHRASE_HELP,
  readNewPassphrase,
  readPassphrase,
} from "./passphrase.js";
import { keyringCommandErrors } from "./passphraseChange.js";

export const ROTATE_KEYS_HELP = `usage: portcullis rotate-keys [--json] [--state-dir DIR]

Replaces every key of the keyring (an addition to the command line), for when a copy of
keyring.json and its passphrase may have leaked. Asks for the current passphrase, then a new one
twice (at least ${MIN_PASSPHRASE_LENGTH} characters, and not the current one: whoever has the old one would open
the new keyring with it).

  - a new approver key, pinned in the audit chain by a rotation record signed with the key the
    chain honours now; gateways, running ones included, honour the new key from their next check
  - every grant and decision signed with the old key is no longer honoured (a leaked key may
    have signed them): the output says how many grants stop covering calls; grants shows them
    NOT HONOURED; the agent asks again and a human approves with the new key
  - a new audit key: records written from now on are sealed to it; the old audit private keys
    stay in the keyring, sealed under the new data key, so audit sessions, activity and show
    still open every old record; audit verify, export and checkpoint need no key, and are unchanged
  - a new data key, wrapped under the new passphrase: every vault secret and the egress CA key
    are sealed again under it
  - passkeys pinned under the old key are no longer honoured: add them again (passkey add)

Refused while the vault is unlocked (portcullis lock first). keyring.json is written whole and
renamed over the old one under the lock every rewrite of the keyring takes: killed at any point,
the old keyring (old passphrase) or the new one (new passphrase) is in place. Killed after the
rename and before the rotation record, no decision is honoured until the next command that takes
the passphrase and checks the approver key appends the record the new keyring carries:
  ${commandList(RECORDS_LATE_ROTATION)};
killed before the vault's reseal, the next unlock or vault set reseals it.

What it does not do: a copy of the old keyring.json with the old passphrase still opens the
records written before the rotation, and the secrets as they were then; it opens nothing written
or sealed after. A gateway started before the rotation goes on sealing to the old audit key
until it sees keyring.json rewritten (it looks at most once a second, at its next record).

${PASSPHRASE_HELP}
The new passphrase is read from the terminal (typed twice); for tests and CI,
${NEW_PASSPHRASE_FILE_ENV}=<path> names a file whose first line is the new passphrase.

  --json   print what changed as JSON: key ids before and after, the rotation record's seq, how
           many grants are no longer honoured, how many secrets were resealed; no key, no secret

Exit codes: 0 rotated, 1 the current passphrase is wrong (or the keyring's approver key is not
the one the audit chain honours): nothing was changed, 2 usage or environment error (no keyring,
the vault unlocked, a new passphrase too short or the same): nothing was changed.`;

export async function rotateKeysCommand(args: string[], ctx: { stateDir: string }): Promise<number> {
  return keyringCommandErrors("rotate-keys", () => rotate(args, ctx));
}

async function rotate(args: string[], ctx: { stateDir: string }): Promise<number> {
  // No passphrase is ever taken from an argument: a stray word is refused unseen.
  const { values } = parse(
    "rotate-keys",
    args,
    { help: { type: "boolean", short: "h" }, json: { type: "boolean" } },
    false,
  );
  if (values.help) {
    process.stdout.write(`${ROTATE_KEYS_HELP}\n`);
    return EXIT_OK;
  }
  const stateDir = ctx.stateDir;
  if (!keyringExists(stateDir)) throw new KeyringMissingError(stateDir);
  const notice = (line: string) => process.stderr.write(`portcullis rotate-keys: ${safeText(line)}\n`);
  const db = openStore(stateDir);
  try {
    const current = await readPassphrase("Current passphrase: ");
    // the keyring opens with it, its approver key is the one the chain honours (an old keyring
    // gets its key, a keyring with none pinned gets its pin, a rotation left unrecorded is recorded)
    await pinnedSigner(db, stateDir, current, notice);
    const holders = liveHolderPids(stateDir);
    if (holders.length > 0)
      throw new UsageError(
        `rotate-keys: the vault is unlocked (holder pid ${holders.join(", ")}), and holds secrets opened with the data key this replaces: portcullis lock first; nothing was changed.`,
      );
    const next = await readNewPassphrase("New passphrase: ");
    if (next.normalize("NFC") === current.normalize("NFC")) throw new SamePassphraseError();
    if ([...next].length < MIN_PASSPHRASE_LENGTH)
      throw new UsageError(
        `rotate-keys: the new passphrase must be at least ${MIN_PASSPHRASE_LENGTH} characters; nothing was changed.`,
      );
    if (process.env[INSECURE_TEST_KDF_ENV] === "1")
      notice(`${INSECURE_TEST_KDF_ENV}=1: cheap key derivation, for tests only`);
    const grantsBefore = honouredLiveGrants(db, stateDir);
    const at = new Date().toISOString();
    const rotated = await rotateKeyring(stateDir, current, next, {
      // the keyring read under the lock: its approver key must still be the chain's
      accept: (opened) => {
        const keyring = loadPublicKeyring(stateDir)!;
        const status = new PinTracker(db).status(
          opened.signer!.publicKeyRaw,
          keyring.publicKey,
          earlierOf(keyring),
        );
        if (status.state !== "match") throw mismatchError(opened.signer!.keyId, status);
      },
      sign: (signer, keys, sealTo) => signedRotation(signer, keys, sealTo, at),
    });
    let seq: number | null = null;
    try {
      seq = appendRotation(db, stateDir, rotated.pending);
    } catch (e) {
      notice(
        `warning: the keys were rotated, but the rotation could not be recorded in the audit chain: ${(e as Error).message}; no decision is honoured until the next command that takes the passphrase and checks the approver key (${commandList(RECORDS_LATE_ROTATION)}) records it`,
      );
    }
    let resealed = { secrets: 0, egressCa: false };
    try {
      resealed = resealVault(db, stateDir, rotated.dataKey, rotated.earlierDataKeys);
    } finally {
      rotated.dataKey.fill(0);
      for (const k of rotated.earlierDataKeys) k.fill(0);
    }
    const summary = {
      rotated: true,
      keyring: rotated.path,
      approverKeyId: rotated.to.approverKeyId,
      previousApproverKeyId: rotated.from.approverKeyId,
      auditKeyId: rotated.to.auditKeyId,
      previousAuditKeyId: rotated.from.auditKeyId,
      rotationRecord: seq,
      grantsNoLongerHonoured: grantsBefore,
      secretsResealed: resealed.secrets,
      egressCaResealed: resealed.egressCa,
    };
    const recorded = record(db, stateDir, summary, thisCommand("rotate-keys"), notice);
    if (values.json) {
      process.stdout.write(`${JSON.stringify({ ...summary, auditRecord: recorded }, null, 2)}\n`);
      return EXIT_OK;
    }
    process.stdout.write(
      `Keys rotated: ${safeText(rotated.path)}\n` +
        `Approver key ${rotated.from.approverKeyId} -> ${rotated.to.approverKeyId}` +
        (seq === null ? " (not yet recorded in the audit chain)\n" : ` (rotation record ${seq})\n`) +
        `Audit key ${rotated.from.auditKeyId} -> ${rotated.to.auditKeyId}; the old one stays in the keyring, so every old record still reads\n` +
        `${grantsBefore} grant(s) signed with the old key are no longer honoured: the agent asks again\n` +
        `${resealed.secrets} vault secret(s)${resealed.egressCa ? " and the egress CA key" : ""} resealed under the new data key\n` +
        "Passkeys must be added again; running gateways seal to the new audit key from their next record a second or more from now.\n",
    );
    return EXIT_OK;
  } finally {
    db.close();
  }
}

/** The rotation's `keys_rotated` record (key ids and counts; nothing secret), sealed to the new audit key. */
function record(
  db: Store,
  stateDir: string,
  summary: Record<string, unknown>,
  by: string,
  notice: (line: string) => void,
): number | null {
  try {
    const log = AuditLog.open(db, stateDir);
    try {
      const { rotated: _, keyring: __, ...fields } = summary;
      return log.append({ type: "keys_rotated", by, ...fields }).seq;
    } finally {
      log.close();
    }
  } catch (e) {
    notice(`warning: the keys_rotated record could not be written: ${(e as Error).message}`);
    return null;
  }
}

/**
 * How many grants that can still cover a call are honoured now (their signature verifies under
 * the chain's current key): what a rotation stops honouring.
 */
function honouredLiveGrants(db: Store, stateDir: string): number {
  const verifier = new DecisionVerifier(db, stateDir);
  const rows = db
    .prepare("SELECT * FROM grants WHERE revoked_at IS NULL AND ended_at IS NULL")
    .all() as GrantDbRow[];
  return rows.filter((r) => verifier.verifyGrant(toGrantRecord(r)).ok).length;
}
