// The store read with its -wal applied in memory (src/store/walImage.ts), for a reader that
// cannot make the -shm index (a full disk, a file size limit) must read what SQLite reads: the
// same rows for a -wal cut at every frame and inside frames (a crash mid-append), one whose
// frame was damaged (its checksum no longer holds: SQLite stops there), and one of another
// store's salts. SQLite itself reads each copy, beside, as the answer.
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { withLogApplied } from "../../src/store/walImage.js";

const PAGE = 4096;
const FRAME = 24 + PAGE;

/** A WAL store's file and its -wal after `commits` transactions, never checkpointed. */
function walStore(commits: number): { db: Buffer; wal: Buffer } {
  const dir = mkdtempSync(join(tmpdir(), "pc-wal-image-"));
  const path = join(dir, "s.db");
  const db = new Database(path);
  db.pragma("journal_mode = WAL");
  db.pragma("wal_autocheckpoint = 0");
  db.exec("CREATE TABLE t (n INTEGER, body TEXT)");
  const add = db.prepare("INSERT INTO t VALUES (?, ?)");
  for (let c = 0; c < commits; c++)
    db.transaction(() => {
      for (let i = 0; i < 1 + (c % 4) * 3; i++) add.run(c, "x".repeat(300 + 97 * i));
    })();
  // read while the connection is open: closing would checkpoint the log into the file
  const files = { db: readFileSync(path), wal: readFileSync(`${path}-wal`) };
  db.close();
  return files;
}

/** What a database image holds: its rows, or SQLite's error. */
function rowsOf(image: Buffer): string {
  const bytes = Buffer.from(image);
  if (bytes.length >= 20) bytes[18] = bytes[19] = 1;
  try {
    const db = new Database(bytes, { readonly: true });
    return JSON.stringify(db.prepare("SELECT n, length(body) FROM t ORDER BY rowid").raw().all());
  } catch (e) {
    return `error: ${(e as Error).message}`;
  }
}

/** What SQLite reads from the file and this -wal, copied beside each other. */
function sqliteReads(db: Buffer, wal: Buffer): string {
  const dir = mkdtempSync(join(tmpdir(), "pc-wal-sqlite-"));
  writeFileSync(join(dir, "s.db"), db);
  writeFileSync(join(dir, "s.db-wal"), wal);
  try {
    const conn = new Database(join(dir, "s.db"), { readonly: true });
    const rows = conn.prepare("SELECT n, length(body) FROM t ORDER BY rowid").raw().all();
    conn.close();
    return JSON.stringify(rows);
  } catch (e) {
    return `error: ${(e as Error).message}`;
  }
}

describe("a store read with its -wal applied in memory", () => {
  it("holds what SQLite reads, the -wal cut at each frame and inside frames", () => {
    const { db, wal } = walStore(12);
    const frames = (wal.length - 32) / FRAME;
    expect(frames).toBeGreaterThan(12);
    const cuts = [0, 31, 32, 100];
    for (let f = 1; f <= frames; f++) cuts.push(32 + f * FRAME, 32 + f * FRAME - 1, 32 + f * FRAME - PAGE);
    let differentRows = new Set<string>();
    for (const cut of cuts) {
      const log = wal.subarray(0, cut);
      const mine = rowsOf(withLogApplied(db, log)!);
      expect({ cut, rows: mine }).toEqual({ cut, rows: sqliteReads(db, log) });
      differentRows = differentRows.add(mine);
    }
    // each commit seen (and the table not created yet, before the first)
    expect(differentRows.size).toBe(12 + 2);
  });

  it("stops where SQLite stops: a damaged frame, or frames of another log's salts", () => {
    const { db, wal } = walStore(6);
    const damaged = Buffer.from(wal);
    const inside = 32 + 5 * FRAME + 24 + 2000; // inside the sixth frame's page
    damaged.writeUInt8(damaged.readUInt8(inside) ^ 0xff, inside);
    expect(rowsOf(withLogApplied(db, damaged)!)).toBe(sqliteReads(db, damaged));
    const salted = Buffer.from(wal);
    salted.writeUInt32BE((salted.readUInt32BE(32 + 4 * FRAME + 8) ^ 1) >>> 0, 32 + 4 * FRAME + 8);
    expect(rowsOf(withLogApplied(db, salted)!)).toBe(sqliteReads(db, salted));
    expect(rowsOf(withLogApplied(db, damaged)!)).not.toBe(rowsOf(withLogApplied(db, wal)!));
    // a header whose checksum does not hold: the log is ignored, the file alone read
    const header = Buffer.from(wal);
    header.writeUInt8(header.readUInt8(12) ^ 1, 12);
    expect(withLogApplied(db, header)).toBe(db);
  });
});
