/**
 * keyring.json written whole or not at all: a 0600 temporary file written and fsynced, then linked
 * (init: never over an existing keyring) or renamed over it (every rewrite), and the directory
 * fsynced. Apart from the keyring's logic: how the bytes reach the disk.
 */
import { randomBytes } from "node:crypto";
import { closeSync, fsyncSync, linkSync, openSync, renameSync, rmSync, unlinkSync } from "node:fs";
import { join } from "node:path";
import { unwrittenBecause, writeWhole } from "../util/writeWhole.js";
import { KeyringError, KeyringExistsError } from "./keyringErrors.js";

/**
 * `text` in a new 0600 file beside `path`, fsynced; returns its path. Every byte is written, or the
 * file is removed and a KeyringError names why (writeWhole): a part renamed over keyring.json is a
 * keyring no passphrase opens, its keys and all they seal gone.
 */
function syncedTemp(path: string, text: string): string {
  const tmp = `${path}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`;
  const fd = openSync(tmp, "wx", 0o600);
  try {
    writeWhole(fd, text);
    fsyncSync(fd);
  } catch (err) {
    closeSync(fd);
    rmSync(tmp, { force: true });
    throw new KeyringError(
      `cannot write the new ${path}: ${unwrittenBecause((err as NodeJS.ErrnoException).code)}`,
    );
  }
  closeSync(fd);
  return tmp;
}

/**
 * Writes `path` atomically and only if it does not exist: the bytes go to a
 * temporary file (0600, fsynced), which is then hard-linked to `path` — link(2)
 * fails with EEXIST rather than replacing — and the directory is fsynced.
 */
export function writeFileExclusive(path: string, text: string): void {
  const tmp = syncedTemp(path, text);
  try {
    linkSync(tmp, path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EEXIST") throw new KeyringExistsError(path);
    throw err;
  } finally {
    unlinkSync(tmp);
  }
  fsyncDir(join(path, ".."));
}

/** Replaces `path` atomically (temporary file, fsync, rename over it, directory fsync). */
export function replaceFile(path: string, text: string): void {
  const tmp = syncedTemp(path, text);
  renameSync(tmp, path);
  fsyncDir(join(path, ".."));
}

function fsyncDir(dir: string): void {
  let fd: number | undefined;
  try {
    fd = openSync(dir, "r");
    fsyncSync(fd);
  } catch {
    // Not every platform lets a directory be opened or fsynced (Windows); the link is done either way.
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
