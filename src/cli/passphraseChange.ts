import {
  clearChangeMark,
  markChangeUnrecorded,
  passphraseChangedEvent,
  thisCommand,
} from "../approval/lateWrapping.js";
import { ApproverKeyMismatchError, checkApproverKey, earlierOf, PinTracker } from "../approval/pin.js";
import { AuditLog } from "../audit/log.js";
import { safeText } from "../catalog/text.js";
import { loadPublicKeyring, unlockKeyring } from "../keyring/keyring.js";
import {
  KeyringError,
  KeyringMissingError,
  KeyringTamperedError,
  SamePassphraseError,
  WrongPassphraseError,
} from "../keyring/keyringErrors.js";
import { keyringExists, keyringPath } from "../keyring/keyringRead.js";
import { INSECURE_TEST_KDF_ENV } from "../keyring/keyWrapping.js";
import { changePassphrase, type PassphraseChange } from "../keyring/passphraseChange.js";
import { openStore, type Store } from "../store/db.js";
import { parse } from "./args.js";
import { EXIT_CHECK_FAILED, EXIT_OK, EXIT_USAGE, UsageError } from "./errors.js";
import { failureLine } from "./failureLine.js";
import { keyringEnding } from "./keyringAdvice.js";
import { commandList, RECORDS_LATE_CHANGE } from "./lateRecords.js";
import {
  MIN_PASSPHRASE_LENGTH,
  NEW_PASSPHRASE_FILE_ENV,
  PASSPHRASE_HELP,
  PassphraseError,
  readNewPassphrase,
  readPassphrase,
} from "./passphrase.js";

export const PASSPHRASE_COMMAND_HELP = `usage: portcullis passphrase [--json] [--state-dir DIR]

Changes the keyring's passphrase (an addition to the command line). Asks for the current
passphrase, then the new one twice (at least ${MIN_PASSPHRASE_LENGTH} characters, and not the current one).

Only the wrapping of the keyring's data key changes: a key derived from the new passphrase,
with a new random salt, seals the same data key. The data key, the audit key pair, the approver
key, and everything sealed under them stay as they are: the audit chain, the approver key's pin,
grants, the vault's secrets, an unlocked vault and running gateways go on as before.
keyring.json is replaced atomically (a temporary file in the same directory, mode 0600, fsynced,
renamed over it, the directory fsynced), under the lock every rewrite of the keyring takes: a
command killed at any point leaves the old keyring (the current passphrase opens it) or the new
one (the new passphrase opens it), and two changes at once never mix (the second finds its
current passphrase no longer opens the keyring, and exits 1). The change is recorded in the
audit chain (passphrase_changed, with the key ids, never a passphrase); killed before that
record, or finding the store unwritable, it leaves keyring.json.change-unrecorded, and the next
command that takes the passphrase records it late:
  ${commandList(RECORDS_LATE_CHANGE)};
doctor reports it until then.
A keyring made before decisions were signed gets its approver key first, pinned in the audit
chain, as approve does.

What it does not do: a copy of the old keyring.json (a backup, a copy of the state directory)
still opens with the old passphrase, and holds the same keys. To shut out someone who had the
old passphrase and such a copy, replace the keys: portcullis rotate-keys. A console already running goes on honouring a proof made with the old
passphrase until that proof's window ends (its keys are the same); every new proof needs the
new passphrase.

${PASSPHRASE_HELP}
The new passphrase is read from the terminal (typed twice). For tests and CI, set
${NEW_PASSPHRASE_FILE_ENV}=<path> to a file whose first line is the new passphrase,
checked as the passphrase file is (yours alone).

  --json   print what changed as JSON: the keyring's path, its key ids (the same as before),
           whether the keyring had no approver key and got one, the audit record's seq (null
           when it could not be written); no passphrase, no key

Exit codes: 0 changed, 1 the current passphrase is wrong (or the keyring's parts do not match,
or its approver key is not the pinned one): nothing was changed, 2 usage or environment error
(no keyring, no terminal and no passphrase file, a new passphrase under ${MIN_PASSPHRASE_LENGTH} characters, the
same as the current one, or typed differently twice): nothing was changed.`;

export async function passphraseCommand(args: string[], ctx: { stateDir: string }): Promise<number> {
  return keyringCommandErrors("passphrase", () => change(args, ctx));
}

/**
 * The exit codes and sentences of a command that rewrites the keyring with the passphrase
 * (passphrase, rotate-keys), each sentence named by the command.
 */
export async function keyringCommandErrors(name: string, body: () => Promise<number>): Promise<number> {
  try {
    return await body();
  } catch (e) {
    // named by the command, as init's are (the parser's own refusals name it already)
    if (e instanceof UsageError) return fail(EXIT_USAGE, e.message);
    if (e instanceof PassphraseError) return fail(EXIT_USAGE, `${name}: ${e.message}; nothing was changed.`);
    if (e instanceof SamePassphraseError) return fail(EXIT_USAGE, `${name}: ${e.message}.`);
    // A wrong current passphrase, a keyring whose parts were changed, an approver key that is not
    // the pinned one: a check failed, as in every command that asks for the passphrase (README).
    if (
      e instanceof WrongPassphraseError ||
      e instanceof KeyringTamperedError ||
      e instanceof ApproverKeyMismatchError
    )
      return fail(EXIT_CHECK_FAILED, `${name}: ${e.message}; nothing was changed.`);
    if (e instanceof KeyringMissingError) return fail(EXIT_USAGE, `${name}: ${e.message}`);
    if (e instanceof KeyringError)
      return fail(EXIT_USAGE, `${name}: ${e.message}; nothing was changed${keyringEnding(e)}`);
    throw e;
  }
}

