import { closeSync, constants, fstatSync, openSync, readFileSync, readSync, type Stats } from "node:fs";
import { fileProblem } from "./errno.js";

/**
 * Why a small file the user named (a configuration, a token, a passphrase, a checkpoint) was not
 * read: an errno `code` from open or read (ENOENT, EACCES, EISDIR…), `special` for a FIFO, socket
 * or device, `size` for a regular file far larger than such a file can be.
 */
export type SmallFileProblem =
  | { code: string }
  | { special: true; pipes?: boolean }
  | { size: number }
  | { notUtf8: { line: number; column: number } };

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
          : "notUtf8" in problem
            ? `it is not UTF-8 text: ${notUtf8Words(problem.notUtf8)}`
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
  opts: { pipes?: boolean; refuse?: (st: Stats) => Error | null; strictUtf8?: boolean } = {},
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
    if (pipe) return decode(readCapped(fd, maxBytes, fail), opts.strictUtf8 === true, fail);
    if (st.size > maxBytes) fail({ size: st.size });
    return decode(readFileSync(fd), opts.strictUtf8 === true, fail);
  } catch (e) {
    if (e instanceof SmallFileError || e === refused) throw e;
    return errno(e);
  } finally {
    closeSync(fd);
  }
}

/** A pipe's bytes to its end, refused (`size`, what was read so far) past `maxBytes`. */
function readCapped(fd: number, maxBytes: number, fail: (p: SmallFileProblem) => never): Buffer {
  const buf = Buffer.alloc(maxBytes + 1);
  let n = 0;
  for (;;) {
    const got = readSync(fd, buf, n, buf.length - n, null);
    if (got === 0) break;
    n += got;
    if (n > maxBytes) fail({ size: n });
  }
  return buf.subarray(0, n);
}

/**
 * The bytes as text. With `strict`, bytes that are not UTF-8 are refused (`notUtf8`, where the
 * first one is) rather than each read as U+FFFD: a file written back after an edit (a host's
 * configuration, by wrap) would otherwise lose them, its backup included, and a value read from it
 * (an argument, a passphrase) would be another than the one in the file, without a word.
 */
function decode(bytes: Buffer, strict: boolean, fail: (p: SmallFileProblem) => never): string {
  if (!strict) return bytes.toString("utf8");
  try {
    // ignoreBOM: a byte order mark stays in the text, as toString keeps it, for the caller to skip
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    return fail({ notUtf8: firstNotUtf8(bytes) });
  }
}

/**
 * The line and column (from 1; a column counts characters) of the first byte that is not UTF-8.
 * Up to it, the lenient decoding is the text byte for byte, so the first U+FFFD that the bytes
 * there do not spell (EF BF BD) is where it is.
 */
function firstNotUtf8(bytes: Buffer): { line: number; column: number } {
  let offset = 0;
  let line = 1;
  let column = 1;
  for (const ch of bytes.toString("utf8")) {
    if (
      ch === "\uFFFD" &&
      !(bytes[offset] === 0xef && bytes[offset + 1] === 0xbf && bytes[offset + 2] === 0xbd)
    )
      break;
    offset += Buffer.byteLength(ch);
    if (ch === "\n") {
      line++;
      column = 1;
    } else column++;
  }
  return { line, column };
}

/** Where a file stops being UTF-8, in words (after "it is not UTF-8 text: "). */
export function notUtf8Words(at: { line: number; column: number }): string {
  return `line ${at.line}, column ${at.column} holds a byte that is not UTF-8; save it as UTF-8`;
}
