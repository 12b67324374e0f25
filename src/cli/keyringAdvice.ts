import { dirname } from "node:path";
import { KeyringDamagedError } from "../keyring/keyring.js";
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