async function change(args: string[], ctx: { stateDir: string }): Promise<number> {
  // No passphrase is ever taken from an argument: a stray word is refused unseen.
  const { values } = parse(
    "passphrase",
    args,
    { help: { type: "boolean", short: "h" }, json: { type: "boolean" } },
    false,
  );
  if (values.help) {
    process.stdout.write(`${PASSPHRASE_COMMAND_HELP}\n`);
    return EXIT_OK;
  }
  const stateDir = ctx.stateDir;
  if (!keyringExists(stateDir)) throw new KeyringMissingError(stateDir);
  const db = openStore(stateDir);
  try {
    const current = await readPassphrase("Current passphrase: ");
    // The current passphrase is checked before the new one is asked for; changePassphrase opens
    // the keyring with it again under its lock.
    const unlocked = await unlockKeyring(stateDir, current);
    unlocked.dataKey.fill(0);
    // An old keyring gets its approver key (pinned) first, as approve gives it; a keyring whose
    // approver key is not the pinned one is refused (it was replaced or edited).
    const before = unlocked.signer?.keyId ?? null;
    await checkApproverKey(db, stateDir, current, unlocked, (line) =>
      process.stderr.write(`portcullis passphrase: ${safeText(line)}\n`),
    );
    const next = await readNewPassphrase("New passphrase: ");
    // said before anything else is (changePassphrase refuses it too)
    if (next.normalize("NFC") === current.normalize("NFC")) throw new SamePassphraseError();
    if ([...next].length < MIN_PASSPHRASE_LENGTH)
      throw new UsageError(
        `passphrase: the new passphrase must be at least ${MIN_PASSPHRASE_LENGTH} characters; nothing was changed.`,
      );
    if (process.env[INSECURE_TEST_KDF_ENV] === "1")
      process.stderr.write(
        `portcullis passphrase: ${INSECURE_TEST_KDF_ENV}=1: cheap key derivation, for tests only\n`,
      );
    // The change is marked as not yet recorded before its rename, and the mark removed once its
    // record is written, both under the rewrite lock: killed between the rename and the record,
    // or finding the store unwritable then, the change is recorded late by the next command that
    // takes the passphrase (src/approval/lateWrapping.ts).
    // The keyring rewrapped is the one read under the lock, checked again there (`accept`):
    // replaced since the check above (another init's keyring, under the same passphrase), it would
    // have been rewrapped and said to hold "the same keys as before".
    const by = thisCommand("passphrase");
    const checkedKeyId = unlocked.keyId;
    let seq: number | null = null;
    const changed = await changePassphrase(stateDir, current, next, {
      accept: (opened, auditPublicKey) => {
        if (opened.keyId !== checkedKeyId)
          throw new KeyringTamperedError(
            `${keyringPath(stateDir)} was replaced while the command ran: its audit key ${opened.keyId} is not the one checked (${checkedKeyId})`,
          );
        const signer = opened.signer!;
        const earlier = earlierOf(loadPublicKeyring(stateDir) ?? { earlierApprovers: [], earlierAudits: [] });
        if (new PinTracker(db).status(signer.publicKeyRaw, auditPublicKey, earlier).state === "other")
          throw new ApproverKeyMismatchError(signer.keyId);
      },
      beforeRename: (wrapping) => {
        const head = db.prepare("SELECT max(seq) FROM audit_records").pluck().get() as number | null;
        markChangeUnrecorded(stateDir, { wrapping, headSeq: head ?? 0, by, at: new Date().toISOString() });
      },
      afterRename: (change) => {
        seq = record(db, stateDir, change, by);
        if (seq !== null) clearChangeMark(stateDir);
      },
    });
    const result = {
      changed: true,
      keyring: changed.path,
      keyId: changed.keyId,
      approverKeyId: changed.approverKeyId,
      approverKeyAdded: before === null,
      auditRecord: seq,
    };
    if (values.json) {
      process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
      return EXIT_OK;
    }
    process.stdout.write(
      `Passphrase changed: ${safeText(changed.path)}\n` +
        `Audit key id: ${changed.keyId}, approver key id: ${changed.approverKeyId} (the same keys as before)\n` +
        "A copy of the old keyring.json (a backup) still opens with the old passphrase; to shut out whoever had both, replace the keys with portcullis rotate-keys.\n",
    );
    return EXIT_OK;
  } finally {
    db.close();
  }
}

/**
 * The change's record in the audit chain (the key ids, the new key derivation's cost and the new
 * wrapping's fingerprint; never a passphrase, never the salt), written once keyring.json is
 * replaced: a record of a change that was not made would be a false one. Should it fail (a store
 * locked past its timeout, a full disk), the change stands, its mark stays for the next command
 * that takes the passphrase to record it late, and stderr says so; the seq, or null.
 */
function record(db: Store, stateDir: string, c: PassphraseChange, by: string): number | null {
  try {
    const log = AuditLog.open(db, stateDir);
    try {
      return log.append(passphraseChangedEvent(c, by)).seq;
    } finally {
      log.close();
    }
  } catch (e) {
    process.stderr.write(
      `portcullis passphrase: warning: the passphrase was changed, but the change could not be recorded in the audit chain: ${safeText((e as Error).message)}; the next command that takes the passphrase (${commandList(RECORDS_LATE_CHANGE)}) records it late\n`,
    );
    return null;
  }
}

function fail(code: number, message: string): number {
  process.stderr.write(`${safeText(failureLine(message))}\n`);
  return code;
}
