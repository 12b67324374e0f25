import type { KeyObject } from "node:crypto";
import { closeSync, fdatasync, fdatasyncSync, openSync, statSync } from "node:fs";
import type { Statement } from "better-sqlite3";
import { ulid } from "ulid";
import { loadPublicKeyring } from "../keyring/keyring.js";
import { KeyringMissingError } from "../keyring/keyringErrors.js";
import { keyringPath } from "../keyring/keyringRead.js";
import { auditKeyId, rawX25519PublicKey, x25519PublicKeyFromRaw } from "../keyring/x25519.js";
import { type Store, waitingAtMost } from "../store/db.js";
import { type StoreFileLost, StoreFiles } from "../store/storeFiles.js";
import { type AuditEvent, assertAuditable } from "./events.js";
import { MAX_EXPORT_LINE_BYTES } from "./exportFile.js";
import { openInOwnSession } from "./ownSession.js";
import {
  type AuditHeader,
  exportLine,
  exportLineLength,
  GENESIS_PREV,
  HeaderWriter,
  headerOf,
  parseHeader,
  recordHash,
  type StoredRecord,
  splitRecord,
} from "./record.js";
import { RecordOpener, SealingSession } from "./seal.js";
import { CHECKPOINT_FORMAT, ChainVerifier, type Checkpoint, type VerifyResult } from "./verify.js";

/**
 * How often, at most, a group's intents wait for the store files' check (checkStoreFiles): a
 * deletion is noticed by the first group at least this long after the previous check.
 */
const STORE_FILES_EVERY_MS = 25;

/**
 * The audit log: one append-only chain in the store (table audit_records,
 * migration 2), written by every gateway process as one linear sequence.
 */

export interface Appended {
  seq: number;
  hash: string;
}

/**
 * What must still hold when a record is written, read under the write lock with the seq the record
 * will have (a run's row records its start's: src/cli/agentRun.ts).
 */
export type AppendCondition = (seq: number) => boolean;

/** An event ready to be sealed, and what must still hold when it is written. */
interface Sealable {
  type: string;
  plaintext: Buffer;
  condition?: AppendCondition | undefined;
  /** a writer session of its own (the approver key pin: src/approval/pin.ts) */
  session?: SealingSession;
  /**
   * a writer session of its own whose ephemeral private key depends on the seq the record takes
   * (known only under the write lock): a catalog revision's record, src/catalog/revisionRecords.ts
   */
  ownSession?: OwnSession | undefined;
}

/**
 * The ephemeral private key of a record's own writer session, given the seq the record takes:
 * derived publicly from what the record is about and that seq, so that a gateway can open that
 * record, and no other (src/audit/ownSession.ts). Each seq is taken once, so no two records share
 * the session's key and nonce.
 */
export type OwnSession = (seq: number) => KeyObject;

export interface AuditLogOptions {
  /** Records sealed under one ephemeral key before a new one is made (default 1024). */
  recordsPerSession?: number;
  /**
   * "full" (default): a record is on disk when append returns (WAL fsync at every
   * commit) — it survives a power loss. "normal": it survives the writer being
   * killed (the OS holds the WAL) but a power loss may drop the last commits; the
   * chain still verifies, and a checkpoint kept elsewhere shows the cut.
   */
  sync?: "full" | "normal";
  /**
   * Told, in one sentence, when the record this writer wrote last was removed from the store or
   * changed in it by another process, as the next commit finds (a gateway says it on stderr).
   */
  onEdited?: (sentence: string) => void;
}

