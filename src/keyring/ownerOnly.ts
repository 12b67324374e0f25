import { chmodSync } from "node:fs";
import { safeText } from "../catalog/text.js";
import { fileProblem } from "../util/errno.js";
import { shellWord } from "../util/shellWord.js";

/** Why a keyring others may read is not used, and what makes it usable again. */
export interface KeyringExposure {
  /** the sentence, without its final period: the file (raw: its writers escape), its mode, why it stays so, the fix */
  message: string;
  /** the sentence without the fix (doctor's finding, whose "next" is the fix) */
  problem: string;
  /** what to do, in words a user acts on (doctor's "next") */
  fix: string;
}

/**
 * keyring.json is its owner's alone (0600: init writes it so whatever the umask), but a copy
 * restored from a backup, or `cp` into a new state directory, gets the umask's 644. Its private
 * keys are sealed under the passphrase, and a copy of it lets whoever reads it guess at the
 * passphrase offline, for as long as they like. As the store's files are (src/store/db.ts) and
 * the generated listen token is (src/transport/httpAccess.ts), portcullis's own file is made
 * 0600 again by the command that reads it, whichever command that is; unlike them, it says so on
 * stderr, once (the mode it finds next is 0600), since another user may have read it already. A
 * file that is no keyring (empty, not JSON) holds no keys: it is made 0600 without a word, and its
 * own refusal follows.
 *
 * One whose mode this user cannot change (another user's file, EPERM; one on a read-only file
 * system, EROFS) is not used: returned here, refused by the caller. Going on would keep trusting
 * an approver key and a vault data key that every user who can read the file may recover with
 * enough guessing, with nothing this user can do to close it; ssh refuses a private key others
 * may read in the same way. A warning that asked for `chmod 600` was wrong advice there too: run
 * by this user it fails, and run by the owner it locks this user out.
 */
export function keyringOwnerOnly(
  path: string,
  st: { mode: number; uid: number },
  holdsKeys: boolean,
): KeyringExposure | null {
  if ((st.mode & 0o077) === 0) return null;
  const was = (st.mode & 0o777).toString(8).padStart(3, "0");
  const exposed = `${path} had mode ${was}: other users who can reach it may read it, and a copy lets them guess at the passphrase offline`;
  let code: string | undefined;
  try {
    chmodSync(path, 0o600);
  } catch (e) {
    code = (e as NodeJS.ErrnoException).code;
  }
  if (code === undefined) {
    if (holdsKeys)
      process.stderr.write(`portcullis: warning: ${safeText(exposed)}; it is yours alone now (mode 600).\n`);
    return null;
  }
  if (!holdsKeys) return null;
  const quoted = shellWord(path);
  const mine = st.uid === process.getuid?.();
  const why =
    code === "EROFS"
      ? "it is on a read-only file system"
      : (code === "EPERM" || code === "EACCES") && !mine
        ? `it belongs to uid ${st.uid}, and only its owner may change its mode`
        : fileProblem(code);
  const fix =
    code === "EROFS"
      ? `copy the state directory to a writable file system, make the keyring there yours alone (chmod 600), and give that directory with --state-dir or PORTCULLIS_HOME`
      : !mine
        ? `run portcullis as the user ${path} belongs to (ls -l ${quoted} shows who), who makes it theirs alone first (chmod 600 ${quoted}), or set up a state directory of your own (portcullis init --state-dir DIR)`
        : `make it yours alone (chmod 600 ${quoted})`;
  const problem = `${exposed.replace(" had mode ", " has mode ")}; this user cannot make it 0600 (${why}), so it is not used: a keyring others may read guards neither approvals nor the vault`;
  return { problem, message: `${problem}; ${fix}`, fix };
}
