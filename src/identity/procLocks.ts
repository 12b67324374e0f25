// The processes holding a lock on a file, as Linux lists POSIX record locks in /proc/locks (the
// locks SQLite takes on a store and its -shm). For doctor's advice on a store another process
// keeps locked; empty elsewhere (macOS has no such list), and never a decision.
import { statSync } from "node:fs";
import { readProcFile } from "./procRead.js";

/** The pids (other than this process's) holding a lock on any of `files`; [] when none is listed. */
export function lockHolders(files: string[]): number[] {
  const text = readProcFile("/proc/locks");
  if (text === null) return [];
  const inodes = new Set<string>();
  for (const f of files) {
    try {
      const st = statSync(f, { throwIfNoEntry: false });
      if (st) inodes.add(String(st.ino));
    } catch {
      // a file this user may not reach holds no lock it could name
    }
  }
  const pids = new Set<number>();
  for (const line of text.split("\n")) {
    // "1: POSIX  ADVISORY  WRITE 4242 08:01:1234567 0 EOF"; a blocked request is "1: -> POSIX …";
    // an open file description's lock (OFDLCK) has pid -1
    const m = /^\d+:\s+(?:->\s+)?\S+\s+\S+\s+\S+\s+(-?\d+)\s+[0-9a-f]+:[0-9a-f]+:(\d+)\s/.exec(line);
    if (!m || !inodes.has(m[2]!)) continue;
    const pid = Number(m[1]);
    if (pid > 0 && pid !== process.pid) pids.add(pid);
  }
  return [...pids];
}