export class AuditLog {
  readonly writerId = ulid();
  private session: SealingSession | null = null;
  /** The header writer of the session last sealed with (its fixed fields checked once). */
  private headers: { session: SealingSession; writer: HeaderWriter } | null = null;
  private clock = { ms: Number.NaN, text: "" };
  private readonly recordsPerSession: number;
  /** The head as this writer left it at its last commit. */
  private last: Appended | null = null;
  /** Told when a record this writer wrote was removed or changed by another process (see head). */
  private readonly onEdited: ((sentence: string) => void) | undefined;
  private readonly head: () => Appended | null;
  /** Inserts a group's records, `seqs[i]` with `records[i]`, a few statements for all of them. */
  private readonly insert: (seqs: number[], records: StoredRecord[]) => void;
  private readonly commit: (items: Sealable[]) => (Appended | null)[];
  /** Commits without waiting for the disk (see appendIf's `relaxed`); the plain commit when sync is "normal". */
  private readonly commitRelaxed: (items: Sealable[]) => (Appended | null)[];
  /** The store's WAL file, opened for syncWal; null until then. */
  private walFd: number | null = null;
  private readonly walPath: string;
  /**
   * True when the log's sync is "full": a caller may then commit `relaxed` and make the records
   * durable with syncWal, off the event loop, instead of an fsync inside the commit.
   */
  readonly canSyncLater: boolean;
  /** The store's file, for sentences that name it. */
  readonly storePath: string;
  /** appendIf's runners for `waitMs`, one per bound asked (see waitingAtMost). */
  private readonly bounded = new Map<number, <T>(write: () => T) => T>();
  private readonly db: Store;
  /** The stored record at a seq (undefined when there is none). */
  private readonly recordAt: (seq: number) => unknown;
  /** The store's files (database, -wal, -shm) as this connection opened them (see checkStoreFiles). */
  private readonly files: StoreFiles;
  /** when checkStoreFiles last made its stats (performance.now()) */
  private filesCheckedAt = -Infinity;

  /** keyring.json as last looked at for a rotated audit key (see followRotation); null: not followed */
  private keyring: { stateDir: string; checkedAt: number; stamp: string } | null = null;

