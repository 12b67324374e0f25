/**
 * Reading keyring.json: its path, whether there is one, and its text, refused in a sentence naming
 * the file when it is no readable regular file of keyring size (a FIFO or a directory neither
 * hangs nor crashes a command), made 0600 again when it is not (ownerOnly.ts). Apart from the
 * parse and the opening: every command that only asks whether a keyring is there reads it.
 */
import { join } from "node:path";
import { closedDirectory, fileProblem } from "../util/errno.js";
import { readSmallFile, SmallFileError } from "../util/smallFile.js";
import { KEYRING_FILE } from "./file.js";
import { KeyringDamagedError, KeyringError, KeyringExposedError } from "./keyringErrors.js";
import { parseKeyring } from "./keyringFormat.js";
import { keyringOwnerOnly } from "./ownerOnly.js";

export function keyringPath(stateDir: string): string {
  return join(stateDir, KEYRING_FILE);
}

export function keyringExists(stateDir: string): boolean {
  return readKeyringText(stateDir) !== null;
}

/** A keyring is about 1.5 KB; anything much larger is not one (and is not read into memory). */
const MAX_KEYRING_BYTES = 64 * 1024;

/**
 * keyring.json's text, or null when there is none. Anything else that is not a readable regular
 * file of keyring size is a KeyringError naming the file: opened non-blocking and checked before
 * reading, so a FIFO, /dev/zero or a directory in its place neither hangs a command nor crashes it.
 */
export function readKeyringText(stateDir: string): string | null {
  const path = keyringPath(stateDir);
  try {
    let st = { mode: 0o600, uid: 0 };
    const text = readSmallFile(path, MAX_KEYRING_BYTES, "a keyring", {
      refuse: (read) => {
        st = { mode: read.mode, uid: read.uid };
        return null;
      },
    });
    // its mode as the file read has it; made 0600 again, saying so when it holds keys (a damaged
    // one, refused next in its own sentence, holds none to guess at), and refused when it cannot
    // be: ownerOnly.ts
    if ((st.mode & 0o077) !== 0) {
      const exposed = keyringOwnerOnly(path, st, holdsKeys(text, path));
      if (exposed) throw new KeyringExposedError(exposed);
    }
    return text;
  } catch (err) {
    if (!(err instanceof SmallFileError)) throw err;
    const p = err.problem;
    if ("code" in p && p.code === "ENOENT") return null;
    if (("code" in p && p.code === "EISDIR") || "special" in p)
      throw new KeyringDamagedError(`${path} is not a usable keyring: it is not a regular file`, path);
    if (!("code" in p))
      throw new KeyringDamagedError(`${path} is not a usable keyring: ${err.message}`, path);
    throw unreadableKeyring(path, p.code);
  }
}

/**
 * keyring.json could not be opened. Permission denied is as often a directory on its way that
 * this user may not enter (the state directory of another user, mode 0700) as the file's own
 * mode: the sentence blamed the file, and its mode was fine. The directory is named when it is
 * the one that refuses.
 */
function unreadableKeyring(path: string, code: string | undefined): KeyringError {
  const closed = code === "EACCES" || code === "EPERM" ? closedDirectory(path) : null;
  if (closed)
    return new KeyringError(
      `${path} cannot be read: this user may not enter the directory ${closed.dir} (mode ${closed.mode}: no search permission for it), so no file in it can be opened (${code}); ` +
        `run the command as the user the directory belongs to (ls -ld ${closed.dir} shows who), or give a state directory of your own (--state-dir or PORTCULLIS_HOME)`,
    );
  return new KeyringError(`${path} cannot be read: ${fileProblem(code)}`);
}

/** Whether the text reads as a keyring, with its sealed keys (parseKeyring, nothing thrown). */
function holdsKeys(text: string, path: string): boolean {
  try {
    parseKeyring(text, path);
    return true;
  } catch {
    return false;
  }
}
