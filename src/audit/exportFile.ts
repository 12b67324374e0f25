import { constants } from "node:buffer";
import { readSync } from "node:fs";

const BLOCK_BYTES = 1 << 20;
const LF = 0x0a;

/**
 * The longest line an export can hold: `audit export` writes each line as one string, and the
 * verifier reads each line as one, and V8 makes no string longer than this (536,870,888
 * characters on 64-bit Node, one byte each in an ASCII export). A longer line was not written by
 * portcullis and could not be verified: reading stops there, instead of holding an endless input
 * (`--file <(cat /dev/zero)`) in memory until it runs out.
 */
export const MAX_EXPORT_LINE_BYTES = constants.MAX_STRING_LENGTH;

/** A line of the input longer than any export line (MAX_EXPORT_LINE_BYTES): not an export. */
export class ExportLineTooLongError extends Error {
  override name = "ExportLineTooLongError";
  constructor(
    /** the line's number, from 1 */
    readonly line: number,
    readonly limit: number,
  ) {
    super(
      `line ${line} is longer than ${limit.toLocaleString("en-US")} bytes, the longest line an audit export can hold`,
    );
  }
}

/**
 * The lines of an export, read from an open file a block at a time (an export can be larger
 * than memory wants), the last one included even when empty. An export is ASCII: each line is
 * decoded as latin1, so that any other byte stays one character, for parseExportLine to refuse.
 * Lines are cut from the bytes, one by one: decoding a whole block into one string and splitting
 * it cost more than verifying the records. A line that spans blocks is kept as its pieces and
 * joined once, when its end is read (joining at every block cost time quadratic in its length);
 * one longer than `maxLineBytes` throws ExportLineTooLongError as soon as that much is read.
 */
export function* exportLines(
  fd: number,
  blockBytes = BLOCK_BYTES,
  maxLineBytes = MAX_EXPORT_LINE_BYTES,
): Generator<string> {
  const buf = Buffer.allocUnsafe(blockBytes);
  let pieces: Buffer[] = []; // the start of a line that continues in the next block
  let carried = 0; // their bytes
  let lines = 0;
  const tooLong = (bytes: number) => {
    if (bytes > maxLineBytes) throw new ExportLineTooLongError(lines + 1, maxLineBytes);
  };
  for (;;) {
    const n = readSync(fd, buf, 0, buf.length, null);
    if (n === 0) break;
    const block = buf.subarray(0, n);
    let start = 0;
    for (let nl = block.indexOf(LF, start); nl >= 0; nl = block.indexOf(LF, start)) {
      tooLong(carried + nl - start);
      if (carried > 0) {
        pieces.push(block.subarray(start, nl));
        yield Buffer.concat(pieces, carried + nl - start).toString("latin1");
        pieces = [];
        carried = 0;
      } else yield block.toString("latin1", start, nl);
      lines++;
      start = nl + 1;
    }
    if (start < n) {
      tooLong(carried + n - start);
      pieces.push(Buffer.from(block.subarray(start))); // a copy: `buf` is read into again
      carried += n - start;
    }
  }
  yield carried > 0 ? Buffer.concat(pieces, carried).toString("latin1") : "";
}