  private constructor(
    db: Store,
    private publicKey: KeyObject,
    public keyId: string,
    opts: AuditLogOptions,
  ) {
    this.recordsPerSession = opts.recordsPerSession ?? 1024;
    // said once per edit, however many times a commit that found it is tried again (a full disk)
    let said = "";
    this.onEdited = opts.onEdited
      ? (sentence) => {
          if (sentence !== said) opts.onEdited?.(sentence);
          said = sentence;
        }
      : undefined;
    this.db = db;
    this.storePath = db.name;
    this.walPath = `${db.name}-wal`;
    this.canSyncLater = opts.sync !== "normal" && !db.memory;
    this.files = StoreFiles.of(db);
    // The record is durable when the transaction commits: WAL with synchronous=FULL
    // fsyncs the log at every commit. openStore sets both; insist on it here.
    db.pragma(opts.sync === "normal" ? "synchronous = NORMAL" : "synchronous = FULL");
    const maxSeq = db.prepare("SELECT max(seq) FROM audit_records").pluck();
    const recordAt = db.prepare("SELECT record FROM audit_records WHERE seq = ?").pluck();
    this.recordAt = (seq) => recordAt.get(seq);
    // One multi-row INSERT per group (up to INSERT_ROWS records a statement) instead of one
    // statement per record: a statement's step, reset and result object cost about as much as the
    // row itself. The statements are prepared once, one per row count, when first needed.
    const inserts: Statement[] = [];
    const insertOf = (rows: number): Statement => {
      let stmt = inserts[rows];
      if (!stmt) {
        const values = Array.from({ length: rows }, () => "(?, ?)").join(", ");
        stmt = db.prepare(`INSERT INTO audit_records (seq, record) VALUES ${values}`);
        inserts[rows] = stmt;
      }
      return stmt;
    };
    const hashAt = (seq: number): string | null => {
      const record = recordAt.get(seq) as Buffer | undefined;
      return Buffer.isBuffer(record) ? recordHash(record) : null;
    };
    this.head = () => {
      const seq = maxSeq.get() as number | null;
      const last = this.last;
      if (!last) return seq === null ? null : { seq, hash: recordHash(recordAt.get(seq) as Buffer) };
      // Records never change: if the head is still the one this writer wrote, its hash is known
      // (a head rewritten by another process then breaks the chain at the next record).
      if (seq === last.seq) return last;
      // This writer's own records are the ones it can vouch for: cut off, or changed while others
      // wrote after them, the next record is chained to the record as this writer wrote it, so
      // that it does not cover the edit and `audit verify` fails at it (editedUnder).
      if (seq === null || seq < last.seq) {
        this.onEdited?.(editedUnder(last.seq, seq ?? 0, "removed"));
        return { seq: seq ?? 0, hash: last.hash };
      }
      if (hashAt(last.seq) !== last.hash) {
        this.onEdited?.(editedUnder(last.seq, seq, "changed"));
        return { seq, hash: last.hash };
      }
      return { seq, hash: recordHash(recordAt.get(seq) as Buffer) };
    };
    const params: (number | StoredRecord)[] = [];
    this.insert = (seqs, records) => {
      for (let from = 0; from < seqs.length; from += INSERT_ROWS) {
        const to = Math.min(seqs.length, from + INSERT_ROWS);
        params.length = 0;
        for (let i = from; i < to; i++) params.push(seqs[i] as number, records[i] as StoredRecord);
        insertOf(to - from).run(params);
      }
      params.length = 0; // (no record kept alive by the reused array)
    };
    const tx = db.transaction((items: Sealable[]) => {
      let head = this.head();
      const seqs: number[] = [];
      const records: StoredRecord[] = [];
      const appended = items.map((it) => {
        // A condition is read here, under the write lock, atomically with the record, told the
        // seq the record takes (inserted below, in this transaction, or rolled back with it).
        if (it.condition && !it.condition((head?.seq ?? 0) + 1)) return null;
        const record = this.link(it, head);
        head = { seq: (head?.seq ?? 0) + 1, hash: recordHash(record) };
        seqs.push(head.seq);
        records.push(record);
        return head;
      });
      // Inserted at the end of the transaction, in seq order: nothing inside it reads them back
      // (the head was read once, at its start), and a failed insert rolls the whole group back.
      this.insert(seqs, records);
      return appended;
    });
    // IMMEDIATE takes the write lock before the head is read: no two writers can
    // extend the same head, so the chain never forks and never skips a number.
    this.commit = (items) => {
      if (this.files.lost) throw this.files.lost;
      const appended = tx.immediate(items);
      for (let i = appended.length - 1; i >= 0; i--) {
        const a = appended[i];
        if (a) {
          this.last = a;
          break;
        }
      }
      return appended;
    };
    if (opts.sync === "normal") this.commitRelaxed = this.commit;
    else {
      // The setting is the connection's: set for one transaction and put back, in this process.
      // Executed each time: a prepared PRAGMA acts when compiled, not at its first run (see
      // waitingAtMost), and prepared so, the first relaxed commit was a full one.
      this.commitRelaxed = (items) => {
        db.exec("PRAGMA synchronous = NORMAL");
        try {
          return this.commit(items);
        } finally {
          db.exec("PRAGMA synchronous = FULL");
        }
      };
    }
  }

  /** Opens the log for writing; throws KeyringMissingError (naming `portcullis init`) without a keyring. */
  static open(db: Store, stateDir: string, opts: AuditLogOptions = {}): AuditLog {
    const keyring = loadPublicKeyring(stateDir);
    if (!keyring) throw new KeyringMissingError(stateDir);
    const log = new AuditLog(db, keyring.publicKey, keyring.keyId, opts);
    log.keyring = { stateDir, checkedAt: performance.now(), stamp: keyringStamp(stateDir) };
    return log;
  }

  /**
   * Opens the log sealing to the audit public key `publicKeyRaw`, not keyring.json's: a key
   * rotation's record is sealed to the audit key it replaces (src/approval/rotation.ts).
   */
  static openSealingTo(db: Store, publicKeyRaw: Uint8Array, opts: AuditLogOptions = {}): AuditLog {
    return new AuditLog(db, x25519PublicKeyFromRaw(publicKeyRaw), auditKeyId(publicKeyRaw), opts);
  }

  /**
   * Makes every record committed so far durable, as a commit with sync "full" would have: an
   * fdatasync of the store's WAL file (the file SQLite's full commit syncs; fdatasync writes its
   * frames and its size, all a commit needs on disk, where SQLite's own call, fsync, also writes
   * its timestamps; it covers the file through any descriptor), in libuv's thread pool so the
   * event loop keeps running meanwhile. `done` gets the error when it fails: the records may then
   * not be on disk.
   */
  syncWal(done: (err: Error | null) => void): void {
    const fd = this.walDescriptor(done);
    if (fd !== null) fdatasync(fd, (err) => done(err));
  }

