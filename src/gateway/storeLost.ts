import type { AuditLog } from "../audit/index.js";
import type { Store } from "../store/db.js";
import { type StoreFileLost, StoreFiles } from "../store/storeFiles.js";
import type { Logger } from "../util/log.js";

/**
 * How often an idle gateway checks the store's files (a group with an intent checks too, and so
 * does the gateway's end); tests push it out, to prove those checks.
 */
const CHECK_MS = Number(process.env.PORTCULLIS_STORE_CHECK_MS) || 5_000;

/**
 * Watches the store's -wal and -shm files for this gateway (src/store/storeFiles.ts): every
 * group holding an intent checks them, and this heartbeat does while no call comes (and with
 * `--audit-sync normal`, whose records are committed without an fsync). When one was deleted or
 * replaced, it is said once on stderr, in the sentence that names the file, and `end` is called:
 * the gateway stops as when signalled, and leaves the store open (closeStoreUnlessLost). Returns
 * the heartbeat, to clear when the gateway ends.
 */
export function watchStoreFiles(
  store: Store,
  log: Logger,
  end: (lost: StoreFileLost) => void,
): NodeJS.Timeout {
  StoreFiles.of(store).onLost((lost) => {
    log.warn(lost.message);
    end(lost);
  });
  const heartbeat = setInterval(() => StoreFiles.of(store).check(), CHECK_MS);
  heartbeat.unref();
  return heartbeat;
}

/**
 * Closes the store at the end of a gateway, unless its -wal or -shm file was lost (checked once
 * more here: the last heartbeat may be seconds old). Closing the last connection to a store makes
 * SQLite copy its log into the database file: from an orphaned log, over the pages that the
 * processes which opened the store since then wrote, and then delete their -wal. Left open, the
 * connection ends with the process (which exits without closing it: src/cli/main.ts), and its
 * orphaned log with it. Returns false when the store was left open.
 */
export function closeStoreUnlessLost(store: Store, audit: AuditLog): boolean {
  if (StoreFiles.of(store).check()) return false;
  audit.close();
  store.close();
  return true;
}
