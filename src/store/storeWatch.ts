import { envMs } from "../util/envMs.js";
import type { Logger } from "../util/log.js";
import type { Store } from "./db.js";
import { type StoreFileLost, StoreFiles } from "./storeFiles.js";

/**
 * How often a long-running process that writes the store (a gateway, the console) checks the
 * store's files while nothing else makes it check, and how often a gateway rewrites its status
 * row (whose write checks them too); tests push it out, to prove the other checks, or pull it in.
 */
export const IDLE_CHECK_MS = envMs("PORTCULLIS_STORE_CHECK_MS", 5_000);

/**
 * Watches the store's files (the database, its -wal and -shm: src/store/storeFiles.ts) for a
 * process that keeps the store open: its writers check before they write, and this heartbeat does
 * while none writes. When one was deleted or replaced, it is said once on `log`, in the sentence
 * that names the file, and `end` is called: the process stops and leaves the store open
 * (closeStoreUnlessLost). Returns the heartbeat, to clear when the process ends.
 */
export function watchStoreFiles(
  store: Store,
  log: Pick<Logger, "warn">,
  end: (lost: StoreFileLost) => void,
): NodeJS.Timeout {
  StoreFiles.of(store).onLost((lost) => {
    log.warn(lost.message);
    end(lost);
  });
  const heartbeat = setInterval(() => StoreFiles.of(store).check(), IDLE_CHECK_MS);
  heartbeat.unref();
  return heartbeat;
}

/**
 * Closes the store at the end of a process, unless one of its files was lost (checked once more
 * here: the last heartbeat may be seconds old). Closing the last connection to a store makes
 * SQLite copy its log into the database file: from an orphaned log, over the pages that the
 * processes which opened the store since then wrote, and then delete their -wal. Left open, the
 * connection ends with the process (which exits without closing it: src/cli/main.ts), and its
 * orphaned log with it. `first` (the audit log's own file descriptor) is closed before the store,
 * only when the store is. Returns false when the store was left open.
 */
export function closeStoreUnlessLost(store: Store, first?: { close(): void }): boolean {
  if (StoreFiles.of(store).check()) return false;
  first?.close();
  store.close();
  return true;
}