  /**
   * syncWal on the event loop: returns once the records committed so far are on disk, throws
   * when they may not be. For a lone intent with nothing else to do meanwhile, where the hop to
   * the thread pool and back costs more than it lets the loop do.
   */
  syncWalNow(): void {
    let failed: Error | null = null;
    const fd = this.walDescriptor((e) => {
      failed = e;
    });
    if (failed) throw failed;
    if (fd !== null) fdatasyncSync(fd);
  }

  private walDescriptor(fail: (err: Error) => void): number | null {
    try {
      this.walFd ??= openSync(this.walPath, "r");
      return this.walFd;
    } catch (e) {
      fail(e as Error);
      return null;
    }
  }

  /**
   * Whether the store's files (the database, its -wal and -shm) are still the ones this connection
   * writes through (src/store/storeFiles.ts: one stat of each): null if so, else the loss, which every append
   * throws from then on. A gateway asks before each group that holds an intent and on its
   * heartbeat: an intent is claimed durable only while they are. The stats are made at most
   * once every STORE_FILES_EVERY_MS: two stats cost 15–17 µs on a virtual machine, which at one
   * call at a time was a sixth of the audit's whole work per call (bench/audit-hot); the third,
   * of the database file, is not felt per call behind that limit. `now`: check
   * whatever the time since the last (a gateway's end, before its last records).
   */
  checkStoreFiles(opts: { now?: boolean } = {}): StoreFileLost | null {
    const now = performance.now();
    if (!opts.now && now - this.filesCheckedAt < STORE_FILES_EVERY_MS) return this.files.lost;
    this.filesCheckedAt = now;
    return this.files.check();
  }

  /** The loss checkStoreFiles found, or null. */
  get lost(): StoreFileLost | null {
    return this.files.lost;
  }

  /** Closes the WAL descriptor syncWal opened (the store itself is closed by its owner). */
  close(): void {
    if (this.walFd !== null) closeSync(this.walFd);
    this.walFd = null;
  }

  /** Appends one event; durable when it returns, throws (writing nothing) on failure. */
  append(e: AuditEvent): Appended {
    return this.appendMany([e])[0]!;
  }

  /** Appends several events in one transaction (group commit): all are written, or none. */
  appendMany(events: readonly AuditEvent[]): Appended[] {
    return this.appendIf(events.map((event) => ({ event }))) as Appended[];
  }

  /**
   * Appends in one transaction, like appendMany, except that an event with a `condition` is
   * written only if the condition holds when its turn comes, inside the transaction and under
   * the write lock: null in its place otherwise. What a record says was true when it was written.
   *
   * `relaxed`: the transaction commits without an fsync even when the log's sync is "full" (as
   * with "normal": the records survive this process being killed, not a power loss before the
   * next full commit, whose fsync covers them too). For records nothing waits on, e.g. a call's
   * result written after the result was forwarded; never for an intent.
   *
   * `waitMs`: wait at most that long for another process's lock on the store (instead of the
   * connection's busy timeout), failing busy after it; for a caller that keeps the events and
   * tries again later.
   */
  appendIf(
    items: readonly { event: AuditEvent; condition?: AppendCondition; ownSession?: OwnSession | undefined }[],
    opts: { relaxed?: boolean; waitMs?: number } = {},
  ): (Appended | null)[] {
    const sealable = items.map(({ event, condition, ownSession }): Sealable => {
      assertAuditable(event);
      const plaintext = Buffer.from(JSON.stringify(event), "utf8");
      return { type: event.type, plaintext, condition, ownSession };
    });
    if (sealable.length === 0) return [];
    const commit = opts.relaxed ? this.commitRelaxed : this.commit;
    if (opts.waitMs === undefined) return commit(sealable);
    let bounded = this.bounded.get(opts.waitMs);
    if (!bounded) {
      bounded = waitingAtMost(this.db, opts.waitMs);
      this.bounded.set(opts.waitMs, bounded);
    }
    return bounded(() => commit(sealable));
  }

