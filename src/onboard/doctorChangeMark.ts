// doctor's finding about a passphrase change its command left unrecorded: the mark
// `keyring.json.change-unrecorded` beside the keyring (src/approval/lateWrapping.ts). Doctor asks
// for no passphrase, so it cannot write the late record itself: it says what the mark means and
// which command records it.
import { markPath, readChangeMark } from "../approval/lateWrapping.js";
import { keyringWrapping } from "../keyring/passphraseChange.js";
import { stateDirFlagFor } from "../store/stateDir.js";
import { shellWord } from "../util/shellWord.js";

/** What doctor reports of the change's mark: null when there is none. */
export function changeMarkFinding(stateDir: string): { ok: boolean; what: string; next: string } | null {
  const mark = readChangeMark(stateDir);
  if (mark === null) return null;
  const path = markPath(stateDir);
  // any command that opens the keyring with the passphrase and the store records it (or, for a
  // change never made, removes the mark): one that reads and changes nothing else
  const records = `portcullis audit sessions${stateDirFlagFor(stateDir)}`;
  let wrapping: string | null = null;
  try {
    wrapping = keyringWrapping(stateDir)?.wrapping ?? null;
  } catch {
    // a keyring that does not read: its own finding says so
  }
  if (mark === "unreadable" || wrapping !== mark.wrapping)
    return {
      ok: true,
      what: `${path} was left by a passphrase change that did not take effect (killed before it replaced the keyring), or that a later change replaced: it records nothing`,
      next: `nothing: the next command that takes the passphrase removes it (${records}), or remove it: rm ${shellWord(path)}`,
    };
  return {
    ok: false,
    what: `${path}: the keyring's passphrase was changed by ${mark.by} at ${mark.at}, and the audit chain may hold no record of it (its command was killed before recording it, or could not write the store then)`,
    next: `run a command that takes the passphrase (the new one): it records the change late (passphrase_changed, late) and removes the mark: ${records}`,
  };
}
