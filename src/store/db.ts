import {
  accessSync,
  chmodSync,
  closeSync,
  constants,
  existsSync,
  openSync,
  readFileSync,
  statSync,
} from "node:fs";
import { dirname, join } from "node:path";
import Database from "better-sqlite3";
import { fileSizeLimit } from "../identity/proc.js";
import { envMs } from "../util/envMs.js";
import { fileProblem } from "../util/errno.js";
import type { Logger } from "../util/log.js";
import { migrations } from "./migrations.js";
import { warnOlderProcesses } from "./olderProcesses.js";
import { KNOWN_SCHEMA_VERSION, portcullisVersion } from "./schemaVersion.js";
import { requireInitialized, STORE_FILE } from "./stateDir.js";
import { storeAdvice } from "./storeAdvice.js";
import { type StoreCause, StoreError } from "./storeError.js";
import { StoreFiles } from "./storeFiles.js";
import { withLogApplied } from "./walImage.js";

export { StoreError };

export type Store = Database.Database;

/**
 * How long one statement waits for another process's lock before SQLITE_BUSY: 10 s, or
 * PORTCULLIS_BUSY_TIMEOUT_MS (read at each open).
 */
export const busyTimeoutMs = (): number => envMs("PORTCULLIS_BUSY_TIMEOUT_MS", 10_000);
/** Steps that SQLite does not retry by itself (the WAL switch, a migration's first lock). */
const OPEN_ATTEMPTS = 12;
/**
 * SQLite's page cache per connection, in KiB (negative: a size, not a page count): SQLite's own
 * default. better-sqlite3 is built with 16 MB instead, which a gateway fills within ~20,000
 * audit records and keeps for its whole life as native memory (measured: +23 MB of RSS; 2 MB
 * costs no measurable CPU per append, the writes touch only the right edge of the tree).
 */
const PAGE_CACHE_KIB = 2000;

/**
 * Opens (creating if needed) the embedded store shared by every gateway process
 * and the CLI. WAL lets readers (status, audit views) run beside writers;
 * busy_timeout makes concurrent writers queue instead of failing.
 *
 * Several gateways started at once on one fresh state directory race here: the busy timeout is
 * set before anything else, and the steps SQLite answers SQLITE_BUSY to without waiting
 * (switching to WAL, a migration) are retried with a growing pause, so no start fails on it.
 *
 * The file (and the -wal/-shm files SQLite creates with the same mode) is readable by its owner
 * only: it holds approval requests and execution records.
 */
export function openStore(stateDir: string, file = STORE_FILE): Store {
  const path = join(stateDir, file);
  ownerOnly(path);
  let db: Store;
  try {
    db = new Database(path);
  } catch (e) {
    throw storeError(path, e);
  }
  // the schema version it was at, before this opening brought it up to this portcullis's
  let before = 0;
  let applied = 0;
  try {
    db.pragma(`busy_timeout = ${busyTimeoutMs()}`);
    // before anything is written to it (the switch to WAL included)
    retryBusy(() => {
      before = checkSchema(db, path);
    });
    retryBusy(() => {
      const mode = db.pragma("journal_mode = WAL", { simple: true });
      if (String(mode).toLowerCase() !== "wal") throw busy(`journal_mode is ${String(mode)}`);
    });
    db.pragma("synchronous = FULL");
    db.pragma(`cache_size = -${PAGE_CACHE_KIB}`);
    db.pragma("foreign_keys = ON");
    retryBusy(() => {
      applied = migrate(db);
    });
    probeWritable(db);
  } catch (e) {
    db.close();
    throw storeError(path, e);
  }
  // brought up from an older portcullis's schema: what that portcullis still runs on it is said
  // (by this process: one that raced it there says nothing)
  if (before > 0 && applied > 0) {
    upgradedHere.add(db);
    warnOlderProcesses(db, path, before);
  }
  for (const side of ["-wal", "-shm"]) if (existsSync(path + side)) chmodQuiet(path + side);
  // The files as this connection opened them, before anything else can run: whoever writes
  // through it later can ask whether they are still the ones at their paths (storeFiles.ts).
  StoreFiles.of(db);
  lastOpened = path;
  return db;
}

/** The connections whose opening brought an older portcullis's store up to this one's schema. */
const upgradedHere = new WeakSet<Store>();

/**
 * Whether opening `db` brought the store up from an older portcullis's schema (and said so, with
 * the processes of that portcullis still running on it: olderProcesses.ts).
 */
export function upgradedOnOpen(db: Store): boolean {
  return upgradedHere.has(db);
}

/**
 * The store of a command that only reads it: in a state directory `init` was never run in, it
 * is refused (NotInitializedError, exit 2), not created empty.
 */