  /**
   * Appends one event sealed in a writer session of its own, whose ephemeral private key the
   * caller gives: how an approver key is pinned (its session key is derived publicly from the
   * key it names, so that gateways, which cannot open sealed records, can check the pin).
   */
  appendInOwnSession(e: AuditEvent, ephemeralPrivate: KeyObject): Appended {
    return this.appendInOwnSessionIf(e, ephemeralPrivate)!;
  }

  /**
   * appendInOwnSession, written only if `condition` holds when read under the write lock (null
   * when it does not): for a record that must not be written twice by two processes at once.
   */
  appendInOwnSessionIf(
    e: AuditEvent,
    ephemeralPrivate: KeyObject,
    condition?: AppendCondition,
  ): Appended | null {
    assertAuditable(e);
    // A fresh look at the store's files, not the cached loss commit() reads: these records (an
    // approver key's or a passkey's pin, a removal) are written by the console or a command after
    // an await (a key derivation, a passkey's verification), long after the request's own check.
    this.files.assertKept();
    const session = SealingSession.start(this.publicKey, ephemeralPrivate);
    try {
      const plaintext = Buffer.from(JSON.stringify(e), "utf8");
      return this.commit([{ type: e.type, plaintext, session, condition }])[0] ?? null;
    } finally {
      session.close();
    }
  }

  /**
   * Inside the write transaction: the record on top of `head` (linked by the hash of
   * the head's bytes, whatever they hold), to be inserted as seq head.seq + 1.
   */
  private link(it: Sealable, head: Appended | null): StoredRecord {
    const own = it.ownSession
      ? SealingSession.start(this.publicKey, it.ownSession((head?.seq ?? 0) + 1))
      : null;
    try {
      return this.sealIn(it.session ?? own ?? this.sealingSession(), it, head);
    } finally {
      own?.close();
    }
  }

  private sealIn(session: SealingSession, it: Sealable, head: Appended | null): StoredRecord {
    let headers = this.headers;
    if (headers?.session !== session) {
      const fixed = { epk: session.epk, key: this.keyId, writer: this.writerId, pid: process.pid };
      headers = { session, writer: new HeaderWriter(fixed) };
      this.headers = headers;
    }
    const nonce = session.nextNonce();
    const header = headers.writer.text(
      (head?.seq ?? 0) + 1,
      head?.hash ?? GENESIS_PREV,
      this.now(),
      it.type,
      nonce.toString("base64url"),
    );
    return session.sealRecord(nonce, header, it.plaintext);
  }

  /**
   * The event of the record at `seq` when it was sealed, to the audit key this log seals to now,
   * in the writer session of its own whose ephemeral private key is `esk` (see OwnSession), its
   * header naming that seq and the event's type; else null. How a gateway, which cannot open the
   * chain, reads the one record a catalog revision's row points to.
   */
  openOwn(seq: number, esk: KeyObject): Record<string, unknown> | null {
    const record = this.recordAt(seq);
    if (!Buffer.isBuffer(record)) return null;
    const opened = openInOwnSession(record, esk, this.publicKey);
    if (!opened || opened.header.seq !== seq || opened.event.type !== opened.header.type) return null;
    return opened.event;
  }

  /** The time for a header: the same text for every record of one millisecond (made once). */
  private now(): string {
    const ms = Date.now();
    if (ms !== this.clock.ms) this.clock = { ms, text: new Date(ms).toISOString() };
    return this.clock.text;
  }

