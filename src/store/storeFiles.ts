import { type BigIntStats, openSync, readSync, statSync } from "node:fs";
import { endianness } from "node:os";
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
  /**
   * The -shm file, opened to read its header (walCutShort) and never closed: closing any
   * descriptor of a file drops every POSIX lock this process holds on it, SQLite's included (the
   * -shm's locks say which connections have the store open; without them another process takes
   * itself for the only one and rebuilds the index under this one). It ends with the process.
   */
  private shmFd: number | null = null;
  /** The -wal, opened to read its header and frames' headers (walHole); no lock lives on it. */
  private walFd: number | null = null;
  /** The log's salts and page size, and its last frame, at the previous check (walHole). */
  private walMark: { salts: Buffer; page: number; frame: number } | null = null;
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
      return this.lose(new StoreFileLost(f.path));
    }
    const cut = this.walCutShort();
    return cut ? this.lose(cut) : null;
  }

  private lose(lost: StoreFileLost): StoreFileLost {
    this.lostFile = lost;
    this.db.pragma("wal_autocheckpoint = 0");
    for (const listener of this.listeners) listener(lost);
    return lost;
  }

  /**
   * The -wal cut short in place (`truncate`, `: > portcullis.db-wal`): the same file, so the
   * inode check passes, but the -shm index still describes frames the file no longer holds. The
   * connections that have the store open go on committing after them, over a hole of zeros that
   * no other process can read (the store is "damaged" to every command from then on), and the
   * last to close would copy those zeros into the database file. So: the -wal must be at least as
   * long as the frames its index counts (SQLite writes a frame before the index counts it, and
   * zeroes the count before it truncates the file itself). Read index, then size, thrice before
   * saying so: another process's checkpoint may restart the log between the two reads. A -shm
   * that cannot be read, or whose two copies of its header differ (being written), tells nothing.
   */
  private walCutShort(): StoreFileLost | null {
    if (this.files.length < 3) return null; // no -wal and -shm when the connection opened
    const wal = this.db.name + "-wal";
    try {
      this.shmFd ??= openSync(this.db.name + "-shm", "r");
      this.walFd ??= openSync(wal, "r");
    } catch {
      return null;
    }
    for (let tries = 0; tries < 3; tries++) {
      const index = walIndex(this.shmFd);
      if (index === null) return null;
      const needs = WAL_HEADER + index.frames * (WAL_FRAME_HEADER + index.page);
      let size: number;
      try {
        size = statSync(wal).size;
      } catch {
        return null; // gone: the inode check says so at the next look
      }
      const problem =
        size < needs
          ? `was cut short while this process had the store open (${size} bytes, where its index, the -shm file, describes ${needs})`
          : this.walHole(this.walFd, index);
      if (problem === null) return null;
      if (tries === 2) {
        return new StoreFileLost(
          wal,
          `${problem}: what was committed in the part cut off is lost, and what is written after it cannot be read by any other process, so this process records nothing more and ends, leaving the store as the database file holds it (a store's -wal must not be truncated or edited while a portcullis process has it open).`,
        );
      }
    }
    return null;
  }

  /**
   * A -wal of the right length that holds zeros where its frames were: cut short and filled out
   * again by the frames committed since (within a check's 25 ms, unseen by the length), or zeroed
   * in place. The log's header and its last frame, and the frame that was last at the previous
   * check while the log has not started over since (the same salts), must carry the header's
   * salts, as SQLite writes every frame of one generation of the log. The problem, or null.
   */
  private walHole(fd: number, index: { frames: number; page: number }): string | null {
    const header = readAt(fd, 0, WAL_HEADER);
    if (header === null) return null;
    const magic = header.readUInt32BE(0);
    if ((magic & ~1) >>> 0 !== WAL_MAGIC) {
      return `was cut short or overwritten while this process had the store open: its header is gone, where its index, the -shm file, counts ${index.frames} frames`;
    }
    const salts = header.subarray(16, 24);
    const frameAt = (n: number) => WAL_HEADER + (n - 1) * (WAL_FRAME_HEADER + index.page);
    const holds = (n: number): boolean => {
      const frame = readAt(fd, frameAt(n), WAL_FRAME_HEADER);
      return frame === null || frame.subarray(8, 16).equals(salts);
    };
    const mark = this.walMark;
    const checked =
      mark?.salts.equals(salts) && mark.page === index.page && mark.frame <= index.frames
        ? [mark.frame, index.frames]
        : [index.frames];
    for (const n of checked) {
      if (!holds(n)) {
        return `was cut short or overwritten while this process had the store open: frame ${n} of the ${index.frames} its index, the -shm file, counts holds no frame of this log`;
      }
    }
    this.walMark = { salts: Buffer.from(salts), page: index.page, frame: index.frames };
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
  constructor(
    path: string,
    problem = "was deleted or replaced while this process had the store open: what it wrote since then may be lost with the old file, so it records nothing more and ends, leaving the store to the processes that opened it since (a store's files, the database and its -wal and -shm, must not be removed or replaced while a portcullis process has it open).",
  ) {
    super(path, problem, "files-replaced");
  }
}

/** The -shm index header's size: two copies of SQLite's WalIndexHdr, 48 bytes each. */
const SHM_HEADER = 48;
const WAL_HEADER = 32;
const WAL_FRAME_HEADER = 24;
const WAL_INDEX_VERSION = 3007000;
/** The -wal header's magic number, its low bit aside (the checksums' byte order). */
const WAL_MAGIC = 0x377f0682;

/**
 * The frames the -shm index open as `fd` counts and the page size (its header's mxFrame and
 * szPage, in the machine's byte order: https://www.sqlite.org/walformat.html), or null when the
 * index cannot be read consistently (short, being written, not initialised) or counts none.
 */
function walIndex(fd: number): { frames: number; page: number } | null {
  const read = readAt(fd, 0, 2 * SHM_HEADER);
  if (read === null) return null;
  if (!read.subarray(0, SHM_HEADER).equals(read.subarray(SHM_HEADER))) return null;
  const le = endianness() === "LE";
  const u32 = (at: number) => (le ? read.readUInt32LE(at) : read.readUInt32BE(at));
  const u16 = (at: number) => (le ? read.readUInt16LE(at) : read.readUInt16BE(at));
  if (u32(0) !== WAL_INDEX_VERSION || read[12] !== 1) return null;
  const page = u16(14) === 1 ? 65536 : u16(14);
  const frames = u32(16);
  if (page < 512 || frames === 0) return null;
  return { frames, page };
}

/** `length` bytes of the file open as `fd` at `at`, or null when it holds fewer or cannot be read. */
function readAt(fd: number, at: number, length: number): Buffer | null {
  const buf = Buffer.alloc(length);
  try {
    return readSync(fd, buf, 0, length, at) === length ? buf : null;
  } catch {
    return null;
  }
}
