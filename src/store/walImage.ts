// The store as SQLite reads it, built in memory from the database file and its write-ahead log
// without the -shm index: what a command that only reads reads where that index cannot be made
// (a full disk, a file size limit below its 32 KiB) and the -wal holds records the file alone
// lacks. It does what SQLite's recovery does when it rebuilds the index (walIndexRecover in
// sqlite3's wal.c, the format in https://www.sqlite.org/fileformat2.html#walformat): the frames
// are read in order while their salts match the header's and their running checksum holds; the
// pages of the frames up to the last commit frame are the store's newest, the commit frame's
// size is the store's size in pages. Nothing is written, no lock taken.

const HEADER = 32;
const FRAME_HEADER = 24;
const MAGIC = 0x377f0682; // the low bit says the checksums' byte order (1: big-endian)
const FORMAT = 3007000;

/**
 * The database as the committed frames of `wal` leave it over `db` (the file's bytes), or `db`
 * itself when the log holds no valid committed frame (SQLite then reads the file alone too).
 * Null when the log's pages are not the file's size (neither can be read with the other).
 */
export function withLogApplied(db: Buffer, wal: Buffer): Buffer | null {
  if (wal.length < HEADER) return db;
  const magic = wal.readUInt32BE(0);
  if ((magic & ~1) >>> 0 !== MAGIC || wal.readUInt32BE(4) !== FORMAT) return db;
  const pageSize = wal.readUInt32BE(8);
  if (pageSize < 512 || pageSize > 65536 || (pageSize & (pageSize - 1)) !== 0) return db;
  const bigEndian = (magic & 1) === 1;
  let sum = checksum(wal, 0, 24, [0, 0], bigEndian);
  if (sum[0] !== wal.readUInt32BE(24) || sum[1] !== wal.readUInt32BE(28)) return db;
  const salt1 = wal.readUInt32BE(16);
  const salt2 = wal.readUInt32BE(20);

  // page number -> offset of its newest committed frame's page; the pages of a transaction not
  // committed yet wait in `pending`
  const committed = new Map<number, number>();
  let pending: [number, number][] = [];
  let pages = 0;
  for (let at = HEADER; at + FRAME_HEADER + pageSize <= wal.length; at += FRAME_HEADER + pageSize) {
    const page = wal.readUInt32BE(at);
    if (page === 0 || wal.readUInt32BE(at + 8) !== salt1 || wal.readUInt32BE(at + 12) !== salt2) break;
    sum = checksum(wal, at, 8, sum, bigEndian);
    sum = checksum(wal, at + FRAME_HEADER, pageSize, sum, bigEndian);
    if (sum[0] !== wal.readUInt32BE(at + 16) || sum[1] !== wal.readUInt32BE(at + 20)) break;
    pending.push([page, at + FRAME_HEADER]);
    const commitSize = wal.readUInt32BE(at + 4);
    if (commitSize !== 0) {
      for (const [p, offset] of pending) committed.set(p, offset);
      pending = [];
      pages = commitSize;
    }
  }
  if (pages === 0) return db;
  if (db.length >= 100 && filePageSize(db) !== pageSize) return null;
  const image = Buffer.alloc(pages * pageSize);
  db.copy(image, 0, 0, Math.min(db.length, image.length));
  for (const [page, offset] of committed)
    if (page <= pages) wal.copy(image, (page - 1) * pageSize, offset, offset + pageSize);
  return image;
}

/** The page size the database file's header gives (bytes 16-17; 1 stands for 65536). */
function filePageSize(db: Buffer): number {
  const size = db.readUInt16BE(16);
  return size === 1 ? 65536 : size;
}

/**
 * SQLite's running checksum of the log (walChecksumBytes): over 32-bit words in pairs, read in
 * the byte order the log's magic names, from `seed`.
 */
function checksum(
  buf: Buffer,
  start: number,
  length: number,
  seed: [number, number],
  bigEndian: boolean,
): [number, number] {
  let [s1, s2] = seed;
  for (let i = start; i < start + length; i += 8) {
    const a = bigEndian ? buf.readUInt32BE(i) : buf.readUInt32LE(i);
    const b = bigEndian ? buf.readUInt32BE(i + 4) : buf.readUInt32LE(i + 4);
    s1 = (s1 + a + s2) >>> 0;
    s2 = (s2 + b + s1) >>> 0;
  }
  return [s1, s2];
}
