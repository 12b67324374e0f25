import { readSync } from "node:fs";

const BLOCK_BYTES = 1 << 20;
const LF = 0x0a;

/**
 * The lines of an export, read from an open file a block at a time (an export can be larger
 * than memory wants), the last one included even when empty. An export is ASCII: each line is
 * decoded as latin1, so that any other byte stays one character, for parseExportLine to refuse.
 * Lines are cut from the bytes, one by one: decoding a whole block into one string and splitting
 * it cost more than verifying the records.
 */
export function* exportLines(fd: number, blockBytes = BLOCK_BYTES): Generator<string> {
  const buf = Buffer.allocUnsafe(blockBytes);
  let carry: Buffer | null = null; // the start of a line that continues in the next block
  for (;;) {
    const n = readSync(fd, buf, 0, buf.length, null);
    if (n === 0) break;
    const block: Buffer = carry ? Buffer.concat([carry, buf.subarray(0, n)]) : buf.subarray(0, n);
    let start = 0;
    for (let nl = block.indexOf(LF, start); nl >= 0; nl = block.indexOf(LF, start)) {
      yield block.toString("latin1", start, nl);
      start = nl + 1;
    }
    carry = Buffer.from(block.subarray(start)); // a copy: `buf` is read into again
  }
  yield carry ? carry.toString("latin1") : "";
}