export function openExistingStore(stateDir: string): Store {
  requireInitialized(stateDir);
  return openStore(stateDir);
}

/**
 * An empty store of this version, in memory: what a command that only reads the log (verify,
 * export, checkpoint) reads where there is no store file, rather than create one.
 */
export function openEmptyStore(): Store {
  const db = new Database(":memory:");
  migrate(db);
  return db;
}

/**
 * The store of a command that only reads it (the audit's verification and views, status, the
 * catalog, egress, passkey and approval lists): as openExistingStore, and where this user may
 * read the store but not write it (a copy handed to a reviewer, a read-only mount, a backup), or
 * its disk is full (when the log is wanted elsewhere), or this process's file size limit is one
 * its files reach (fileSizeLimitReached: the -shm file alone is 32 KiB), a read-only connection
 * instead of a refusal: `readWithoutWriting` then says why. Such a store must be at this
 * portcullis's schema: bringing an older one up to date is a write.
 */
export function openStoreToRead(stateDir: string): Store {
  requireInitialized(stateDir);
  const path = join(stateDir, STORE_FILE);
  // A file size limit the store's files already reach: opening it to write would fail, or write
  // part of what it tries (a write below the limit goes through, the next one not, as the
  // checkpoint a connection makes as it ends), so it is not tried. (A store not made yet is:
  // making it is a write, refused as such.)
  let why = existsSync(path) ? fileSizeLimitRefuses(path) : null;
  if (!why) {
    try {
      return openStore(stateDir);
    } catch (e) {
      // A full disk or a file size limit: what only reads is read all the same (the user may need
      // the log saved elsewhere precisely then), through a -shm file already there, else from the
      // file alone when it holds the whole store (openReadOnly). Nothing is written either way.
      if (!(e instanceof StoreError && (e.kind === "read-only" || READ_ANYWAY.has(e.reason)))) throw e;
      why = e;
    }
  }
  const db = openReadOnly(path);
  readOnlyBecause.set(db, why);
  return db;
}

/** The causes a store that cannot be written is still read for: none of them is the store's fault. */
const READ_ANYWAY: ReadonlySet<StoreCause> = new Set(["disk-full", "file-size-limit"]);

/** Why openStoreToRead gave a connection that cannot write (what opening it to write met). */
const readOnlyBecause = new WeakMap<Store, StoreError>();

/**
 * Why `db` was opened read-only by openStoreToRead (a full disk, a file size limit, a read-only
 * file: the sentence that names the store and the cause), or undefined when it can be written.
 * A command that would write besides reading (closing abandoned requests) says what it did not.
 */
export function readWithoutWriting(db: Store): StoreError | undefined {
  return readOnlyBecause.get(db);
}

/**
 * Whether openStoreToRead gave a copy of the store in memory (SQLite could not make the -shm index
 * it reads a write-ahead log through: a full disk, a file size limit): what it holds is the store
 * as it was when opened, and never changes. A command that reads once reads it; one that watches
 * the store (`approvals --watch`) would show that moment as live.
 */
export function readFromCopy(db: Store): boolean {
  return readOnlyBecause.has(db) && db.memory;
}

function openReadOnly(path: string): Store {
  let db: Store;
  try {
    db = new Database(path, { readonly: true, fileMustExist: true });
    db.pragma(`busy_timeout = ${busyTimeoutMs()}`);
    // the first read opens the write-ahead log, which fails when it cannot be opened or created
    db.prepare("SELECT count(*) FROM sqlite_schema").get();
  } catch (e) {
    const without = readWithoutLogIndex(e, path);
    if (!without) throw storeError(path, e);
    db = without === "file" ? snapshot(path) : snapshotWithLog(path, without);
  }
  try {
    checkSchema(db, path);
    const applied = db
      .prepare("SELECT count(*) AS n FROM schema_migrations WHERE version <= ?")
      .get(KNOWN_VERSION) as {
      n: number;
    };
    if (applied.n < migrations.length)
      throw new StoreError(
        path,
        "was written by an older portcullis, and this one must bring it up to date before reading it, which needs write access: run any portcullis command once where the store can be written.",
        "older-schema",
      );
  } catch (e) {
    db.close();
    throw storeError(path, e);
  }
  return db;
}

/**
 * SQLite cannot read a write-ahead-log store read-only when its -wal and -shm files are absent and
 * its directory may not be written (they cannot be created). With no -wal file, or an empty one,
 * the database file holds the whole store (the last connection to close checkpointed it), so
 * that case is read from a copy in memory ("file"). On a full disk, or under a file size limit
 * below 32 KiB (EFBIG), the -shm index SQLite reads the log through cannot be created or extended
 * to its 32 KiB (the first process to open a store nobody has open truncates one left behind and
 * makes it again): a -wal holding records is then read with the file, in memory (the cause
 * returned: snapshotWithLog). Null where neither applies (SQLite's error is the store's).
 */
