/**
 * The store's schema version read from its file's first 100 bytes, without SQLite: for `run`,
 * which spawns its server before it loads the store (src/cli/run.ts, "early"), so that a store
 * newer than this portcullis is refused before any server runs. Each migration also sets SQLite's
 * user_version (bytes 60–63 of the header, big-endian) to its version, in its own transaction
 * (store/db.ts, `migrate`), and the opening that applied migrations checkpoints the WAL, so the
 * main file's header carries the newest applied version.
 *
 * Only a hint, read before the real check. A header that says nothing reads as 0 (a store last
 * migrated by a portcullis before this was recorded, which a newer such portcullis may have
 * migrated since) or null (a file that is no SQLite database, or too short); `run` spawns nothing
 * early for either, and the opening's check of schema_migrations (store/db.ts, `checkSchema`)
 * refuses a newer store before any server runs. An opening that finds such a store current writes
 * its version into the header (db.ts, `migrate`). What stays: page 1 still in the WAL because a
 * reader kept the checkpoint from reaching it says the older version, and the server spawned
 * early is ended unused when the opening refuses the store.
 */
import { closeSync, openSync, readSync } from "node:fs";

const MAGIC = "SQLite format 3\0";
const USER_VERSION_OFFSET = 60;

/** The user_version in the header of the SQLite file at `path`, or null when it cannot be read. */
export function headerSchemaVersion(path: string): number | null {
  const head = Buffer.alloc(100);
  let fd: number;
  try {
    fd = openSync(path, "r");
  } catch {
    return null;
  }
  try {
    if (readSync(fd, head, 0, head.length, 0) < head.length) return null;
  } catch {
    return null;
  } finally {
    closeSync(fd);
  }
  if (head.toString("latin1", 0, MAGIC.length) !== MAGIC) return null;
  return head.readUInt32BE(USER_VERSION_OFFSET);
}
