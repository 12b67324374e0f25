import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";
import type { Store } from "./db.js";

/**
 * WAL checkpoints of a busy writer connection, run by a thread of their own.
 *
 * SQLite checkpoints inside the commit that crosses its threshold (1000 WAL frames): the pages
 * are copied back into the database and both files are fsynced, on the committing thread. For a
 * gateway that thread is the event loop, which then relays nothing for the length of two fsyncs
 * (measured at 16 calls at a time: commits over 0.5 ms were a quarter of the gateway's commit
 * time, and almost none once checkpoints were left out). Here the writer connection's automatic
 * checkpoints are switched off and every EVERY_COMMITS commits a worker thread, on a connection
 * of its own, runs a PASSIVE checkpoint (it takes no lock that the writer waits for).
 *
 * Bounds, so that the WAL cannot grow without limit when the thread cannot keep up:
 * - while commits keep coming, a checkpoint never ends with the whole WAL copied (frames were
 *   added meanwhile), so SQLite never starts the WAL over; once the thread reports MAX_WAL_FRAMES
 *   or more, the writer runs one PASSIVE checkpoint itself (only the tail is left to copy), after
 *   which its next commit starts the WAL from the beginning;
 * - a nudge not answered within STALL_COMMITS commits hands the checkpoints back to SQLite (its
 *   own threshold) until the thread answers again;
 * - a thread that fails or exits hands them back for good.
 *
 * Only a gateway's writer uses this; CLI processes keep SQLite's automatic checkpoints. The
 * durability of a commit is untouched: a checkpoint only copies what the WAL already holds.
 */
export class Checkpointer {
  private worker: Worker | null = null;
  /** Commits since the last nudge. */
  private commits = 0;
  /** Commits since the thread last answered, while a nudge is out; null when none is. */
  private pending: number | null = null;
  private handedBack = false;
  private stopped = false;

  constructor(
    private readonly db: Store,
    private readonly warn: (message: string) => void = () => {},
  ) {
    db.pragma("wal_autocheckpoint = 0");
  }

  /** To be called after each commit on the writer connection. */
  committed(): void {
    if (this.stopped) return;
    if (this.pending !== null) {
      if (++this.pending === STALL_COMMITS) this.handBack(true);
      return;
    }
    if (++this.commits < EVERY_COMMITS) return;
    this.commits = 0;
    this.pending = 0;
    try {
      this.worker ??= this.start();
      this.worker.postMessage(null);
    } catch (e) {
      this.fail(`cannot start the checkpoint thread: ${(e as Error).message}`);
    }
  }

  /** Stops the thread (the WAL is left as it is: SQLite checkpoints it when the last connection closes). */
  close(): void {
    this.stopped = true;
    void this.worker?.terminate();
    this.worker = null;
  }

  private start(): Worker {
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: { module: createRequire(import.meta.url).resolve("better-sqlite3"), path: this.db.name },
    });
    worker.on("message", (m: { log: number } | { error: string }) => this.answered(m));
    worker.on("error", (e) => this.fail(`the checkpoint thread failed: ${e.message}`));
    worker.on("exit", () => this.fail("the checkpoint thread exited"));
    // never keeps the process alive: after the listeners, which would take a reference again
    worker.unref();
    return worker;
  }

  private answered(m: { log: number } | { error: string }): void {
    this.pending = null;
    if (this.stopped) return;
    if ("error" in m) return this.fail(`a checkpoint failed: ${m.error}`);
    if (this.handedBack) this.handBack(false);
    if (m.log >= MAX_WAL_FRAMES) this.pragma("wal_checkpoint(PASSIVE)");
  }

  /** SQLite's own checkpoints on the writer connection (true), or the thread's again (false). */
  private handBack(toSqlite: boolean): void {
    this.handedBack = toSqlite;
    this.pragma(`wal_autocheckpoint = ${toSqlite ? SQLITE_DEFAULT_FRAMES : 0}`);
  }

  private fail(message: string): void {
    if (this.stopped) return;
    this.stopped = true;
    this.handBack(true);
    this.warn(`store: ${message}; WAL checkpoints are made by SQLite on the writer again`);
    void this.worker?.terminate();
    this.worker = null;
  }

  private pragma(statement: string): void {
    try {
      if (this.db.open) this.db.pragma(statement);
    } catch {
      // busy or closed: the next answer, or SQLite's own checkpoint, comes back to it
    }
  }
}

/**
 * Commits between two checkpoints. A gateway's commit writes 2 WAL frames at one call at a time
 * (the audit table's last leaf, the open-intents leaf) and 5 to 8 at 16: about SQLite's own
 * rhythm (1,000 frames) at c=1, so that one call at a time pays for no more checkpoints than before.
 */
const EVERY_COMMITS = 500;
/** Commits a nudge may stay unanswered before SQLite checkpoints on the writer again. */
const STALL_COMMITS = 20 * EVERY_COMMITS;
/** WAL frames (pages: 4 KiB each) after which the writer finishes a checkpoint itself. */
const MAX_WAL_FRAMES = 4096;
/** SQLite's own automatic checkpoint threshold (frames). */
const SQLITE_DEFAULT_FRAMES = 1000;

/**
 * The thread: its own connection to the store file (synchronous FULL: a checkpoint fsyncs the WAL
 * before copying and the database after), one PASSIVE checkpoint per message, its WAL size back.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
const Database = require(workerData.module);
const db = new Database(workerData.path, { fileMustExist: true });
db.pragma("synchronous = FULL");
parentPort.on("message", () => {
  try {
    const [row] = db.pragma("wal_checkpoint(PASSIVE)");
    parentPort.postMessage({ log: row.log });
  } catch (e) {
    parentPort.postMessage({ error: String(e && e.message) });
  }
});
`;
