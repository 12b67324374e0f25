// The processes holding a store's write lock, as Linux lists POSIX record locks in /proc/locks.
// For doctor's advice on a store another process keeps locked; empty elsewhere (macOS has no such
// list), and never a decision.
import { statSync } from "node:fs";
import { readProcFile } from "./procRead.js";

/**
 * SQLite's write lock on a store in WAL mode: an exclusive lock on byte 120 of its -shm file
 * (WALINDEX_LOCK_OFFSET + WAL_WRITE_LOCK). Every connection, a gateway idle for hours included,
 * holds shared locks on the -shm (byte 128) and on the database file for as long as it is open:
 * only this byte says who writes.
 */
const WAL_WRITE_LOCK_BYTE = 120;
/** In rollback-journal mode: the RESERVED byte of the database file, locked exclusively by a writer. */
const RESERVED_BYTE = 0x40000001;

/**
 * The pids (other than this process's) holding the write lock of the store at `db`: an exclusive
 * lock on the -shm's write byte, or on the database file's RESERVED byte; [] when none is listed.
 */
export function lockHolders(db: string): number[] {
  const text = readProcFile("/proc/locks");
  if (text === null) return [];
  const ino = (f: string): string | null => {
    try {
      const st = statSync(f, { throwIfNoEntry: false });
      return st ? String(st.ino) : null;
    } catch {
      return null; // a file this user may not reach holds no lock it could name
    }
  };
  const writeByte = new Map<string, number>();
  const shm = ino(`${db}-shm`);
  const file = ino(db);
  if (shm !== null) writeByte.set(shm, WAL_WRITE_LOCK_BYTE);
  if (file !== null) writeByte.set(file, RESERVED_BYTE);
  const pids = new Set<number>();
  for (const line of text.split("\n")) {
    // "1: POSIX  ADVISORY  WRITE 4242 08:01:1234567 120 120"; a blocked request is "1: -> POSIX …"
    // (not held, skipped); an open file description's lock (OFDLCK) has pid -1; the end may be EOF
    const m = /^\d+:\s+(\S+)\s+\S+\s+(\S+)\s+(-?\d+)\s+[0-9a-f]+:[0-9a-f]+:(\d+)\s+(\d+)\s+(\d+|EOF)/.exec(
      line,
    );
    if (!m || m[1] === "->" || m[2] !== "WRITE") continue;
    const byte = writeByte.get(m[4]!);
    if (byte === undefined) continue;
    const start = Number(m[5]);
    const end = m[6] === "EOF" ? Number.POSITIVE_INFINITY : Number(m[6]);
    if (byte < start || byte > end) continue;
    const pid = Number(m[3]);
    if (pid > 0 && pid !== process.pid) pids.add(pid);
  }
  return [...pids];
}