function readWithoutLogIndex(e: unknown, path: string): "file" | StoreError | null {
  const code = String((e as { code?: unknown } | null)?.code ?? "");
  const refused = code === "SQLITE_FULL" || code.startsWith("SQLITE_IOERR") ? storeError(path, e) : null;
  const full = refused instanceof StoreError && READ_ANYWAY.has(refused.reason) ? refused : null;
  if (!full && code !== "SQLITE_READONLY_DIRECTORY" && !code.startsWith("SQLITE_CANTOPEN")) return null;
  const wal = statSync(`${path}-wal`, { throwIfNoEntry: false });
  if (!wal || wal.size === 0) return "file";
  return full;
}

/** The store's file, read into memory as a read-only database (its header set to rollback mode: an in-memory copy keeps no log). */
function snapshot(path: string): Store {
  return fromImage(readFileSync(path));
}

/**
 * The store's file with the committed records of its -wal applied, in memory (walImage.ts), as
 * SQLite would read them through the index `why` (a full disk, a file size limit) keeps it from
 * making. The two files are read again while either changes as they are read (a gateway
 * starting beside this command); a log that cannot be applied, or files that keep changing, are
 * refused saying so: reading the file alone would miss the log's records.
 */
function snapshotWithLog(path: string, why: StoreError): Store {
  for (let attempt = 0; attempt < 3; attempt++) {
    const before = filesStamp(path);
    // gone since: a gateway that ended checkpointed it into the file, read again
    const wal = existsSync(`${path}-wal`) ? readFileSync(`${path}-wal`) : Buffer.alloc(0);
    const image = withLogApplied(readFileSync(path), wal);
    if (filesStamp(path) !== before) continue;
    if (image) return fromImage(image);
    break;
  }
  const size = statSync(`${path}-wal`, { throwIfNoEntry: false })?.size ?? 0;
  const [when, lacks] =
    why.reason === "disk-full"
      ? ["while the disk is full", "it has no space to make"]
      : [
          `under this process's file size limit (ulimit -f: ${fileSizeLimit()} bytes)`,
          "the limit keeps it from making",
        ];
  throw new StoreError(
    path,
    `cannot be read ${when}: its write-ahead log (${path}-wal, ${size} bytes) holds records not yet in the store's file, which SQLite reads through an index (${path}-shm) ${lacks}, and they could not be read without it (the log does not match the file, or the two kept changing as they were read); reading the file alone would miss them.`,
    why.reason,
  );
}

/** The database file's and its -wal's identity, size and time of change, to see either change. */
function filesStamp(path: string): string {
  return [path, `${path}-wal`]
    .map((f) => {
      const s = statSync(f, { throwIfNoEntry: false, bigint: true });
      return s ? `${s.ino}:${s.size}:${s.mtimeNs}:${s.ctimeNs}` : "-";
    })
    .join("|");
}

/** A database image as a read-only in-memory database, its header set to rollback mode (an in-memory copy keeps no log). */
function fromImage(bytes: Buffer): Store {
  // bytes 18 and 19: the file format's write and read versions, 2 for write-ahead logging
  if (bytes.length >= 20 && bytes[18] === 2 && bytes[19] === 2) bytes[18] = bytes[19] = 1;
  return new Database(bytes, { readonly: true });
}

/**
 * Fails SQLITE_READONLY when this connection cannot write the store. SQLite opens a file it may
 * not write read-only without a word, and a current store needs no write to open (WAL is set,
 * nothing to migrate): without this, a gateway would launch its server and fail at its first
 * record. A write lock held by another process says nothing either way and is not waited for
 * (a read-only connection is refused before any lock is tried).
 */
function probeWritable(db: Store): void {
  const timeout = Number(db.pragma("busy_timeout", { simple: true }));
  // BEGIN IMMEDIATE alone succeeds on a read-only WAL connection: a page must be written (the
  // header's user_version, set to what it is, and rolled back).
  const version = Number(db.pragma("user_version", { simple: true }));
  db.pragma("busy_timeout = 0");
  try {
    db.exec("BEGIN IMMEDIATE");
    try {
      db.pragma(`user_version = ${version}`);
    } finally {
      db.exec("ROLLBACK");
    }
  } catch (e) {
    if (!isBusy(e)) throw e;
  } finally {
    db.pragma(`busy_timeout = ${timeout}`);
  }
}

