// How processes are read, for the files behind proc.ts: a small procfs file read whole, a
// symbolic link, ps, the stat line, and start times in the one format proc.ts describes.
import { execFileSync } from "node:child_process";
import { closeSync, openSync, readlinkSync, readSync } from "node:fs";

let readBuf = Buffer.allocUnsafe(16 * 1024);

/** Reads a small (procfs) file whole; null when it is gone or unreadable. */
export function readProcFile(path: string, encoding: BufferEncoding = "utf8"): string | null {
  let fd: number;
  try {
    fd = openSync(path, "r");
  } catch {
    return null;
  }
  try {
    let got = 0;
    for (;;) {
      if (got === readBuf.length) {
        const bigger = Buffer.allocUnsafe(readBuf.length * 2);
        readBuf.copy(bigger, 0, 0, got);
        readBuf = bigger;
      }
      const n = readSync(fd, readBuf, got, readBuf.length - got, null);
      if (n <= 0) break;
      got += n;
    }
    return readBuf.toString(encoding, 0, got);
  } catch {
    return null;
  } finally {
    closeSync(fd);
  }
}

export interface StatLine {
  ppid: number;
  /** fields 5 and 6: its process group and session (numbered by the pids of their leaders) */
  pgid: number;
  session: number;
  state: string;
  /** field 22, clock ticks since boot: opaque, stable for the process's lifetime */
  startTime: string;
  /**
   * Fields 26 to 28, where the program's text segment starts and ends and where its stack
   * starts: set by each execve and by nothing else a process can do unprivileged. Another
   * executable has another text segment; with address-space randomisation (the default) the
   * same executable run again gets another stack (and, built as PIE, text) address; without
   * it the stack start still moves with the length of argv and the environment. Opaque,
   * compared only for equality; null when the kernel hides them (a process we may not
   * inspect: it shows "1 1 0") or the process has no memory (a zombie).
   */
  image: string | null;
  /**
   * Fields 26 and 27 are both 0 and so is field 23 (its virtual memory size): the process has no
   * memory any more. A SIGKILLed process releases its memory before it becomes a zombie; until
   * then its state still says running, and its image reads as gone, which is not another program
   * (an execve) but an exit under way. The size tells it from a process in the middle of an
   * execve: its new memory has its stack but no text segment yet (fields 26 and 27 read 0 too),
   * and it is very much alive — a watcher's next worker read as dead there went unseen.
   */
  noMemory: boolean;
  /**
   * In the middle of an execve (fields 26 and 27 both 0, field 23 not): alive, and the program it
   * will run is not loaded yet, so its image (null here) says nothing about it yet.
   */
  execing: boolean;
}

/** Parses the text of /proc/PID/stat; the one place this format is read. */
export function parseProcStat(text: string): StatLine | null {
  // "pid (comm) state ppid ..." — comm may hold spaces and parentheses: split after the last ")".
  const r = text.lastIndexOf(")");
  if (r < 0) return null;
  const f = text.slice(r + 2).split(" ");
  // f[0] is field 3 (state); field 22 (starttime, clock ticks since boot) is f[19].
  const ppid = Number(f[1]);
  const pgid = Number(f[2]);
  const session = Number(f[3]);
  const startTime = f[19];
  if (
    !Number.isInteger(ppid) ||
    !Number.isInteger(pgid) ||
    !Number.isInteger(session) ||
    startTime === undefined ||
    !/^\d+$/.test(startTime)
  )
    return null;
  const [vsize, startCode, endCode, startStack] = [f[20], f[23], f[24], f[25]];
  const codeless = startCode === "0" && endCode === "0";
  const execing = codeless && vsize !== undefined && vsize !== "0";
  const image =
    startCode === undefined ||
    endCode === undefined ||
    startStack === undefined ||
    startStack === "0" ||
    execing
      ? null
      : `${startCode}:${endCode}:${startStack}`;
  return {
    ppid,
    pgid,
    session,
    state: f[0] ?? "?",
    startTime,
    image,
    noMemory: codeless && vsize === "0",
    execing,
  };
}

/** /proc/PID/stat of a process (Linux), or null when it is gone or unreadable. */
export function readStat(pid: number): StatLine | null {
  const text = readProcFile(`/proc/${pid}/stat`);
  return text === null ? null : parseProcStat(text);
}

/** A zombie, a dead process, or one exiting (its memory released): it can no longer answer anything. */
export function dead(st: StatLine): boolean {
  return st.state === "Z" || st.state === "X" || st.state === "x" || st.noMemory;
}

export function validPid(pid: number): boolean {
  return Number.isInteger(pid) && pid > 0;
}

/**
 * Start time of whatever process holds `pid` now, dead or alive: a zombie not yet reaped, or one
 * exiting, still holds its number (and its process group's), and is still that process. Null
 * when no process has the number. What a signal sent by number is checked against.
 */
export function pidHolderStartTime(pid: number): string | null {
  if (!validPid(pid)) return null;
  if (process.platform === "linux") return readStat(pid)?.startTime ?? null;
  if (process.platform === "darwin") {
    const out = ps(["-o", "lstart=", "-p", String(pid)]);
    return out === null || out.trim() === "" ? null : lstart(out);
  }
  return null;
}