  /**
   * A writer opened before a key rotation (a running gateway) seals to the new audit key from its
   * next record on: keyring.json is looked at (one stat) at most once a second, and when it was
   * rewritten and names another audit key that replaced this writer's (the key in use is among its
   * earlier ones: a rotation of this keyring, src/keyring/rotate.ts), a new session is sealed to
   * it. A keyring.json swapped for an unrelated one is not followed: the writer goes on as it began.
   */
  private followRotation(): void {
    const k = this.keyring;
    if (!k) return;
    const now = performance.now();
    if (now - k.checkedAt < KEYRING_EVERY_MS) return;
    k.checkedAt = now;
    const stamp = keyringStamp(k.stateDir);
    if (stamp === k.stamp) return;
    k.stamp = stamp;
    let keyring: ReturnType<typeof loadPublicKeyring>;
    try {
      keyring = loadPublicKeyring(k.stateDir);
    } catch {
      return;
    }
    if (!keyring || keyring.keyId === this.keyId) return;
    if (!keyring.earlierAudits.some((raw) => auditKeyId(raw) === this.keyId)) return;
    this.publicKey = keyring.publicKey;
    this.keyId = keyring.keyId;
    this.session?.close();
    this.session = null;
  }

  private sealingSession(): SealingSession {
    this.followRotation();
    if (!this.session || this.session.sealed >= this.recordsPerSession) {
      this.session?.close();
      this.session = SealingSession.start(this.publicKey);
    }
    return this.session;
  }
}

/** How often, at most, a writer looks whether keyring.json changed (followRotation). */
const KEYRING_EVERY_MS = 1000;

/** keyring.json's identity as stat says it (inode, size, modification time): a rewrite changes it. */
function keyringStamp(stateDir: string): string {
  try {
    const st = statSync(keyringPath(stateDir));
    return `${st.ino}:${st.size}:${st.mtimeMs}`;
  } catch {
    return "";
  }
}

/**
 * What a writer says when its last record (`seq`) is gone or changed; `head` is the store's head
 * as the next commit found it, on which that commit's record is put, chained to the original.
 */
function editedUnder(seq: number, head: number, how: "removed" | "changed"): string {
  const what =
    how === "removed"
      ? `record ${seq}, which this gateway wrote, is no longer in the store (its audit log now ends at seq ${head}): another process removed records from it`
      : `record ${seq}, which this gateway wrote, was changed in the store by another process (or removed and written anew)`;
  return `audit: ${what}. The next record (seq ${head + 1}) is chained to the record as this gateway wrote it, so that it does not vouch for the edit: \`portcullis audit verify\` reports the chain broken at seq ${head + 1}`;
}

/** Records per multi-row INSERT, at most (2 parameters each, far below SQLite's limit). */
const INSERT_ROWS = 16;

/** Records read per query by storedChunks, at most; and about how many bytes. */
const CHUNK_RECORDS = 1024;
const CHUNK_BYTES = 8 << 20;
/** How much of the store file whole-log reads may map instead of copying (SQLite's mmap_size). */
const READ_MMAP_BYTES = 1 << 30;

/**
 * Every stored record in seq order, a chunk at a time (what a verifier, an export or a view reads).
 *
 * Why not one SELECT: handing a row to JavaScript costs more than hashing it, so SQLite
 * concatenates a chunk's records into one blob (group_concat keeps a blob's bytes; CAST back to
 * BLOB returns them unchanged) beside their byte lengths, and each record is a view into that
 * blob. The aggregates take the rows in the order of the subquery that feeds them (an ORDER BY
 * inside them would sort again, at twice the cost); were it ever otherwise, a verifier would
 * report a record out of place: a false alarm, never a fault hidden. A chunk starts after the
 * last seq read, so a gap in the numbering is left for the verifier to find. Records appended
 * meanwhile may or may not be included.
 *
 * The connection reads through a memory map from then on (a whole pass does not fit SQLite's
 * page cache, and copying pages costs more than hashing them). Only commands that read the whole
 * log do this; a gateway never does.
 */