/** The file of the store this process opened last: what a failure after the open is about. */
let lastOpened: string | null = null;

/**
 * A statement that failed on the store after it was opened (another process held its lock past
 * the busy timeout, the disk filled, the file went read-only), as the StoreError sentence that
 * names the file: a command reports it like a failure to open, never as an internal error. Null
 * for anything else (a bug is still one).
 */
export function storeFailure(e: unknown): StoreError | null {
  if (e instanceof StoreError) return e;
  const code = (e as { code?: unknown } | null)?.code;
  if (typeof code !== "string" || !code.startsWith("SQLITE_")) return null;
  const failure = storeError(lastOpened ?? "of this state directory", e);
  return failure instanceof StoreError ? failure : null;
}

/**
 * A write the file system refused (the disk full, the file size limit reached, a read-only file)
 * as the store's sentence, which names the file and the cause (SQLite says only "database or disk
 * is full", "disk I/O error" or "attempt to write a readonly database"): what a gateway says of a
 * record or a row it could not write, with storeAdvice's one thing to do. Null for anything else.
 */
export function writeRefused(e: unknown): StoreError | null {
  const failure = storeFailure(e);
  return failure && WRITE_REFUSED.has(failure.reason) ? failure : null;
}

/** writeRefused's sentence and the one thing to do about it; for anything else, the error's own message. */
export function writeProblem(e: unknown): string {
  const failure = writeRefused(e);
  if (failure) return `${failure.message} To fix it: ${storeAdvice(failure)}.`;
  return (e as Error | null)?.message ?? String(e);
}

const WRITE_REFUSED: ReadonlySet<StoreCause> = new Set(["disk-full", "file-size-limit", "read-only"]);

/**
 * How long a write that matters (an approval request) keeps trying while the store is locked:
 * 30 s, or PORTCULLIS_BUSY_PATIENCE_MS (read at each write).
 */
const busyPatienceMs = (): number => envMs("PORTCULLIS_BUSY_PATIENCE_MS", 30_000);

/**
 * How long a write that is tried again later waits for another process's lock at each try (the
 * audit sink's groups, a call's approval request): another gateway's commit, its fsync included,
 * holds the lock for well under this; a program that holds it longer (a transaction left open)
 * does not hold the gateway's event loop with it.
 */
export const BRIEF_WAIT_MS = 100;

/**
 * Runs a write, again after a pause while another process holds the store's lock (each attempt
 * waits the busy timeout, or what `attempt` bounds it to), until `patienceMs` have passed: a store
 * opened in another program (a database browser with an unsaved edit, an sqlite3 shell inside
 * BEGIN) for a while delays the gateway instead of failing its calls. Pauses asynchronously, so
 * what does not need the lock goes on meanwhile. Then the last failure is thrown; anything but
 * busy is thrown at once. `onBusy` is told once, at the first busy failure (to say why the caller
 * waits).
 */
export async function whenUnlocked<T>(
  step: () => T,
  o: {
    patienceMs?: number;
    onBusy?: () => void;
    attempt?: <U>(write: () => U) => U;
    /** stops trying once aborted (what waited is gone: a connection that ended), the last failure thrown */
    signal?: AbortSignal;
  } = {},
): Promise<T> {
  const started = Date.now();
  for (let attempt = 1; ; attempt++) {
    try {
      return o.attempt ? o.attempt(step) : step();
    } catch (e) {
      if (!isBusy(e) || Date.now() - started >= (o.patienceMs ?? busyPatienceMs())) throw e;
      if (o.signal?.aborted) throw e;
      if (attempt === 1) o.onBusy?.();
      const pause = Math.min(50 * 2 ** (attempt - 1), 1_000);
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          o.signal?.removeEventListener("abort", done);
          resolve();
        };
        const timer = setTimeout(done, pause);
        o.signal?.addEventListener("abort", done, { once: true });
      });
    }
  }
}

/**
 * whenUnlocked's options for a write a tools/call waits on (its approval request, the consumption
 * of its one-call grant, the withdrawal of its request): each attempt waits BRIEF_WAIT_MS at most
 * (the pauses between are where the rest of the gateway goes on), and the one warning, naming the
 * store, says why the call is slow. `what` names what waits, e.g. "the approval request for 'x'".
 */
export function callWaitsFor(
  db: Store,
  log: Pick<Logger, "warn">,
  what: string,
): { onBusy: () => void; attempt: <T>(write: () => T) => T } {
  return {
    onBusy: () => log.warn(`the store ${db.name} is locked by another process: ${what} waits for it`),
    attempt: briefly(db),
  };
}

