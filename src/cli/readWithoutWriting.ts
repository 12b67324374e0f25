// What a listing command says when it read the store but could not write it (a full disk, this
// process's file size limit, a read-only file): one line on stderr, once, so that its output
// (--json included) stays on stdout as it always is, and the user knows the disk is full, what
// the command did not do, and the one thing to do about it.
import { safeText } from "../catalog/text.js";
import { readWithoutWriting, type Store, type StoreError } from "../store/db.js";
import { storeAdvice } from "../store/storeAdvice.js";

/**
 * What a store that cannot be written means for the gateways, or null when nothing of theirs is
 * concerned: a full disk refuses every process's writes, the gateways' records included; a
 * read-only store (file or directory) takes no gateway's audit records, and a gateway started on
 * it refuses to start (it writes its run and its server's start before anything else); a file
 * size limit is this process's own.
 */
export function gatewaysCannotWrite(why: StoreError): string | null {
  if (why.reason === "disk-full") return "what gateways could not record since the disk filled is not in it";
  if (why.reason === "read-only")
    return "no gateway can open it to write its audit records: one started on this state directory refuses to start (exit 2) until it can";
  return null;
}

/**
 * The line: "portcullis CMD: the store … cannot be written: the disk is full. Read as it is,
 * without writing[; NOT DONE][; what this means for the gateways]. To fix it: …". `notDone`
 * names what the command would have written (empty when it only reads).
 */
export function readWithoutWritingLine(command: string, why: StoreError, notDone = ""): string {
  const parts = ["Read as it is, without writing"];
  if (notDone) parts.push(notDone);
  const gateways = gatewaysCannotWrite(why);
  if (gateways) parts.push(gateways);
  // written by the commands themselves (not by the command line's reportFailure, which escapes):
  // the store's path is in the state directory, whose name may hold a control character
  return safeText(
    `portcullis ${command}: ${why.message} ${parts.join("; ")}. To fix it: ${storeAdvice(why)}.`,
  );
}

/** Says readWithoutWritingLine on stderr when openStoreToRead gave `db` read-only; nothing otherwise. */
export function sayReadWithoutWriting(db: Store, command: string, notDone = ""): void {
  const why = readWithoutWriting(db);
  if (why) process.stderr.write(`${readWithoutWritingLine(command, why, notDone)}\n`);
}

/**
 * The store as `status --json` reports it: `writable` true, or false with the cause (doctor
 * --json's names), the sentence, what it means for the gateways and the one thing to do.
 */
export function storeWritability(
  db: Store,
):
  | { writable: true }
  | { writable: false; cause: string; problem: string; gateways: string | null; fix: string } {
  const why = readWithoutWriting(db);
  if (!why) return { writable: true };
  return {
    writable: false,
    cause: why.reason,
    problem: why.message,
    gateways: gatewaysCannotWrite(why),
    fix: storeAdvice(why),
  };
}
