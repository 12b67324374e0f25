/**
 * `approvals --watch` over a store it could open only to read (a read-only file or directory, a
 * full disk as it began): its connection can never write, so the requests a dead gateway left
 * pending would stay listed as pending for as long as it runs. It says so once, and tries every
 * writableRetryMs() to open the store to write as any command opens it; once that succeeds it
 * closes them through that second connection from then on (its reads stay on the first: nothing
 * the human sees changes connection). A file size limit is this process's own and does not go
 * away while it runs: it is not tried again (opening to write under it could write part of what it
 * tries: openStoreToRead).
 */
import { openStore, type Store, type StoreError } from "../store/db.js";
import { quotedCommand } from "../store/stateDir.js";
import { envMs } from "../util/envMs.js";

/** How often the watch tries to open the store to write again: an opening is a few reads and a rolled-back write. */
export const WRITABLE_RETRY_MS = 5_000;

/** WRITABLE_RETRY_MS, or PORTCULLIS_WRITABLE_RETRY_MS (for tests; read at each try and in what the watch says). */
export const writableRetryMs = (): number => envMs("PORTCULLIS_WRITABLE_RETRY_MS", WRITABLE_RETRY_MS);

/** Whether a watch over a store opened read-only for `why` tries to open it to write again. */
export function triesWritableAgain(why: StoreError): boolean {
  return why.reason !== "file-size-limit";
}

/**
 * What the watch says, once, of the closing it cannot do (after what was left pending), for the
 * line the listings say of a store they read without writing (readWithoutWritingLine).
 */
export function watchCannotCloseNote(why: StoreError, stateDir: string): string {
  if (triesWritableAgain(why))
    return `this watch closes none while its store cannot be written, and tries again every ${writableRetryMs() / 1000} s: it closes them once the store can be written, and says so`;
  return `this watch closes none and does not try again (the file size limit is this process's own); ${quotedCommand("approvals", stateDir)} run without that limit closes them`;
}

/** The store opened to write, as any command opens it, or null while it still cannot be (a read-only file, a full disk …). */
export function openWritableAgain(stateDir: string): Store | null {
  try {
    return openStore(stateDir);
  } catch {
    // still what it was (said once already), or something else the next try meets as well
    return null;
  }
}
