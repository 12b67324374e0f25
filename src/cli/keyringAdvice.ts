import { dirname } from "node:path";
import { KeyringDamagedError, KeyringMissingError } from "../keyring/keyringErrors.js";
import { quotedCommand } from "../store/stateDir.js";

/**
 * The end of the sentence for a keyring that cannot be read: where to learn what to do. `doctor`
 * tells a damaged file (restore it from a backup) from one this user may not read (run as its
 * owner), which the error alone does not. Empty for any other error.
 */
export function keyringAdvice(e: unknown): string {
  if (!(e instanceof KeyringDamagedError) || e.path === undefined) return "";
  return ` ${quotedCommand("doctor", dirname(e.path))} says what to do about it.`;
}

/**
 * What follows a keyring error's message to end its sentence: a period, then the advice. Nothing
 * after a missing keyring's, which ends with the `portcullis init` to run, last and in no quotes
 * of the sentence's own so that it pastes whole: a period after it would be pasted too, and
 * `--state-dir '/a b'.` names another directory, which init would set up.
 */
export function keyringEnding(e: unknown): string {
  return e instanceof KeyringMissingError ? "" : `.${keyringAdvice(e)}`;
}