/** The connection's runner of writes that wait BRIEF_WAIT_MS at most (waitingAtMost), one per connection. */
export function briefly(db: Store): <T>(write: () => T) => T {
  return boundedRunner(db, BRIEF_WAIT_MS);
}

/** waitingAtMost's runner for `ms`, made once per connection and bound. */
function boundedRunner(db: Store, ms: number): <T>(write: () => T) => T {
  let runners = boundedRunners.get(db);
  if (!runners) {
    runners = new Map();
    boundedRunners.set(db, runners);
  }
  let runner = runners.get(ms);
  if (!runner) {
    runner = waitingAtMost(db, ms);
    runners.set(ms, runner);
  }
  return runner;
}

const boundedRunners = new WeakMap<Store, Map<number, <T>(write: () => T) => T>>();

/**
 * Waits until this connection can take the store's write lock, without holding the event loop
 * while another process keeps it: tries that wait LOCK_TRY_MS each, with pauses between (25 ms,
 * doubling to 250), for `patienceMs` at most. True once the lock was taken and given back; false
 * when it was still held at the end (or the store is closed). For a writer with several
 * synchronous writes to make while the rest of the gateway goes on (an HTTP session ending while
 * others serve): it waits here, then writes.
 */
export async function lockFreeSoon(db: Store, patienceMs = busyTimeoutMs()): Promise<boolean> {
  const started = performance.now();
  const tryLock = boundedRunner(db, LOCK_TRY_MS);
  for (let attempt = 0; db.open; attempt++) {
    if (tryLock(() => lockIsFree(db))) return true;
    const left = patienceMs - (performance.now() - started);
    if (left <= 0) return false;
    await new Promise((resolve) => setTimeout(resolve, Math.min(25 * 2 ** attempt, 250, left)));
  }
  return false;
}

/** How long each of lockFreeSoon's tries waits for the lock (the loop is held meanwhile). */
const LOCK_TRY_MS = 10;

/**
 * For a writer that keeps what it could not write and tries again later (the gateways' status
 * rows, at every heartbeat): its write waits `ms` at most for another process's lock, but only
 * LOCK_TRY_MS while a lock episode is under way (a write through this wrapper met the lock less
 * than LOCK_EPISODE_MS ago). `run --listen` keeps one row per HTTP session, each rewritten at every
 * heartbeat: each waiting half a second under a program's lock held the event loop for most of
 * the time, every session with it. The episode ends at the first write that goes through.
 */
export function waitingOnce(db: Store, ms: number): <T>(write: () => T) => T {
  return (write) => {
    const met = lockMetAt.get(db);
    const bound = met !== undefined && performance.now() - met < LOCK_EPISODE_MS ? LOCK_TRY_MS : ms;
    try {
      const done = boundedRunner(db, bound)(write);
      lockMetAt.delete(db);
      return done;
    } catch (e) {
      if (isBusy(e)) lockMetAt.set(db, performance.now());
      throw e;
    }
  };
}

/** When a write through waitingOnce last met another process's lock, per connection. */
const lockMetAt = new WeakMap<Store, number>();
/** A lock met less than this long ago is still held, for waitingOnce: three heartbeats. */
const LOCK_EPISODE_MS = 15_000;

/**
 * Whether this connection can take the store's write lock now: taken and given back at once,
 * waiting as the connection's busy timeout says (wrap it in `briefly` to wait less). True inside a
 * transaction of its own (it already holds the lock); anything but busy (a read-only file, a full
 * disk) is for the writes to say, so true too.
 */
export function lockIsFree(db: Store): boolean {
  if (db.inTransaction) return true;
  try {
    db.exec("BEGIN IMMEDIATE");
    db.exec("ROLLBACK");
    return true;
  } catch (e) {
    return !isBusy(e);
  }
}

/**
 * What SQLite's (or the file system's) error code says about the file, in words; any other error
 * (a bug, not the file) is returned as it is.
 */
