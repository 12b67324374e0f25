/**
 * keyring.json written whole or not at all (src/util/atomicFile.ts: a 0600 temporary file written
 * and fsynced, then linked (init: never over an existing keyring) or renamed over it (every
 * rewrite), and the directory fsynced), its failures said as the keyring's errors. The temporary
 * file's name is the default `keyring.json.PID.HEX.tmp`, which leftTemps.ts finds a killed
 * rewrite's by.
 */
import { TempNotWrittenError, writeFileAtomic } from "../util/atomicFile.js";
import { KeyringError, KeyringExistsError } from "./keyringErrors.js";

/**
 * Every byte is written, or the temporary file is removed and a KeyringError names why: a part
 * renamed over keyring.json is a keyring no passphrase opens, its keys and all they seal gone.
 */
function written(path: string, text: string, exclusive: boolean): void {
  try {
    writeFileAtomic(path, text, { mode: 0o600, exclusive });
  } catch (err) {
    if (err instanceof TempNotWrittenError)
      throw new KeyringError(`cannot write the new ${path}: ${err.reason}`);
    if (exclusive && (err as NodeJS.ErrnoException).code === "EEXIST") throw new KeyringExistsError(path);
    throw err;
  }
}

/** Writes `path` atomically and only if it does not exist (link(2) fails with EEXIST rather than replacing). */
export function writeFileExclusive(path: string, text: string): void {
  written(path, text, true);
}

/** Replaces `path` atomically (temporary file, fsync, rename over it, directory fsync). */
export function replaceFile(path: string, text: string): void {
  written(path, text, false);
}