/** Start time of a live process (opaque, stable for its lifetime); null when gone or a zombie. */
export function processStartTime(pid: number): string | null {
  if (!validPid(pid)) return null;
  if (process.platform === "linux") {
    const st = readStat(pid);
    return st === null || dead(st) ? null : st.startTime;
  }
  if (process.platform === "darwin") {
    const out = ps(["-o", "stat=,lstart=", "-p", String(pid)]);
    const m = out === null ? null : /^\s*(\S+)\s+(.+?)\s*$/.exec(out);
    return m === null || m[1]!.startsWith("Z") ? null : lstart(m[2]!);
  }
  return null;
}

/** ps's lstart with runs of spaces collapsed ("Tue Jul  2 …" → "Tue Jul 2 …"): the one macOS format. */
export function lstart(text: string): string {
  return text.trim().replace(/\s+/g, " ");
}

/** The target of a symbolic link (a /proc link: exe, cwd, fd/N), or null. */
export function readLink(p: string): string | null {
  try {
    return readlinkSync(p);
  } catch {
    return null;
  }
}

/**
 * What descriptor `fd` of process `pid` is open on, as Linux names it ("pipe:[INODE]",
 * "socket:[INODE]", a path): the same text for every process holding the same open pipe or
 * socket end. Null when it cannot be read (the process is gone, or another user's) and on every
 * other system, which shows no other process's descriptors.
 */
export function descriptorOf(pid: number, fd: number): string | null {
  if (process.platform !== "linux" || !validPid(pid)) return null;
  return readLink(`/proc/${pid}/fd/${fd}`);
}

/** What `ps ARGS` prints (macOS), or null when it fails. */
export function ps(args: string[]): string | null {
  try {
    return execFileSync("ps", args, {
      encoding: "utf8",
      maxBuffer: 64 * 1024 * 1024,
      stdio: ["ignore", "pipe", "ignore"],
    });
  } catch {
    return null;
  }
}

/** Closes a descriptor that may be closed already. */
export function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    /* already closed */
  }
}

/**
 * Where a pid and a start time mean something: the PID namespace whose numbers they are and the
 * kernel boot whose clock they count. Two processes on one state directory may not share either
 * (a container or sandbox on the same directory; a reboot between a crash and a reader).
 */
export interface ProcessPlace {
  /** the PID namespace of this process, as /proc shows it ("pid:[4026531836]"); null: unknown */
  pidNs: string | null;
  /** the kernel's boot id; null: unknown */
  boot: string | null;
}

/**
 * Why the processes this gateway launches cannot be observed here, or null. On Linux every look
 * at a server (its identity, its children, its exit) reads /proc/PID by the pid the kernel gave
 * the child in this process's PID namespace; when the /proc mounted here is another namespace's
 * (`unshare --pid --fork` without `--mount-proc`, a sandbox that shares the host's /proc), that
 * pid names another process there, or none: an epoch would record someone else's code. Seen as
 * /proc/self naming another pid than this process's.
 */
export function foreignProc(): string | null {
  if (process.platform !== "linux") return null;
  const self = readLink("/proc/self");
  if (self === null || self === String(process.pid)) return null;
  return `the /proc mounted here is another PID namespace's (/proc/self is ${self}, this process is ${process.pid}), so the server's processes cannot be observed and an execution epoch would name another process's code`;
}

/** What to do about foreignProc's finding. */
export const OWN_PROC_FIX =
  "run portcullis where /proc is its own namespace's (unshare --pid --fork --mount-proc, or a container's own /proc)";

let ownPlaceCache: ProcessPlace | null = null;

/**
 * This process's place, read once (a process never changes its own PID namespace). The namespace
 * is trusted only when the /proc mounted here is that namespace's: when /proc/self is another
 * number than our pid, every /proc/PID read here speaks of another namespace's processes, and
 * nothing recorded by pid can be judged from here.
 */
export function ownPlace(): ProcessPlace {
  if (ownPlaceCache) return ownPlaceCache;
  if (process.platform === "linux") {
    const ours = readLink("/proc/self") === String(process.pid);
    const boot = readProcFile("/proc/sys/kernel/random/boot_id")?.trim() || null;
    ownPlaceCache = { pidNs: ours ? readLink("/proc/self/ns/pid") : null, boot };
  } else if (process.platform === "darwin") {
    // No PID namespaces: one process table. lstart is wall-clock time, so a reboot shows as a
    // changed start time without a boot id.
    ownPlaceCache = { pidNs: "darwin", boot: null };
  } else {
    ownPlaceCache = { pidNs: null, boot: null };
  }
  return ownPlaceCache;
}

/**
 * This process's file size limit in bytes (RLIMIT_FSIZE, the soft one: `ulimit -f`), from
 * /proc/self/limits; null when there is none ("unlimited") or it cannot be read (not Linux).
 */
export function fileSizeLimit(): number | null {
  const text = readProcFile("/proc/self/limits");
  const line = text?.split("\n").find((l) => l.startsWith("Max file size"));
  const soft = line?.slice("Max file size".length).trim().split(" ")[0];
  const limit = Number(soft);
  return soft && Number.isSafeInteger(limit) ? limit : null;
}
