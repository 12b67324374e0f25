/**
 * Writing a whole file's bytes through a descriptor. One write(2) may write only a part and say so
 * (a file size limit, `ulimit -f`, reached partway: Node ignores SIGXFSZ, so only the next write
 * fails, with EFBIG; a disk with room for a part): a caller that took one write for the whole
 * fsynced and renamed a cut file over the one it replaced (a keyring no passphrase opens, a host's
 * configuration cut mid-string).
 */
import { writeSync } from "node:fs";
import { fileSizeLimit } from "../identity/procRead.js";
import { fileProblem } from "./errno.js";

/** Writes every byte of `data` (text as UTF-8) to `fd`, or throws the write's error. */
export function writeWhole(fd: number, data: string | Uint8Array): void {
  const bytes = typeof data === "string" ? Buffer.from(data) : data;
  for (let done = 0; done < bytes.length; ) done += writeSync(fd, bytes, done, bytes.length - done);
}

/** Why a file could not be written, in words: the file size limit named when it is the cause. */
export function unwrittenBecause(code: string | undefined): string {
  const limit = code === "EFBIG" ? fileSizeLimit() : null;
  return limit !== null
    ? `it would grow past this process's file size limit (ulimit -f: ${limit} bytes); raise it (ulimit -f unlimited) and run the command again`
    : fileProblem(code);
}
