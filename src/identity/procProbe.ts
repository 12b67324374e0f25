// The replacement check's cheap look at the processes settled for an epoch, on the forwarding
// path: descriptors held open and re-read in place.
import { openSync, readSync } from "node:fs";
import {
  closeQuietly,
  dead,
  parseProcStat,
  processStartTime,
  readStat,
  type StatLine,
  validPid,
} from "./procRead.js";

/** What the probe reads of a live process: its start time and (Linux) its image (StatLine). */
export interface Probed {
  startTime: string;
  image: string | null;
  /** in the middle of an execve: its image is not known yet (StatLine.execing) */
  execing: boolean;
}

/**
 * Start times and images of a fixed set of processes, read cheaply on the forwarding path. On
 * Linux each /proc/PID/stat stays open and is re-read in place (one pread instead of
 * open, read, read, close); the line is produced at each read, so it shows what the process
 * runs now, after an execve too. The open file belongs to that process, not to its pid
 * number: once the process is gone the read fails (ESRCH), also when the pid has
 * been reused, so a held descriptor can only make the check stricter. Elsewhere:
 * processStartTime, and no image.
 */
export class StartTimeProbe {
  private set: object | null = null;
  private readonly fds = new Map<number, number | null>();
  private readonly buf = Buffer.allocUnsafe(4096);
  /**
   * Per process: /proc/PID/environ held open since a full read, and what that read gave. The
   * descriptor stays bound to the memory the process had when it was opened: while one byte can
   * be read from it, that memory is still the process's (an execve gives a process new memory,
   * and the old one reads as empty; so does the memory of a process that is gone), so its start
   * time and image are still what the full read gave, and the stat line need not be read. A
   * pread of one byte there costs a third of reading and parsing the stat line, and it does not
   * ask the scheduler about the process. An empty read, an error, or an empty environment: the
   * stat line is read again.
   */
  private readonly mems = new Map<number, { fd: number | null; last: Probed }>();

  /** The reader for the processes of `set` (descriptors held for a previous set are closed). */
  for(set: object): (p: { pid: number }) => Probed | null {
    if (process.platform !== "linux")
      return (p) => {
        const startTime = processStartTime(p.pid);
        return startTime === null ? null : { startTime, image: null, execing: false };
      };
    if (this.set !== set) {
      this.close();
      this.set = set;
    }
    return (p) => this.read(p.pid);
  }

  private read(pid: number): Probed | null {
    const mem = this.mems.get(pid);
    if (mem?.fd != null) {
      try {
        if (readSync(mem.fd, this.buf, 0, 1, 0) === 1) return mem.last;
      } catch {
        /* read the stat line */
      }
    }
    const now = this.readStatLine(pid);
    this.remember(pid, now, mem);
    return now;
  }

  /** After a full read: the memory descriptor to take the next look through (see `mems`). */
  private remember(
    pid: number,
    now: Probed | null,
    mem: { fd: number | null; last: Probed } | undefined,
  ): void {
    // Once only: a process whose memory reads as empty (gone, exec'd, no environment) is read in
    // full from then on.
    if (mem) {
      if (mem.fd !== null) closeQuietly(mem.fd);
      mem.fd = null;
      return;
    }
    // In the middle of an execve: a descriptor opened now would hold its new memory, and every
    // look through it would give back this half-made image. The stat line is read again next time.
    if (now === null || now.execing) return;
    let fd: number | null = null;
    try {
      fd = openSync(`/proc/${pid}/environ`, "r");
      if (readSync(fd, this.buf, 0, 1, 0) !== 1) {
        closeQuietly(fd);
        fd = null;
      }
    } catch {
      if (fd !== null) closeQuietly(fd);
      fd = null;
    }
    // Opened after the stat line was read: an execve in between would give a descriptor to the
    // new memory with the old image remembered. Read the stat line again: unchanged, or not kept.
    if (fd !== null) {
      const again = this.readStatLine(pid);
      if (again === null || again.startTime !== now.startTime || again.image !== now.image) {
        closeQuietly(fd);
        fd = null;
      }
    }
    this.mems.set(pid, { fd, last: now });
  }

  private readStatLine(pid: number): Probed | null {
    let fd = this.fds.get(pid);
    if (fd === undefined) {
      if (!validPid(pid)) return null;
      try {
        fd = openSync(`/proc/${pid}/stat`, "r");
      } catch {
        fd = null; // gone already: stays gone
      }
      this.fds.set(pid, fd);
    }
    if (fd === null) return null;
    let text: string;
    try {
      let got = 0;
      for (;;) {
        const n = readSync(fd, this.buf, got, this.buf.length - got, got);
        if (n <= 0) break;
        got += n;
        if (this.buf[got - 1] === 0x0a) break; // the whole line (procfs gives it in one read)
        if (got === this.buf.length) return probed(readStat(pid)); // not a stat line we know
      }
      text = this.buf.toString("utf8", 0, got);
    } catch {
      return null; // ESRCH: the process this descriptor belongs to is gone
    }
    return probed(parseProcStat(text));
  }

  close(): void {
    for (const fd of this.fds.values()) if (fd !== null) closeQuietly(fd);
    this.fds.clear();
    for (const m of this.mems.values()) if (m.fd !== null) closeQuietly(m.fd);
    this.mems.clear();
    this.set = null;
  }
}

function probed(st: StatLine | null): Probed | null {
  return st && !dead(st) ? { startTime: st.startTime, image: st.image, execing: st.execing } : null;
}
