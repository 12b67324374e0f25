import { closeSync, constants, fstatSync, openSync, readFileSync, readSync, type Stats } from "node:fs";
import { fileProblem } from "./errno.js";

/**
 * Why a small file the user named (a configuration, a token, a passphrase, a checkpoint) was not
 * read: an errno `code` from open or read (ENOENT, EACCES, EISDIR…), `special` for a FIFO, socket
 * or device, `size` for a regular file far larger than such a file can be.
 */
export type SmallFileProblem = { code: string } | { special: true; pipes?: boolean } | { size: number };

export class SmallFileError extends Error {
  override name = "SmallFileError";
  constructor(
    readonly problem: SmallFileProblem,
    /** what the file should have been, for the size message: "a token file" */
    what: string,
  ) {
    super(
      "code" in problem
        ? `cannot read it: ${fileProblem(problem.code)}`
        : "special" in problem
          ? problem.pipes
            ? "it is a device or a socket, not a file or a pipe"
            : "it is not a regular file (a FIFO, socket or device)"
          : `it is ${problem.size} bytes, far more than ${what}`,
    );
  }
}

/**
 * The text of a small regular file the user named. It is opened non-blocking and checked before
 * it is read, so a FIFO does not hang the command (nothing is waited on) and /dev/zero or a
 * huge file is not read into memory: each refused with a SmallFileError whose message is one
 * phrase ("it is not a regular file (a FIFO, socket or device)") for the caller to prefix with
 * the file and the flag or variable that named it.
 *
 * With `pipes`, a FIFO is read too (a passphrase handed over by `<(pass show …)` or a pipe a
 * test writes, a checkpoint fetched by `<(ssh … cat …)`): opened as `cat` opens it, waiting for
 * its writer, and read to its end, refused once it gives more than `maxBytes`. A device or a
 * socket is still refused.
 *
 * With `refuse`, the opened file's status (fstat: the file that is read, not a path looked at
 * before it is opened, so a file swapped in between is the one checked) is asked once its kind
 * is known and before a byte is read; an error it returns is thrown as it is.
 */
export function readSmallFile(
  file: string,
  maxBytes: number,
  what: string,
  opts: { pipes?: boolean; refuse?: (st: Stats) => Error | null } = {},
): string {
  const fail = (problem: SmallFileProblem): never => {
    throw new SmallFileError(problem, what);
  };
  const errno = (e: unknown): never => fail({ code: (e as NodeJS.ErrnoException).code ?? "error" });
  let fd: number;
  try {
    // A FIFO opened without O_NONBLOCK waits for its writer: only where pipes are welcome. A
    // device opened either way does not wait; it is refused below, before anything is read.
    fd = openSync(file, opts.pipes ? constants.O_RDONLY : constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (e) {
    return errno(e);
  }
  let refused: Error | null = null;
  try {
    const st = fstatSync(fd);
    if (st.isDirectory()) fail({ code: "EISDIR" });
    const pipe = opts.pipes === true && st.isFIFO();
    if (!pipe && !st.isFile()) fail(opts.pipes ? { special: true, pipes: true } : { special: true });
    refused = opts.refuse?.(st) ?? null;
    if (refused !== null) throw refused;
    if (pipe) return readCapped(fd, maxBytes, fail);
    if (st.size > maxBytes) fail({ size: st.size });
    return readFileSync(fd, "utf8");
  } catch (e) {
    if (e instanceof SmallFileError || e === refused) throw e;
    return errno(e);
  } finally {
    closeSync(fd);
  }
}

/** A pipe's text to its end, refused (`size`, what was read so far) past `maxBytes`. */
function readCapped(fd: number, maxBytes: number, fail: (p: SmallFileProblem) => never): string {
  const buf = Buffer.alloc(maxBytes + 1);
  let n = 0;
  for (;;) {
    const got = readSync(fd, buf, n, buf.length - n, null);
    if (got === 0) break;
    n += got;
    if (n > maxBytes) fail({ size: n });
  }
  return buf.toString("utf8", 0, n);
}