export function* storedChunks(db: Store): Generator<StoredRecord[]> {
  const chunk = db
    .prepare(
      `SELECT CAST(group_concat(record, X'') AS BLOB), group_concat(octet_length(record), ','), max(seq)
         FROM (SELECT seq, record FROM audit_records WHERE seq > ? ORDER BY seq LIMIT ?)`,
    )
    .raw();
  if ((db.pragma("mmap_size", { simple: true }) as number) < READ_MMAP_BYTES) {
    db.pragma(`mmap_size = ${READ_MMAP_BYTES}`);
  }
  let after = Number.MIN_SAFE_INTEGER;
  // Records are not all alike (a catalog_revised event holds a whole inventory): the count per
  // query follows the bytes, so that a chunk stays near CHUNK_BYTES.
  let limit = CHUNK_RECORDS;
  for (;;) {
    let row: [Buffer | null, string | null, number | null];
    try {
      row = chunk.get(after, limit) as typeof row;
    } catch (err) {
      // Over SQLite's length limit: fewer at a time (one record alone always fits: it was stored).
      if ((err as { code?: string }).code !== "SQLITE_TOOBIG" || limit === 1) throw err;
      limit = Math.max(1, limit >> 2);
      continue;
    }
    const [bytes, lengths, last] = row;
    if (bytes === null || lengths === null || last === null) return;
    const records: StoredRecord[] = [];
    let at = 0;
    for (const n of lengths.split(",")) {
      const end = at + Number(n);
      records.push(bytes.subarray(at, end));
      at = end;
    }
    yield records;
    after = last;
    const perRecord = bytes.length / records.length;
    limit = Math.max(1, Math.min(CHUNK_RECORDS, Math.floor(CHUNK_BYTES / perRecord)));
  }
}

/** Every stored record in seq order (see storedChunks). */
export function* storedRecords(db: Store): Generator<StoredRecord> {
  for (const chunk of storedChunks(db)) yield* chunk;
}

/** Verifies the stored chain (see verifyChain). */
export function verifyStore(
  db: Store,
  opts: { checkpoint?: Checkpoint; progress?: (records: number) => void } = {},
): VerifyResult {
  const v = new ChainVerifier(opts.checkpoint);
  outer: for (const chunk of storedChunks(db)) {
    for (const r of chunk) if (!v.push(r) && !v.wantsNext) break outer;
    opts.progress?.(v.records);
  }
  return v.result();
}

/** The log as JSONL lines of ciphertext records (no key needed, nothing decrypted). */
export function* exportRecords(db: Store, maxLine = MAX_EXPORT_LINE_BYTES): Generator<string> {
  for (const r of storedRecords(db)) {
    // checked before the line is made: making it would throw V8's "Cannot create a string longer…"
    const length = exportLineLength(r);
    if (length !== null && length > maxLine) {
      const seq = parseHeader(headerOf(r) ?? "")?.seq ?? Number.NaN;
      throw new RecordTooLongToExportError(seq, length, maxLine);
    }
    yield exportLine(r);
  }
}

/**
 * The first stored record whose export line would be longer than `maxLine`, or null: a query of
 * the records' lengths (SQLite reads a blob's length without its bytes), then the exact length of
 * the few long enough to be suspects. For `audit export` to refuse such a log before writing a
 * line, rather than fail halfway and leave what it wrote looking like an export.
 */
export function firstRecordTooLongToExport(
  db: Store,
  maxLine = MAX_EXPORT_LINE_BYTES,
): RecordTooLongToExportError | null {
  // a line is at most 4/3 of its record's bytes plus the fixed text around them (under 128)
  const suspect = Math.max(0, Math.floor(((maxLine - 128) * 3) / 4));
  const rows = db
    .prepare("SELECT seq FROM audit_records WHERE length(record) > ? ORDER BY seq")
    .pluck()
    .iterate(suspect) as IterableIterator<number>;
  const recordAt = db.prepare("SELECT record FROM audit_records WHERE seq = ?").pluck();
  for (const seq of rows) {
    const length = exportLineLength(recordAt.get(seq) as Buffer);
    if (length !== null && length > maxLine) return new RecordTooLongToExportError(seq, length, maxLine);
  }
  return null;
}

/** A record whose export line would be longer than an export line can be (MAX_EXPORT_LINE_BYTES). */
export class RecordTooLongToExportError extends Error {
  override name = "RecordTooLongToExportError";
  constructor(
    readonly seq: number,
    /** its export line's length */
    readonly length: number,
    readonly limit: number,
  ) {
    super(
      `record seq ${seq} cannot be exported: its line would be ${length.toLocaleString("en-US")} bytes, longer than ${limit.toLocaleString("en-US")}, the longest line an audit export can hold`,
    );
  }
}