function storeError(path: string, e: unknown): unknown {
  if (e instanceof StoreError) return e;
  const code = String((e as { code?: unknown } | null)?.code ?? "");
  const why = (text: string, cause: StoreCause, kind?: "read-only") =>
    new StoreError(path, text, cause, kind);
  if (code === "SQLITE_NOTADB")
    return why(
      "is not a portcullis store (not an SQLite database, or its header is damaged).",
      "not-a-database",
    );
  if (code.startsWith("SQLITE_CORRUPT")) return why("is damaged (SQLite reports corruption).", "damaged");
  // A write past the process's file size limit (EFBIG) is SQLite's SQLITE_FULL when part of it
  // went through, else an input/output error: said as the limit, not a full or failing disk.
  if (code === "SQLITE_FULL" || code === "ENOSPC" || code === "EFBIG" || code.startsWith("SQLITE_IOERR")) {
    const limited = fileSizeLimitRefuses(path);
    if (limited) return limited;
  }
  // SQLITE_IOERR_SHMSIZE: the -shm file could not be extended (a full disk; before, it was taken
  // for a -wal deleted under a process, below, as the -shm file is there and the -wal empty)
  if (code === "SQLITE_FULL" || code === "ENOSPC" || code === "SQLITE_IOERR_SHMSIZE")
    return why("cannot be written: the disk is full.", "disk-full");
  if (code.startsWith("SQLITE_READONLY") || code === "EROFS")
    return why("cannot be written (the file, or its directory, is read-only).", "read-only", "read-only");
  if (code.startsWith("SQLITE_CANTOPEN") || code === "ENOTDIR" || code === "EISDIR" || code === "EACCES") {
    // SQLite says only that it could not open the file: asked of the file system, a store of
    // another user (mode 0600) is said to be one, with what to do, instead of three guesses
    const errno = code === "EACCES" ? code : openErrno(path);
    if (errno === "EACCES" || errno === "EPERM")
      return why(
        `cannot be opened: ${fileProblem(errno)}; run the command as the user the store belongs to, or give a state directory of your own (--state-dir or PORTCULLIS_HOME).`,
        "permissions",
      );
    return why(
      "cannot be opened (it is not a regular file, its directory is not one, or permission is denied).",
      "not-a-file",
    );
  }
  if (code.startsWith("SQLITE_PERM") || code.startsWith("SQLITE_AUTH"))
    return why("cannot be used: permission denied.", "permissions");
  if (isBusy(e))
    return why("is locked by another process, and stayed locked while this one waited.", "locked");
  if (code.startsWith("SQLITE_IOERR") && walMissing(path))
    return why(
      `cannot be read (input/output error): its -shm file describes a write-ahead log that ${path}-wal does not hold, as when the -wal file is deleted while a process has the store open; the store reads again once every process that had it open then has ended (what was only in the deleted file is lost).`,
      "log-deleted",
    );
  if (code.startsWith("SQLITE_IOERR"))
    return why("cannot be read or written (input/output error).", "io-error");
  // SQLite's own words about the statement ("no such table: grants": a store whose tables were
  // dropped) say which part is missing; they quote the gateway's SQL, never a value
  if (code === "SQLITE_ERROR" && e instanceof Error && /^no such (table|column|index)\b/.test(e.message))
    return why(
      `cannot be used (SQLite: ${e.message.slice(0, 200)}): a part of its schema is missing.`,
      "other",
    );
  if (code.startsWith("SQLITE_")) return why(`cannot be used (${code}).`, "other");
  return e;
}

/** The store's sentence for a file size limit its files reach (fileSizeLimitReached), or null. */
function fileSizeLimitRefuses(path: string): StoreError | null {
  const limit = fileSizeLimitReached(path);
  if (limit === null) return null;
  return new StoreError(
    path,
    `cannot be written: one of its files would grow past this process's file size limit (ulimit -f: ${limit} bytes).`,
    "file-size-limit",
  );
}

/**
 * This process's file size limit (RLIMIT_FSIZE, soft), when one of the store's files (the
 * database, its -wal or -shm) is within 64 KiB of it: a write past it fails (EFBIG). Null without
 * a limit, or where it cannot be read (not Linux).
 */
function fileSizeLimitReached(path: string): number | null {
  const limit = fileSizeLimit();
  if (limit === null) return null;
  const size = (file: string): number => {
    try {
      return statSync(file, { throwIfNoEntry: false })?.size ?? 0;
    } catch {
      return 0;
    }
  };
  const largest = Math.max(size(path), size(`${path}-wal`), size(`${path}-shm`));
  return largest + 65536 >= limit ? limit : null;
}

/**
 * The errno of opening `path` to read (without waiting on a FIFO), or, when it does not
 * exist, of creating a file in its directory; undefined when that succeeds or says nothing more.
 */
function openErrno(path: string): string | undefined {
  try {
    closeSync(openSync(path, constants.O_RDONLY | constants.O_NONBLOCK));
    return undefined;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code !== "ENOENT") return code;
  }
  try {
    accessSync(dirname(path), constants.W_OK | constants.X_OK);
    return undefined;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code;
  }
}

/**
 * The -shm file is there but the -wal is missing or empty: SQLite then reads past the end of the
 * log the -shm describes (SQLITE_IOERR_SHORT_READ), the mark of a -wal deleted under a process
 * that still has the store open. Only asked once an input/output error happened.
 */
