// What a listing command says when it read the store but could not write it (a full disk, this
// process's file size limit, a read-only file): one line on stderr, once, so that its output
// (--json included) stays on stdout as it always is, and the user knows the disk is full, what
// the command did not do, and the one thing to do about it.
import { readWithoutWriting, type Store, type StoreError } from "../store/db.js";
import { storeAdvice } from "../store/storeAdvice.js";

/**
 * The line: "portcullis CMD: the store … cannot be written: the disk is full. Read as it is,
 * without writing[; NOT DONE][; what gateways could not record …]. To fix it: …". `notDone`
 * names what the command would have written (empty when it only reads).
 */
export function readWithoutWritingLine(command: string, why: StoreError, notDone = ""): string {
  const parts = ["Read as it is, without writing"];
  if (notDone) parts.push(notDone);
  // a full disk refuses every process's writes, the gateways' records included; a file size
  // limit is this process's own, and a read-only store runs no gateway
  if (why.reason === "disk-full")
    parts.push("what gateways could not record since the disk filled is not in it");
  return `portcullis ${command}: ${why.message} ${parts.join("; ")}. To fix it: ${storeAdvice(why)}.`;
}

/** Says readWithoutWritingLine on stderr when openStoreToRead gave `db` read-only; nothing otherwise. */
export function sayReadWithoutWriting(db: Store, command: string, notDone = ""): void {
  const why = readWithoutWriting(db);
  if (why) process.stderr.write(`${readWithoutWritingLine(command, why, notDone)}\n`);
}