export class AuditChainError extends Error {
  override name = "AuditChainError";
  constructor(
    readonly seq: number,
    readonly problem: string,
  ) {
    super(`the audit chain is broken at seq ${seq}: ${problem}`);
  }
}

/** Verifies the stored chain, then describes its head; throws AuditChainError if the chain is broken. */
export function makeCheckpoint(db: Store): Checkpoint {
  const result = verifyStore(db);
  if (!result.ok) throw new AuditChainError(result.seq, result.problem);
  const cp: Checkpoint = {
    format: CHECKPOINT_FORMAT,
    seq: result.head.seq,
    hash: result.head.hash,
    time: new Date().toISOString(),
  };
  const last = db.prepare("SELECT record FROM audit_records WHERE seq = ?").pluck().get(result.head.seq) as
    | Buffer
    | undefined;
  const header = last && headerOf(last);
  const key = header && parseHeader(header)?.key;
  if (key) cp.key = key;
  return cp;
}

export interface OpenedRecord {
  seq: number;
  hash: string;
  header: AuditHeader;
  event: AuditEvent;
}

export class AuditOpenError extends Error {
  override name = "AuditOpenError";
  constructor(
    message: string,
    /** the record's seq, when its header could be read */
    readonly seq: number | null = null,
  ) {
    super(message);
  }
}

/**
 * Opens records one at a time with the keyring's audit key (and those a key rotation replaced):
 * `open` throws AuditOpenError naming the seq when a record is sealed to another key, does not
 * authenticate, or holds an event of another type than its header's. A caller that shows what it
 * can (the console's Audit page) goes on past such a record; the derived key of each writer
 * session is kept for the next record of that session either way.
 */
export class AuditRecordOpener {
  private readonly openers: Map<string, RecordOpener>;
  /** the id of the keyring's audit key (the first given) */
  readonly keyId: string;
  private readonly several: boolean;

  constructor(privateKey: KeyObject | readonly KeyObject[]) {
    // the keyring's audit key first, then those a key rotation replaced (UnlockedKeyring.earlierAuditKeys)
    const keys = Array.isArray(privateKey) ? (privateKey as readonly KeyObject[]) : [privateKey as KeyObject];
    this.openers = new Map(keys.map((k) => [auditKeyId(rawX25519PublicKey(k)), new RecordOpener(k)]));
    this.keyId = auditKeyId(rawX25519PublicKey(keys[0]!));
    this.several = keys.length > 1;
  }

  open(record: StoredRecord): OpenedRecord {
    const parts = splitRecord(record);
    const header = parts && parseHeader(parts.header);
    if (!parts || !header) throw new AuditOpenError("a record does not have a v1 header");
    const { seq } = header;
    const opener = this.openers.get(header.key);
    if (!opener) {
      throw new AuditOpenError(
        `record ${seq} is sealed to audit key ${header.key}, not to this keyring's ${this.keyId}${this.several ? " nor to one it replaced" : ""}`,
        seq,
      );
    }
    let event: AuditEvent;
    try {
      event = JSON.parse(opener.open(header.epk, header.nonce, parts.header, parts.sealed).toString("utf8"));
    } catch {
      throw new AuditOpenError(
        `record ${seq} does not open with the audit key (modified or forged payload)`,
        seq,
      );
    }
    if (event?.type !== header.type) {
      throw new AuditOpenError(
        `record ${seq}: the sealed event type differs from the header's ${header.type}`,
        seq,
      );
    }
    return { seq, hash: recordHash(record), header, event };
  }
}

/**
 * Decrypts the stored records in order. Throws AuditOpenError naming the seq when a
 * record is sealed to another key or does not authenticate. Verify the chain first:
 * decryption proves a record was sealed to the audit key, not that it belongs where it is.
 */
export function* openRecords(
  db: Store,
  privateKey: KeyObject | readonly KeyObject[],
  records?: Iterable<StoredRecord>,
): Generator<OpenedRecord> {
  const opener = new AuditRecordOpener(privateKey);
  for (const record of records ?? storedRecords(db)) yield opener.open(record);
}
