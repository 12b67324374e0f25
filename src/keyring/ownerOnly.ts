import { chmodSync } from "node:fs";
import { safeText } from "../catalog/text.js";
import { shellWord } from "../util/shellWord.js";

/**
 * keyring.json is its owner's alone (0600: init writes it so whatever the umask), but a copy
 * restored from a backup, or `cp` into a new state directory, gets the umask's 644. Its private
 * keys are sealed under the passphrase, and a copy of it lets whoever reads it guess at the
 * passphrase offline, for as long as they like. As the store's files are (src/store/db.ts) and
 * the generated listen token is (src/transport/httpAccess.ts), portcullis's own file is made
 * 0600 again by the command that reads it, whichever command that is; unlike them, it says so on
 * stderr, once (the mode it finds next is 0600), since another user may have read it already. A
 * file this user may not change the mode of (another user's) is left, and the sentence gives the
 * chmod to run. A file that is no keyring (empty, not JSON) holds no keys: it is made 0600
 * without a word, and its own refusal follows. Never refused: a gateway's start is no place to
 * stop over a mode it can fix, and nothing in the file is readable without the passphrase.
 */
export function keyringOwnerOnly(path: string, mode: number, holdsKeys: boolean): void {
  if ((mode & 0o077) === 0) return;
  const was = (mode & 0o777).toString(8).padStart(3, "0");
  const exposed = `portcullis: warning: ${safeText(path)} had mode ${was}: other users who can reach it may read it, and a copy lets them guess at the passphrase offline`;
  try {
    chmodSync(path, 0o600);
  } catch {
    if (holdsKeys) process.stderr.write(`${exposed}; make it yours alone: chmod 600 ${shellWord(path)}\n`);
    return;
  }
  if (holdsKeys) process.stderr.write(`${exposed}; it is yours alone now (mode 600).\n`);
}
