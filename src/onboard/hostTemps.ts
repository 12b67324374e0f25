/**
 * The temporary files writeAtomic writes beside a host file (or a wrap record) before renaming
 * them over it, and which of them a killed wrap left behind. Each holds a copy of the host file
 * and nothing reads it (wrap reads host files by name, records by `.json`).
 *
 * A file's name says which process wrote it: `.NAME.portcullis-PID-STAMP.tmp`, STAMP a digest of
 * that process's start time, so a pid taken since by another process (a long-lived daemon, the
 * next boot's) is not taken for the writer, the way the keyring's rewrite lock names its holder
 * (src/util/ownedLock.ts). A pid alone kept such a file for as long as the other process lived.
 */
import { createHash } from "node:crypto";
import { lstatSync, readdirSync, unlinkSync } from "node:fs";
import { basename, join } from "node:path";
import { processStartTime } from "../identity/proc.js";
import { processExists } from "../util/processExists.js";

/**
 * How old a temporary file must be before it may be left over: a write takes milliseconds, and a
 * process this one cannot see (another PID namespace sharing the directory) may be writing a
 * young one.
 */
export const STALE_TEMP_MS = 10 * 60_000;

/** A digest of the start time of process `pid`, or null when it cannot be read (gone, another OS). */
export function writerStamp(pid: number): string | null {
  const start = processStartTime(pid);
  return start === null ? null : createHash("sha256").update(start).digest("hex").slice(0, 12);
}

/** The temporary file this process writes `file`'s new text into. */
export function tempPathFor(file: string, dir: string): string {
  const stamp = writerStamp(process.pid);
  const writer = stamp === null ? `${process.pid}` : `${process.pid}-${stamp}`;
  return join(dir, `.${basename(file)}.portcullis-${writer}.tmp`);
}

/**
 * Whether the process that wrote a temporary file named by `pid` and `stamp` may still rename it:
 * its pid names a process with the start time the stamp records. A name without a stamp (written
 * by an earlier portcullis, or where start times cannot be read) says nothing past the pid, which
 * may be reused: such a file is judged by its age alone.
 */
function writerLive(pid: number, stamp: string | undefined): boolean {
  if (stamp === undefined) return false;
  if (!processExists(pid)) return false;
  return writerStamp(pid) === stamp;
}

/**
 * Removes the temporary files beside `file` that no live wrap is writing: older than
 * STALE_TEMP_MS and their writer (pid and start time) no longer running. This process's own are
 * never touched.
 */
export function removeStaleTemps(file: string, dir: string): void {
  const prefix = `.${basename(file)}.portcullis-`;
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return;
  }
  for (const name of names) {
    if (!name.startsWith(prefix)) continue;
    const m = /^(\d{1,10})(?:-([0-9a-f]{12}))?\.tmp$/.exec(name.slice(prefix.length));
    if (m === null) continue;
    const pid = Number(m[1]);
    if (pid === process.pid || writerLive(pid, m[2])) continue;
    const path = join(dir, name);
    try {
      const st = lstatSync(path);
      if (st.isFile() && Date.now() - st.mtimeMs > STALE_TEMP_MS) unlinkSync(path);
    } catch {
      // gone meanwhile, or not ours to remove: left as it is
    }
  }
}
