import { type BigIntStats, statSync } from "node:fs";
import type Database from "better-sqlite3";
import { StoreError } from "./storeError.js";

/**
 * The store's files as one connection opened them: the database file itself, its write-ahead log
 * (`-wal`) and its shared index (`-shm`), to notice when one is deleted or replaced at its path
 * while the connection is open.
 *
 * Why it matters: SQLite goes on using the files it opened. A connection whose `-wal` was unlinked
 * commits into a file no other process can see (what it writes is lost with it); a process that
 * opens the store meanwhile starts a new `-wal` and `-shm` and writes there; and when the
 * orphaned connection is the last to close, SQLite copies its orphaned log over the database file
 * and deletes the `-wal` at the path, the other process's records with it. An `-shm` removed
 * alone splits the processes in two that append to one `-wal`, each by its own index, over each
 * other's frames. A database file deleted or replaced (`mv` and `cp` back, a restore over it)
 * leaves the connection reading and checkpointing the old file while the others share the same
 * `-wal` over the new one: its checkpoint copies their frames into the old file, and the log is
 * then started over, so the new file never gets them (the store at the path is left damaged); a
 * connection over a deleted file records into a file nobody will read again. (SQLite itself skips
 * the checkpoint as the last connection closes when the database file has moved, not the others.)
 *
 * A check is one stat of each path, compared with the device and inode the file had when this
 * connection opened it: SQLite keeps all three files open for the connection's life, so their
 * inode numbers cannot be given to a new file meanwhile, and the same numbers at the path are the
 * same file. Once a check finds a file lost, the connection must write nothing more (its writers
 * ask first: the audit log before each group holding an intent, the gateway's status row before
 * each write, a decision under its write lock, the console before each request) and must not be
 * closed (closing the last connection checkpoints): the process ends with it open
 * (src/store/storeWatch.ts).
 */
export class StoreFiles {
  private readonly files: { path: string; dev: bigint; ino: bigint }[] = [];
  private lostFile: StoreFileLost | null = null;
  private readonly listeners: ((e: StoreFileLost) => void)[] = [];

  /** Right after the connection opened the store (openStore leaves all three files there). */
  private constructor(private readonly db: Database.Database) {
    if (db.memory) return;
    // The database first: when all three go (`rm portcullis.db*`), it is the one named.
    for (const side of ["", "-wal", "-shm"]) {
      const path = db.name + side;
      const s = statSync(path, { bigint: true, throwIfNoEntry: false });
      // absent: a store not in WAL mode (openStore opens none), nothing to compare with
      if (s) this.files.push({ path, dev: s.dev, ino: s.ino });
    }
  }

  private static readonly watched = new WeakMap<Database.Database, StoreFiles>();

  /**
   * The watch of `db`'s files: made by the first to ask, which must ask right after opening it
   * (openStore does, for every connection it opens).
   */
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

  /**
   * check(), thrown: for a writer that must not write once a file is lost (called inside its
   * transaction, so that the check and the write are under one lock).
   */
  assertKept(): void {
    const lost = this.check();
    if (lost) throw lost;
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
 * The store's database, `-wal` or `-shm` file was deleted or replaced while this process had the
 * store open: one sentence naming the file (a gateway's refusal reason, the console's refusal, the
 * process's one line on stderr).
 */
export class StoreFileLost extends StoreError {
  override name = "StoreFileLost";
  constructor(path: string) {
    super(
      path,
      "was deleted or replaced while this process had the store open: what it wrote since then may be lost with the old file, so it records nothing more and ends, leaving the store to the processes that opened it since (a store's files, the database and its -wal and -shm, must not be removed or replaced while a portcullis process has it open).",
      "files-replaced",
    );
  }
}