function walMissing(path: string): boolean {
  try {
    if (!existsSync(`${path}-shm`)) return false;
    const wal = statSync(`${path}-wal`, { throwIfNoEntry: false });
    return !wal || wal.size === 0;
  } catch {
    return false;
  }
}

/** Creates the file with mode 0600 before SQLite does (SQLite would use the umask), or narrows it. */
function ownerOnly(path: string): void {
  try {
    closeSync(openSync(path, "a", 0o600));
  } catch {
    return; // SQLite's own error says more
  }
  chmodQuiet(path);
}

function chmodQuiet(path: string): void {
  try {
    chmodSync(path, 0o600);
  } catch {
    // a file owned by someone else: SQLite decides whether it can be used
  }
}

function busy(message: string): Error & { code: string } {
  return Object.assign(new Error(message), { code: "SQLITE_BUSY" });
}

/**
 * A runner of writes that wait at most `ms` for another process's lock: the connection's busy
 * timeout is lowered for the write and put back after (left as it is when already that low, as
 * while a gateway ends, src/store/ending.ts). For a writer that keeps what it could not write and
 * tries again later, instead of holding the event loop a whole busy timeout (better-sqlite3 is
 * synchronous: timers, signals and every other client wait behind it). About 1.5 µs a write, paid
 * on the audit's hot path.
 *
 * A PRAGMA acts when it is compiled, and SQLite compiles it again at each run but the first after
 * a prepare: a prepared `PRAGMA busy_timeout = N` sets N when prepared, not at its first run (a
 * runner whose statements were prepared together left the full timeout in place for its first
 * write: a gateway froze for it). So the setting is `exec`uted each time (cheaper than a
 * statement's run, which compiles it again anyway), and the prepared read is run once here, so
 * that each later run reads the value of the moment.
 */
export function waitingAtMost(db: Store, ms: number): <T>(write: () => T) => T {
  const read = db.prepare("PRAGMA busy_timeout").pluck();
  read.get();
  return (write) => {
    const timeout = Number(read.get());
    if (timeout <= ms) return write();
    db.exec(`PRAGMA busy_timeout = ${ms}`);
    try {
      return write();
    } finally {
      db.exec(`PRAGMA busy_timeout = ${timeout}`);
    }
  };
}

/** SQLite's answer when another connection holds the lock past the busy timeout. */
export function isBusy(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === "string" && (code.startsWith("SQLITE_BUSY") || code.startsWith("SQLITE_LOCKED"));
}

/** Runs `step`, again after a growing pause (20 ms … ~1.3 s, bounded) while it fails busy. */
function retryBusy(step: () => void): void {
  for (let attempt = 1; ; attempt++) {
    try {
      step();
      return;
    } catch (e) {
      if (!isBusy(e) || attempt >= OPEN_ATTEMPTS) throw e;
      sleepMs(Math.min(20 * 2 ** (attempt - 1), 1_300) * (0.5 + Math.random() / 2));
    }
  }
}

const sleeper = new Int32Array(new SharedArrayBuffer(4));
/** Opening the store is synchronous; so is the pause between attempts. */
function sleepMs(ms: number): void {
  Atomics.wait(sleeper, 0, 0, ms);
}

/** The highest schema version this portcullis knows. */
const KNOWN_VERSION = KNOWN_SCHEMA_VERSION;

/**
 * Refuses a database that is not a portcullis store (tables, but no schema_migrations: another
 * program's database must not get ours added) and one whose schema is newer than this portcullis
 * knows (a later version may have changed what a column means: reading it could misreport,
 * writing it could corrupt it).
 */
function checkSchema(db: Store, path: string): number {
  const tables = db.prepare("SELECT name FROM sqlite_schema WHERE type = 'table'").all() as {
    name: string;
  }[];
  if (tables.length === 0) return 0; // a new store
  if (!tables.some((t) => t.name === "schema_migrations"))
    throw new StoreError(
      path,
      "is an SQLite database, but not a portcullis store (no schema_migrations table).",
      "not-a-store",
    );
  const row = db.prepare("SELECT max(version) AS v FROM schema_migrations").get() as { v: unknown };
  const newest = typeof row.v === "number" || typeof row.v === "bigint" ? Number(row.v) : 0;
  if (newest > KNOWN_VERSION)
    throw new StoreError(
      path,
      // both versions, and this one's own: the user has two on this machine, and must tell which
      // one each shell and each MCP client's server entry runs
      `was written by a newer portcullis (schema version ${newest}; this one, portcullis ${portcullisVersion()}, knows up to ${KNOWN_VERSION}), ` +
        "and is neither read nor written by this one.",
      "newer-schema",
    );
  return newest;
}

