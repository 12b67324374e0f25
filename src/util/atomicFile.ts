/**
 * A file written whole or not at all: the bytes go to a new temporary file beside it (created
 * O_EXCL, so a name someone planted there, a symlink included, is never opened: the write fails
 * instead), mode 0600 until every byte is written, then given its mode, fsynced, and renamed over
 * the file (or, exclusive, hard-linked to a name that must not exist yet), and the directory
 * fsynced. A reader, or a crash at any point, sees the old bytes or the new, never a mix, and
 * nobody else reads a half-written copy. A symlink at the file's own name is replaced, never
 * followed: a caller that keeps a link (wrap's host files) resolves it first.
 *
 * The one place these steps are written: keyring.json, wrap's host files, backups and records,
 * the egress CA, the console's address and the digest cache all write through it.
 */
import { randomBytes } from "node:crypto";
import { closeSync, fchmodSync, fsyncSync, linkSync, openSync, renameSync, rmSync } from "node:fs";
import { dirname } from "node:path";
import { unwrittenBecause, writeWhole } from "./writeWhole.js";

export interface AtomicWriteOptions {
  /** The file's mode once in place, exactly (umask aside); 0o600 unless said. */
  mode?: number;
  /**
   * Linked, not renamed: the write fails with EEXIST when the file exists, never replacing it
   * (a keyring's init).
   */
  exclusive?: boolean;
  /**
   * The temporary file's path for `path`, in its directory (a rename across file systems fails).
   * By default `PATH.PID.HEX.tmp`, the name the keyring's leftovers are found by.
   */
  tempPath?: (path: string) => string;
  /**
   * false: neither the file nor its directory is fsynced. Only for a file whose loss costs time,
   * not correctness, written where an fsync would be waited for (the digest cache, at each
   * server start); a crash may then leave the old bytes, never a mix.
   */
  durable?: boolean;
}

/**
 * The temporary file could not be created or written whole (a name already there, a full disk,
 * the file size limit): nothing was replaced, and no temporary file of this write is left.
 * `reason` says why in words.
 */
export class TempNotWrittenError extends Error {
  constructor(
    readonly path: string,
    readonly code: string | undefined,
    readonly reason: string = unwrittenBecause(code),
  ) {
    super(`cannot write ${path}: ${reason}; it was not replaced`);
    this.name = "TempNotWrittenError";
  }
}

/** The default temporary name: the pid and 12 random hex digits, so two writers never share one. */
export function defaultTempPath(path: string): string {
  return `${path}.${process.pid}.${randomBytes(6).toString("hex")}.tmp`;
}

/**
 * Writes `data` to `path` atomically (see the file's comment). Throws TempNotWrittenError when the
 * temporary file could not be created (one already at its name included) or written whole, and
 * the file system's own error when it cannot be renamed or linked into place (EEXIST for an
 * exclusive write whose file exists); in every case no temporary file of this call is left.
 */
export function writeFileAtomic(path: string, data: string | Uint8Array, o: AtomicWriteOptions = {}): void {
  const durable = o.durable ?? true;
  const tmp = (o.tempPath ?? defaultTempPath)(path);
  let fd: number;
  try {
    fd = openSync(tmp, "wx", 0o600);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    // a name planted where this process writes (a link to another file among them): not used
    if (code === "EEXIST")
      throw new TempNotWrittenError(
        path,
        code,
        `its temporary file ${tmp} is already there; remove it if no portcullis is writing`,
      );
    throw new TempNotWrittenError(
      path,
      code,
      `cannot create its temporary file ${tmp}: ${unwrittenBecause(code)}`,
    );
  }
  try {
    writeWhole(fd, data);
    // after the bytes: a mode wider than 0600 (a host file's 0644) never shows a partial copy
    fchmodSync(fd, o.mode ?? 0o600);
    if (durable) fsyncSync(fd);
  } catch (err) {
    closeSync(fd);
    rmSync(tmp, { force: true });
    throw new TempNotWrittenError(path, (err as NodeJS.ErrnoException).code);
  }
  closeSync(fd);
  try {
    if (o.exclusive) linkSync(tmp, path);
    else renameSync(tmp, path);
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
  if (o.exclusive) rmSync(tmp, { force: true });
  if (durable) fsyncDir(dirname(path));
}

/** The directory's entries on disk: without it a crash after the rename may forget the rename. */
function fsyncDir(dir: string): void {
  let fd: number | undefined;
  try {
    fd = openSync(dir, "r");
    fsyncSync(fd);
  } catch {
    // Not every platform lets a directory be opened or fsynced (Windows); the rename is done either way.
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
