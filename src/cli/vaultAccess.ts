/**
 * The steps every vault command that takes the passphrase shares (`vault set`, `vault rm`,
 * `unlock`): the store of an initialized state directory, the data key from the passphrase (with
 * the late records and reseal that every such command does), the vault lock that lets one vault
 * command run at a time, and the one-sentence errors these commands end with. Apart so that each
 * command's file holds only what is its own.
 */
import { recordLateChange } from "../approval/lateWrapping.js";
import { safeText } from "../catalog/text.js";
import { unlockKeyring } from "../keyring/keyring.js";
import { KeyringError, KeyringMissingError } from "../keyring/keyringErrors.js";
import { keyringExists } from "../keyring/keyringRead.js";
import { openStore, type Store } from "../store/db.js";
import { takeVaultLock } from "../vault/holderProcs.js";
import { resealVault } from "../vault/reseal.js";
import { VaultError } from "../vault/secrets.js";
import { EXIT_CHECK_FAILED, UsageError } from "./errors.js";
import { keyringEnding } from "./keyringAdvice.js";
import { PassphraseError, readPassphrase } from "./passphrase.js";

/** The vault lock (takeVaultLock), saying once on stderr that it waits for another command. */
export function lockVault(command: string, stateDir: string): Promise<() => void> {
  return takeVaultLock(stateDir, (pid) =>
    process.stderr.write(`portcullis ${command}: waiting for another vault command (pid ${pid}) to finish\n`),
  );
}

export function openExisting(stateDir: string): Store {
  if (!keyringExists(stateDir)) throw new KeyringMissingError(stateDir);
  return openStore(stateDir);
}

/**
 * The data key, from the passphrase. Having the keyring open with it, and the store, the command
 * records late a passphrase change `portcullis passphrase` left unrecorded (killed, or the store
 * not writable then: src/approval/lateWrapping.ts), as every other command that takes the
 * passphrase does; it costs one look for the mark when there is none.
 */
export async function unlockWithPassphrase(
  db: Store,
  stateDir: string,
  what: string,
  command: string,
): Promise<Buffer> {
  const passphrase = await readPassphrase(`Passphrase to ${what}: `);
  const unlocked = await unlockKeyring(stateDir, passphrase);
  await recordLateChange(db, stateDir, unlocked.auditPrivateKey, (line) =>
    process.stderr.write(`portcullis ${command}: ${safeText(line)}\n`),
  );
  // what a key rotation killed before its reseal left under an earlier data key: resealed now
  const resealed = resealVault(db, stateDir, unlocked.dataKey, unlocked.earlierDataKeys);
  for (const k of unlocked.earlierDataKeys) k.fill(0);
  if (resealed.secrets > 0 || resealed.egressCa)
    process.stderr.write(
      `portcullis ${command}: ${resealed.secrets} secret(s)${resealed.egressCa ? " and the egress CA key" : ""} still sealed under a data key a rotation replaced: resealed under the current one\n`,
    );
  return unlocked.dataKey;
}

/** Errors of these commands: one sentence on stderr; a wrong passphrase is a failed check (1). */
export async function guarded(name: string, body: () => Promise<number>): Promise<number> {
  try {
    return await body();
  } catch (e) {
    if (e instanceof UsageError) throw e;
    // a wrong passphrase, or a keyring whose parts were changed: a check that failed (README)
    const wrong =
      (e as Error).name === "WrongPassphraseError" || (e as Error).name === "KeyringTamperedError";
    if (e instanceof VaultError || e instanceof KeyringError || e instanceof PassphraseError) {
      // the message may quote a stored name that another program wrote there (the store is the user's)
      process.stderr.write(`portcullis ${name}: ${safeText(`${(e as Error).message}${keyringEnding(e)}`)}\n`);
      return wrong ? EXIT_CHECK_FAILED : 2;
    }
    throw e;
  }
}