/** Applies the migrations `db` lacks; how many this call applied. */
function migrate(db: Store): number {
  db.exec(
    "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)",
  );
  const applied = new Set(
    (db.prepare("SELECT version FROM schema_migrations").all() as { version: number }[]).map(
      (r) => r.version,
    ),
  );
  let count = 0;
  for (const m of [...migrations].sort((a, b) => a.version - b.version)) {
    if (applied.has(m.version)) continue;
    // IMMEDIATE takes the write lock first, so two processes starting at once
    // cannot both apply the same migration.
    db.transaction(() => {
      const again = db.prepare("SELECT 1 FROM schema_migrations WHERE version = ?").get(m.version);
      if (again) return;
      db.exec(m.sql);
      db.prepare("INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)").run(
        m.version,
        new Date().toISOString(),
      );
      // the version in the file's header too, for `run`'s read before it opens the store
      // (headerVersion.ts); a later migration only raises it
      db.pragma(`user_version = ${m.version}`);
      count++;
    }).immediate();
  }
  const healed = count === 0 && headerBehind(db, Math.max(0, ...applied)) && writeHeaderVersion(db);
  // the header page copied into the main file now, where `run` reads it. Best effort: a reader
  // holding an older snapshot keeps a passive checkpoint short of it, a full disk fails it; the
  // header is a hint, the opening's check of schema_migrations stands (headerVersion.ts)
  if (count > 0 || healed)
    try {
      db.pragma("wal_checkpoint(PASSIVE)");
    } catch {
      // the store is as usable as without it
    }
  return count;
}

/** Whether the header's user_version is below `newest`, the newest migration the store records. */
function headerBehind(db: Store, newest: number): boolean {
  return newest > 0 && Number(db.pragma("user_version", { simple: true })) < newest;
}

/**
 * Writes the store's newest migration into its header's user_version, for a store a portcullis
 * from before the header was written left at 0: `run` spawns nothing early on such a store
 * (src/cli/run.ts, knownStore), so once is enough to give it back its early start. Only a version
 * this portcullis knows (checkSchema refused a newer store before this). Best effort, never
 * waited for: another process holding the write lock leaves it for the next opening. Returns
 * whether it wrote. A write the store refuses (a read-only file, a full disk) is thrown: it is
 * the opening's first write, and the opening's catch gives it the sentence probeWritable's refusal
 * gets, naming the file and the fix (test/store/header-version-unwritable.test.ts); swallowed,
 * a full disk or a file size limit the probe's rolled-back page never meets would let a gateway
 * start and fail at its first record.
 */
function writeHeaderVersion(db: Store): boolean {
  const timeout = Number(db.pragma("busy_timeout", { simple: true }));
  db.pragma("busy_timeout = 0");
  try {
    return db
      .transaction(() => {
        // under the write lock: another opening may have migrated or written it meanwhile
        const row = db.prepare("SELECT max(version) AS v FROM schema_migrations").get() as { v: unknown };
        const newest = typeof row.v === "number" || typeof row.v === "bigint" ? Number(row.v) : 0;
        if (!headerBehind(db, newest)) return false;
        db.pragma(`user_version = ${newest}`);
        return true;
      })
      .immediate();
  } catch (e) {
    if (isBusy(e)) return false;
    throw e;
  } finally {
    db.pragma(`busy_timeout = ${timeout}`);
  }
}

/**
 * The schema objects (tables, indexes, triggers) a store of this version holds and `db` lacks:
 * one whose migrations are all recorded as applied but whose tables were dropped since (by hand,
 * a tool, a partial restore) opens as if whole, and every command that needs what is missing
 * fails with SQLite's own words. Compared with a new store migrated in memory, so the list never
 * falls behind the migrations. Empty for a whole store.
 */
export function missingSchema(db: Store): string[] {
  const have = schemaObjects(db);
  return [...expectedSchema()].filter((o) => !have.has(o)).sort();
}

let expected: Set<string> | undefined;
function expectedSchema(): Set<string> {
  if (expected) return expected;
  const fresh = new Database(":memory:");
  try {
    migrate(fresh);
    expected = schemaObjects(fresh);
  } finally {
    fresh.close();
  }
  return expected;
}

function schemaObjects(db: Store): Set<string> {
  const rows = db
    .prepare(
      "SELECT type, name FROM sqlite_master WHERE type IN ('table', 'index', 'trigger') AND name NOT LIKE 'sqlite_%'",
    )
    .all() as { type: string; name: string }[];
  return new Set(rows.map((r) => `${r.type} ${r.name}`));
}
