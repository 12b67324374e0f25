import { constants, type Stats, statSync } from "node:fs";
import { safeText } from "../catalog/text.js";
import { shellWord } from "../util/shellWord.js";
import { SmallFileError } from "../util/smallFile.js";

/**
 * Whose PORTCULLIS_PASSPHRASE_FILE may be read. The passphrase in it opens the keyring: whoever
 * reads it may approve and deny in the human's name and read the sealed audit, and whoever may
 * change it chooses the passphrase `init` gives a new keyring. So the file must be this user's
 * alone: no group or other permission bit (a file written with the usual umask is 0644), and on
 * POSIX owned by the user running the command. The mode bits are looked at, not what access()
 * answers, so the check is the same for root. A pipe (`<(pass show …)`) passes: Linux makes it
 * 0600 and its maker's; macOS reports every pipe as 0660, in no directory and on no device
 * (XNU's pipe_stat), bits that give nobody anything: a pipe has no name another user could open,
 * only the descriptors its holders pass on. So the mode of such a pipe is not looked at (its
 * owner still is); a named FIFO (mkfifo) is judged by its mode as a file is. Every command that
 * reads the file (src/cli/passphrase.ts) and doctor (src/onboard/doctor.ts) ask this same
 * question; neither says anything of the file's text.
 */

export const PASSPHRASE_FILE_ENV = "PORTCULLIS_PASSPHRASE_FILE";
/** `portcullis passphrase`'s new passphrase, for tests and CI: checked as PASSPHRASE_FILE_ENV is. */
export const NEW_PASSPHRASE_FILE_ENV = "PORTCULLIS_NEW_PASSPHRASE_FILE";

/** What is wrong with the file (a phrase about "it"), and the clause that fixes it. */
export interface PassphraseFileRefusal {
  /** `owner`: another user's file, which chmod cannot make this user's; `mode`: shared by its bits */
  kind: "owner" | "mode";
  problem: string;
  fix: string;
}

/** Why `st` (the passphrase file's status) is refused, or null when it is this user's alone. */
export function passphraseFileRefusal(
  file: string,
  st: Pick<Stats, "mode" | "uid" | "nlink" | "dev">,
): PassphraseFileRefusal | null {
  const mode = (st.mode & 0o777).toString(8).padStart(3, "0");
  const own = process.getuid?.();
  if (own !== undefined && st.uid !== own)
    return {
      kind: "owner",
      problem: `it belongs to another user (uid ${st.uid}; this is uid ${own}), who may read or change it (mode ${mode})`,
      fix: `put the passphrase in a file of your own, made yours alone with chmod 600 FILE, and set ${PASSPHRASE_FILE_ENV} to that file`,
    };
  if ((st.mode & 0o077) !== 0 && !unnamedPipe(st))
    return {
      kind: "mode",
      problem: `other users may read or change it (mode ${mode})`,
      fix: `make it yours alone with chmod 600 ${shellWord(file)}`,
    };
  return null;
}

/**
 * A pipe in no directory and on no device (`<(…)`, `|`), as macOS reports one: no other user can
 * open it by a path. (A named FIFO is on its file system's device; Linux's pipes are 0600.)
 */
function unnamedPipe(st: Pick<Stats, "mode" | "nlink" | "dev">): boolean {
  return (st.mode & constants.S_IFMT) === constants.S_IFIFO && st.nlink === 0 && st.dev === 0;
}

/** The sentence a command refuses the file with (no full stop: each writer ends it its own way). */
export function passphraseFileSentence(
  file: string,
  r: PassphraseFileRefusal,
  env: string = PASSPHRASE_FILE_ENV,
): string {
  const fix = r.fix.replaceAll(PASSPHRASE_FILE_ENV, env);
  return `${env} (${safeText(file)}): ${r.problem}, and the passphrase in it opens the keyring (whoever reads it may approve in your name); ${fix}, then run the command again`;
}

/**
 * What doctor says of the file, without opening it (a pipe opened would wait for its writer, or
 * take the passphrase meant for the command it was made for): the file's status as `stat` sees
 * it (through a symbolic link, as opening it goes), then the same refusal the commands give.
 * Null when a command would take it (it may still be empty or far too large: only reading says).
 */
export function passphraseFileFinding(
  file: string,
  env: string = PASSPHRASE_FILE_ENV,
): { what: string; next: string } | null {
  const shown = `${env} (${safeText(file)})`;
  const uses =
    env === PASSPHRASE_FILE_ENV
      ? "so every command that asks for the passphrase refuses it"
      : "so portcullis passphrase refuses it";
  let st: Stats;
  try {
    st = statSync(file);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code ?? "error";
    return {
      what: `${shown}: ${new SmallFileError({ code }, "a passphrase file").message}, ${uses}`,
      next: `put the passphrase on the first line of a file of your own, made yours alone (chmod 600), and set ${env} to it; or unset it, and type the passphrase`,
    };
  }
  if (!st.isFile() && !st.isFIFO())
    return {
      what: `${shown}: ${new SmallFileError(st.isDirectory() ? { code: "EISDIR" } : { special: true, pipes: true }, "a passphrase file").message}, ${uses}`,
      next: `set ${env} to a regular file of your own whose first line is the passphrase (chmod 600), or unset it`,
    };
  const refused = passphraseFileRefusal(file, st);
  if (refused === null) return null;
  return {
    what: `${shown}: ${refused.problem}, ${uses} (the passphrase opens the keyring: whoever reads it may approve in your name)`,
    next:
      refused.kind === "mode"
        ? `chmod 600 ${shellWord(file)}`
        : refused.fix.replaceAll(PASSPHRASE_FILE_ENV, env),
  };
}
