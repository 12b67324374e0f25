import { type BigIntStats, statSync } from "node:fs";
import type Database from "better-sqlite3";
import { StoreError } from "./storeError.js";

/**
 * The store's write-ahead log (`-wal`) and its shared index (`-shm`) as one connection opened
 * them, to notice when either is deleted or replaced at its path while the connection is open.
 *
 * Why it matters: SQLite goes on using the files it opened. A connection whose `-wal` was unlinked
 * commits into a file no other process can see (what it writes is lost with it); a process that
 * opens the store meanwhile starts a new `-wal` and `-shm` and writes there; and when the
 * orphaned connection is the last to close, SQLite copies its orphaned log over the database file
 * and deletes the `-wal` at the path, the other process's records with it. An `-shm` removed
 * alone splits the processes in two that append to one `-wal`, each by its own index, over each
 * other's frames.
 *
 * A check is one stat of each path, compared with the device and inode the file had when this
 * connection opened it: SQLite keeps both files open for the connection's life, so their inode
 * numbers cannot be given to a new file meanwhile, and the same numbers at the path are the same
 * file. Once a check finds a file lost, the connection must write nothing more (its writers ask
 * first: the audit log before each group holding an intent, the gateway's status row before each
 * write) and must not be closed (closing the last connection checkpoints): the process ends with
 * it open (src/gateway/storeLost.ts).
 */
export class StoreFiles {
  private readonly files: { path: string; dev: bigint; ino: bigint }[] = [];
  private lostFile: StoreFileLost | null = null;
  private readonly listeners: ((e: StoreFileLost) => void)[] = [];

  /** Right after the connection opened the store (openStore leaves both files there). */
  private constructor(private readonly db: Database.Database) {
    if (db.memory) return;
    for (const side of ["-wal", "-shm"]) {
      const path = db.name + side;
      const s = statSync(path, { bigint: true, throwIfNoEntry: false });
      // absent: a store not in WAL mode (no gateway opens one), nothing to compare with
      if (s) this.files.push({ path, dev: s.dev, ino: s.ino });
    }
  }

  private static readonly watched = new WeakMap<Database.Database, StoreFiles>();

  /** The watch of `db`'s files: made by the first to ask, which must ask right after opening it. */
  static of(db: Database.Database): StoreFiles {
    let files = StoreFiles.watched.get(db);
    if (!files) {
      files = new StoreFiles(db);
      StoreFiles.watched.set(db, files);
    }
    return files;
  }

  /**
   * Whether both files are still the ones the connection opened: null if so, else the loss. On
   * the first mismatch SQLite's automatic checkpoint is turned off on this connection (it would
   * copy the orphaned log over the database file that other processes write) and the listeners
   * are told, once; every check returns the same loss from then on.
   */
  check(): StoreFileLost | null {
    if (this.lostFile) return this.lostFile;
    for (const f of this.files) {
      let s: BigIntStats | undefined;
      try {
        s = statSync(f.path, { bigint: true, throwIfNoEntry: false });
      } catch {
        // cannot tell (the directory unreadable now, an I/O error): not a loss, and never an
        // exception out of a heartbeat or a status write; the next check looks again
        continue;
      }
      if (s && s.ino === f.ino && s.dev === f.dev) continue;
      const lost = new StoreFileLost(f.path);
      this.lostFile = lost;
      this.db.pragma("wal_autocheckpoint = 0");
      for (const listener of this.listeners) listener(lost);
      return lost;
    }
    return null;
  }

  /** The loss a check found, or null (no stat). */
  get lost(): StoreFileLost | null {
    return this.lostFile;
  }

  /** `listener` is called once, when a check first finds a file lost (at once if one did). */
  onLost(listener: (e: StoreFileLost) => void): void {
    if (this.lostFile) listener(this.lostFile);
    else this.listeners.push(listener);
  }
}

/**
 * The store's `-wal` or `-shm` file was deleted or replaced while this process wrote through it:
 * one sentence naming the file (the refusal's reason, the gateway's one line on stderr).
 */
export class StoreFileLost extends StoreError {
  override name = "StoreFileLost";
  constructor(path: string) {
    super(
      path,
      "was deleted or replaced while this gateway was writing through it: the records it wrote since then are lost with the deleted file, so it records nothing more and ends, leaving the store to the processes that opened it since (a store's -wal and -shm files must not be removed while a portcullis process has it open).",
    );
  }
}
