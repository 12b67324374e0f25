import { closeSync, constants, fstatSync, openSync, readFileSync } from "node:fs";

/**
 * Why a small file the user named (a configuration, a token, a passphrase, a checkpoint) was not
 * read: an errno `code` from open or read (ENOENT, EACCES, EISDIR…), `special` for a FIFO, socket
 * or device, `size` for a regular file far larger than such a file can be.
 */
export type SmallFileProblem = { code: string } | { special: true } | { size: number };

export class SmallFileError extends Error {
  override name = "SmallFileError";
  constructor(
    readonly problem: SmallFileProblem,
    /** what the file should have been, for the size message: "a token file" */
    what: string,
  ) {
    super(
      "code" in problem
        ? `cannot read it (${problem.code})`
        : "special" in problem
          ? "it is not a regular file (a FIFO, socket or device)"
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
 */
export function readSmallFile(file: string, maxBytes: number, what: string): string {
  const fail = (problem: SmallFileProblem): never => {
    throw new SmallFileError(problem, what);
  };
  const errno = (e: unknown): never => fail({ code: (e as NodeJS.ErrnoException).code ?? "error" });
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (e) {
    return errno(e);
  }
  try {
    const st = fstatSync(fd);
    if (st.isDirectory()) fail({ code: "EISDIR" });
    if (!st.isFile()) fail({ special: true });
    if (st.size > maxBytes) fail({ size: st.size });
    return readFileSync(fd, "utf8");
  } catch (e) {
    if (e instanceof SmallFileError) throw e;
    return errno(e);
  } finally {
    closeSync(fd);
  }
}
