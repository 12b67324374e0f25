// Processes seen from outside: Linux /proc, macOS ps. The only module that reads either (the
// supervisor's replacement check, the approval layer's process chain, gateway liveness and the
// identity capture all come here), with one start-time format: on Linux the decimal clock ticks
// since boot of /proc/PID/stat field 22, on macOS ps's `lstart` text with single spaces. Opaque,
// stable for a process's lifetime, compared only for equality. Synchronous and cheap enough for
// the request forwarding path.
import { execFileSync } from "node:child_process";
import { closeSync, existsSync, openSync, readdirSync, readlinkSync, readSync, statSync } from "node:fs";
import type { DigestCache } from "./cache.js";
import { displayPath, scriptsOfProcess } from "./resolve.js";
import type { FileDigest, ProcessFact } from "./types.js";

export interface ListOptions {
  /** Digest each process's executable and scripts through this cache (cheap once warm). */
  digest?: DigestCache;
  /** Script paths are shown relative to this directory (default: the root process's cwd). */
  cwd?: string;
}

let readBuf = Buffer.allocUnsafe(16 * 1024);

/** Reads a small (procfs) file whole; null when it is gone or unreadable. */
function readProcFile(path: string, encoding: BufferEncoding = "utf8"): string | null {
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
}

/** Parses the text of /proc/PID/stat; the one place this format is read. */
export function parseProcStat(text: string): StatLine | null {
  // "pid (comm) state ppid ..." — comm may hold spaces and parentheses: split after the last ")".
  const r = text.lastIndexOf(")");
  if (r < 0) return null;
  const f = text.slice(r + 2).split(" ");
  // f[0] is field 3 (state); field 22 (starttime, clock ticks since boot) is f[19].
  const ppid = Number(f[1]);
  const startTime = f[19];
  if (!Number.isInteger(ppid) || startTime === undefined || !/^\d+$/.test(startTime)) return null;
  const [startCode, endCode, startStack] = [f[23], f[24], f[25]];
  const image =
    startCode === undefined || endCode === undefined || startStack === undefined || startStack === "0"
      ? null
      : `${startCode}:${endCode}:${startStack}`;
  return { ppid, state: f[0] ?? "?", startTime, image };
}

/** /proc/PID/stat of a process (Linux), or null when it is gone or unreadable. */
export function readStat(pid: number): StatLine | null {
  const text = readProcFile(`/proc/${pid}/stat`);
  return text === null ? null : parseProcStat(text);
}

/** A zombie or a dead process: it can no longer answer anything. */
export function dead(st: StatLine): boolean {
  return st.state === "Z" || st.state === "X" || st.state === "x";
}

function validPid(pid: number): boolean {
  return Number.isInteger(pid) && pid > 0;
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

/**
 * What a live process runs, as the kernel says (Linux): the device and inode of the file it
 * executes (a stat of /proc/PID/exe follows the link to that very file, even once it is deleted
 * or renamed over) and its auxiliary vector (/proc/PID/auxv), which every execve writes afresh.
 * With address-space randomisation (the kernel's default) the vector's addresses (the vdso,
 * AT_RANDOM, the stack) differ after every execve, also one into the same interpreter with
 * another script. Read anew on each call: an open auxv descriptor keeps showing the address
 * space it was opened on. Opaque, compared only for equality; null when not known (not Linux,
 * gone, or unreadable). A few microseconds.
 */
export function execImage(pid: number): string | null {
  if (process.platform !== "linux" || !validPid(pid)) return null;
  let exe: string;
  try {
    const st = statSync(`/proc/${pid}/exe`);
    exe = `${st.dev}:${st.ino}`;
  } catch {
    return null;
  }
  const auxv = readProcFile(`/proc/${pid}/auxv`, "base64");
  return auxv === null || auxv === "" ? null : `${exe}:${auxv}`;
}

/**
 * The live children of `pid` (zombies left out), with their start times and executables. Linux
 * reads each thread's children file (or the process table where there is none); elsewhere the
 * process list. Used only when a watched process went away, to see whether its parent put
 * another one in its place.
 */
export function listChildren(pid: number): { pid: number; startTime: string; exe: string | null }[] {
  if (!validPid(pid)) return [];
  if (process.platform !== "linux") {
    return listDescendants(pid)
      .filter((p) => p.ppid === pid)
      .map((p) => ({ pid: p.pid, startTime: p.startTime, exe: p.exe }));
  }
  const kids = hasChildrenFiles() ? childrenViaTasks(pid) : (childrenViaTable().get(pid) ?? []);
  const out: { pid: number; startTime: string; exe: string | null }[] = [];
  for (const kid of kids) {
    const st = readStat(kid);
    if (st === null || dead(st) || st.ppid !== pid) continue;
    out.push({ pid: kid, startTime: st.startTime, exe: exePath(kid) });
  }
  return out;
}

/** The path /proc/PID/exe names (plainExe). */
function exePath(pid: number): string | null {
  return plainExe(readLink(`/proc/${pid}/exe`));
}

/** An executable's path without the " (deleted)" Linux adds once the file is gone or renamed over. */
export function plainExe(exe: string | null): string | null {
  return exe === null ? null : exe.replace(/ \(deleted\)$/, "");
}

/** Whether `exe` is the very file this process runs (Linux: same inode as /proc/self/exe; elsewhere false). */
export function isOwnExecutable(exe: string): boolean {
  try {
    const a = statSync("/proc/self/exe");
    const b = statSync(exe);
    return a.dev === b.dev && a.ino === b.ino && a.size === b.size && a.mtimeMs === b.mtimeMs;
  } catch {
    return false;
  }
}

/** ps's lstart with runs of spaces collapsed ("Tue Jul  2 …" → "Tue Jul 2 …"): the one macOS format. */
function lstart(text: string): string {
  return text.trim().replace(/\s+/g, " ");
}

/** One process as the OS describes it (for the approval layer's process chain). */
export interface OsProcess {
  pid: number;
  ppid: number;
  /** in this module's start-time format */
  startTime: string;
  /** wall-clock start, ISO 8601, when the OS lets us compute it */
  startedAt: string | null;
  /** the executable's path as the OS names it (Linux: may end in " (deleted)"); null when unknown */
  executable: string | null;
  /** a path that opens the very file the process runs (Linux /proc/PID/exe), when there is one */
  executableOpenPath: string | null;
  /** why the executable is not known, when it is not */
  executableProblem?: string;
  /** argv, or null when it cannot be read */
  argv: string[] | null;
}

/** The process `pid` as the OS describes it, or null when it is gone or unreadable. */
export function describeOsProcess(pid: number): OsProcess | null {
  if (!validPid(pid)) return null;
  if (process.platform === "linux") return describeLinux(pid);
  if (process.platform === "darwin") return describeDarwin(pid);
  return null;
}

let bootTimeMs: number | null | undefined;
function linuxBootTimeMs(): number | null {
  if (bootTimeMs !== undefined) return bootTimeMs;
  const m = /^btime\s+(\d+)/m.exec(readProcFile("/proc/stat") ?? "");
  bootTimeMs = m ? Number(m[1]) * 1000 : null;
  return bootTimeMs;
}

/** USER_HZ: 100 on every Linux architecture Node runs on. */
const CLOCK_TICKS_PER_SECOND = 100;

function describeLinux(pid: number): OsProcess | null {
  const st = readStat(pid);
  if (st === null) return null;
  let executable: string | null = null;
  let executableProblem: string | undefined;
  try {
    executable = readlinkSync(`/proc/${pid}/exe`);
  } catch (e) {
    executableProblem = `executable not readable: ${(e as NodeJS.ErrnoException).code ?? "error"}`;
  }
  const cmdline = readProcFile(`/proc/${pid}/cmdline`);
  let argv: string[] | null = null;
  if (cmdline !== null) {
    argv = cmdline.split("\0");
    // A process that rewrote its title (npm does) leaves empty padding arguments.
    while (argv.length > 1 && argv.at(-1) === "") argv.pop();
  }
  const boot = linuxBootTimeMs();
  const out: OsProcess = {
    pid,
    ppid: st.ppid,
    startTime: st.startTime,
    startedAt:
      boot === null
        ? null
        : new Date(boot + Math.round((Number(st.startTime) * 1000) / CLOCK_TICKS_PER_SECOND)).toISOString(),
    executable,
    executableOpenPath: executable === null ? null : `/proc/${pid}/exe`,
    argv,
  };
  if (executableProblem) out.executableProblem = executableProblem;
  return out;
}

function describeDarwin(pid: number): OsProcess | null {
  const out = ps(["-o", "ppid=,lstart=,comm=", "-p", String(pid)]);
  // "  123 Tue Jul 22 14:31:08 2026     /Applications/Foo.app/Contents/MacOS/Foo"
  const m =
    out === null ? null : /^\s*(\d+)\s+(\w{3}\s+\w{3}\s+\d+\s+[\d:]+\s+\d{4})\s+(.*)$/.exec(out.trim());
  if (!m) return null;
  const startTime = lstart(m[2]!);
  const parsed = Date.parse(startTime);
  const comm = m[3]!.trim();
  const args = ps(["-o", "args=", "-p", String(pid)]);
  return {
    pid,
    ppid: Number(m[1]),
    startTime,
    startedAt: Number.isNaN(parsed) ? null : new Date(parsed).toISOString(),
    executable: comm.startsWith("/") ? comm : null,
    executableOpenPath: null,
    ...(comm.startsWith("/")
      ? {}
      : { executableProblem: `executable path not known (ps comm: ${comm || "none"})` }),
    argv: args === null ? null : args.trim().split(/\s+/),
  };
}

/** What the probe reads of a live process: its start time and (Linux) its image (StatLine). */
export interface Probed {
  startTime: string;
  image: string | null;
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
        return startTime === null ? null : { startTime, image: null };
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
    if (now === null) return;
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
  return st && !dead(st) ? { startTime: st.startTime, image: st.image } : null;
}

// Linux without /proc/PID/task/TID/children (CONFIG_PROC_CHILDREN off): a table of every process's
// parent, refreshed incrementally. A process's parent only changes by reparenting to an ancestor
// (init or a subreaper), so a process that is not a descendant never becomes one, and only new
// pids and current descendants need reading. A full re-read every FULL_SCAN_MS also covers a pid
// reused within that time.
const FULL_SCAN_MS = 5000;
const table = new Map<number, { ppid: number; startTime: string }>();
let lastFullScan = 0;
let childrenFiles: boolean | undefined;

function hasChildrenFiles(): boolean {
  childrenFiles ??= existsSync(`/proc/self/task/${process.pid}/children`);
  return childrenFiles;
}

function childrenViaTasks(pid: number): number[] {
  const out: number[] = [];
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const tid of tids) {
    const text = readProcFile(`/proc/${pid}/task/${tid}/children`);
    if (text === null) continue;
    for (const w of text.split(" ")) if (w !== "" && w !== "\n") out.push(Number(w));
  }
  return out;
}

function childrenViaTable(): Map<number, number[]> {
  const now = Date.now();
  const full = now - lastFullScan >= FULL_SCAN_MS;
  if (full) lastFullScan = now;
  let names: string[];
  try {
    names = readdirSync("/proc");
  } catch {
    names = [];
  }
  const present = new Set<number>();
  for (const name of names) {
    const c = name.charCodeAt(0);
    if (c < 48 || c > 57) continue;
    const pid = Number(name);
    present.add(pid);
    if (!full && table.has(pid)) continue;
    const st = readStat(pid);
    if (st !== null) table.set(pid, { ppid: st.ppid, startTime: st.startTime });
  }
  for (const pid of table.keys()) if (!present.has(pid)) table.delete(pid);
  const kids = new Map<number, number[]>();
  for (const [pid, e] of table) {
    const list = kids.get(e.ppid);
    if (list === undefined) kids.set(e.ppid, [pid]);
    else list.push(pid);
  }
  return kids;
}

/**
 * The process `rootPid` and all its live descendants (root first, then breadth-first). Empty when
 * the root is gone. Zombies are left out: they run no code.
 */
export function listDescendants(rootPid: number, opts: ListOptions = {}): ProcessFact[] {
  if (!validPid(rootPid)) return [];
  if (process.platform === "linux") return listLinux(rootPid, opts);
  if (process.platform === "darwin") return listDarwin(rootPid, opts);
  return [];
}

function listLinux(rootPid: number, opts: ListOptions): ProcessFact[] {
  const root = readStat(rootPid);
  if (root === null || dead(root)) return [];
  const members: { pid: number; st: StatLine }[] = [{ pid: rootPid, st: root }];
  const viaTasks = hasChildrenFiles();
  const kids = viaTasks ? null : childrenViaTable();
  const inTree = new Set([rootPid]);
  for (let i = 0; i < members.length; i++) {
    const parent = members[i]!.pid;
    const children = kids === null ? childrenViaTasks(parent) : (kids.get(parent) ?? []);
    for (const pid of children) {
      if (inTree.has(pid)) continue;
      // Re-read: the table may be up to FULL_SCAN_MS old for this pid.
      const st = readStat(pid);
      if (st === null) {
        table.delete(pid);
        continue;
      }
      table.set(pid, { ppid: st.ppid, startTime: st.startTime });
      if (st.ppid !== parent || dead(st)) continue;
      inTree.add(pid);
      members.push({ pid, st });
    }
  }
  const base = opts.cwd ?? readLink(`/proc/${rootPid}/cwd`) ?? process.cwd();
  const facts: ProcessFact[] = [];
  for (const { pid, st } of members) {
    const cmdline = readProcFile(`/proc/${pid}/cmdline`);
    if (cmdline === null) continue; // exited meanwhile
    const argv = cmdline.split("\0");
    if (argv[argv.length - 1] === "") argv.pop();
    const exe = readLink(`/proc/${pid}/exe`);
    const fact: ProcessFact = {
      pid,
      ppid: st.ppid,
      startTime: st.startTime,
      exe,
      argv,
      exeSha256: null,
      scripts: [],
    };
    if (opts.digest !== undefined) {
      if (exe !== null) fact.exeSha256 = digestOrNull(opts.digest, exe, `/proc/${pid}/exe`);
      const pcwd = readLink(`/proc/${pid}/cwd`) ?? base;
      fact.scripts = digestScripts(opts.digest, scriptsOfProcess(exe, argv, pcwd), base);
    }
    facts.push(fact);
  }
  return facts;
}

function readLink(p: string): string | null {
  try {
    return readlinkSync(p);
  } catch {
    return null;
  }
}

function digestOrNull(cache: DigestCache, key: string, openPath?: string): string | null {
  try {
    return cache.digestFileSync(key, openPath ?? key);
  } catch {
    return null;
  }
}

function digestScripts(cache: DigestCache, paths: string[], base: string): FileDigest[] {
  const out: FileDigest[] = [];
  for (const p of paths) {
    const sha = digestOrNull(cache, p);
    if (sha !== null) out.push({ path: displayPath(p, base), sha256: sha });
  }
  return out;
}

function ps(args: string[]): string | null {
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

function listDarwin(rootPid: number, opts: ListOptions): ProcessFact[] {
  const out = ps(["-A", "-o", "pid=,ppid=,stat=,lstart=,comm="]);
  if (out === null) return [];
  const rows = new Map<number, { ppid: number; stat: string; lstart: string; comm: string }>();
  const kids = new Map<number, number[]>();
  for (const line of out.split("\n")) {
    const m = /^\s*(\d+)\s+(\d+)\s+(\S+)\s+(\S+\s+\S+\s+\d+\s+[\d:]+\s+\d+)\s+(.*)$/.exec(line);
    if (m === null) continue;
    const pid = Number(m[1]);
    const ppid = Number(m[2]);
    rows.set(pid, { ppid, stat: m[3]!, lstart: m[4]!, comm: m[5]! });
    const list = kids.get(ppid);
    if (list === undefined) kids.set(ppid, [pid]);
    else list.push(pid);
  }
  const root = rows.get(rootPid);
  if (root === undefined || root.stat.startsWith("Z")) return [];
  const order = [rootPid];
  for (let i = 0; i < order.length; i++) {
    for (const c of kids.get(order[i]!) ?? []) {
      if (!order.includes(c) && !rows.get(c)!.stat.startsWith("Z")) order.push(c);
    }
  }
  const argvs = new Map<number, string[]>();
  const args = ps(["-ww", "-o", "pid=,args=", "-p", order.join(",")]);
  for (const line of (args ?? "").split("\n")) {
    const m = /^\s*(\d+)\s+(.*)$/.exec(line);
    if (m !== null)
      argvs.set(
        Number(m[1]),
        m[2]!.split(/\s+/).filter((w) => w !== ""),
      );
  }
  const base = opts.cwd ?? process.cwd();
  return order.map((pid) => {
    const r = rows.get(pid)!;
    const exe = r.comm.startsWith("/") ? r.comm : null;
    const argv = argvs.get(pid) ?? [r.comm];
    const fact: ProcessFact = {
      pid,
      ppid: r.ppid,
      startTime: lstart(r.lstart),
      exe,
      argv,
      exeSha256: null,
      scripts: [],
    };
    if (opts.digest !== undefined) {
      if (exe !== null) fact.exeSha256 = digestOrNull(opts.digest, exe);
      fact.scripts = digestScripts(opts.digest, scriptsOfProcess(exe, argv, base), base);
    }
    return fact;
  });
}

// ───────────────────────────── sockets ─────────────────────────────

/** One end of a TCP connection: its address as node reports it, and its port. */
export interface TcpEnd {
  address: string;
  port: number;
}

/**
 * Linux: the pid of the process on the other end of a loopback TCP connection, seen from this
 * end (`ours`: this socket's local end; `theirs`: its remote end). Found as the kernel lists it:
 * the row of /proc/net/tcp or tcp6 whose local end is `theirs` and whose remote end is `ours`,
 * addresses and ports both (ports alone are not enough: another process can bind the same port
 * on another loopback address, 127.0.0.2, and be taken for this one), then the process holding a
 * descriptor to that row's socket inode under /proc/PID/fd. Null when it is not exactly one: not
 * Linux, the connection already gone, a process of another user (its fd directory is unreadable),
 * more than one row, or a socket held by more than one process.
 */
export function pidOfTcpPeer(ours: TcpEnd, theirs: TcpEnd): number | null {
  if (process.platform !== "linux") return null;
  const inode = tcpSocketInode(theirs, ours);
  if (inode === null) return null;
  const target = `socket:[${inode}]`;
  let pids: string[];
  try {
    pids = readdirSync("/proc").filter((n) => /^[0-9]+$/.test(n));
  } catch {
    return null;
  }
  let holder: number | null = null;
  for (const pid of pids) {
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue; // gone, or another user's
    }
    for (const fd of fds) {
      let link: string;
      try {
        link = readlinkSync(`/proc/${pid}/fd/${fd}`);
      } catch {
        continue; // closed meanwhile
      }
      if (link !== target) continue;
      if (holder !== null && holder !== Number(pid)) return null; // shared: no one process is the peer
      holder = Number(pid);
      break;
    }
  }
  return holder;
}

/** The inode of the one socket whose local end is `local` and remote end `remote`, or null. */
function tcpSocketInode(local: TcpEnd, remote: TcpEnd): string | null {
  const locals = new Set(procNetEnds(local));
  const remotes = new Set(procNetEnds(remote));
  if (locals.size === 0 || remotes.size === 0) return null;
  const found = new Set<string>();
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    const text = readProcFile(table);
    if (!text) continue;
    for (const line of text.split("\n").slice(1)) {
      // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
      const f = line.trim().split(/\s+/);
      if (f.length < 10 || f[9] === "0") continue;
      if (locals.has(f[1]!.toUpperCase()) && remotes.has(f[2]!.toUpperCase())) found.add(f[9]!);
    }
  }
  return found.size === 1 ? [...found][0]! : null;
}

/**
 * How /proc/net/tcp (IPv4) and tcp6 spell an end: the address as the kernel's 32-bit words,
 * each printed in the machine's byte order (little-endian here), then ":" and the port in hex.
 * An IPv4 address is spelled both ways (a dual-stack socket lists it as ::ffff:a.b.c.d in tcp6).
 * Nothing for an address that is not understood.
 */
export function procNetEnds(end: TcpEnd): string[] {
  const port = end.port.toString(16).toUpperCase().padStart(4, "0");
  const bytes = addressBytes(end.address);
  if (bytes === null) return [];
  const words = (b: number[]) => {
    let out = "";
    for (let i = 0; i < b.length; i += 4)
      out += [b[i + 3], b[i + 2], b[i + 1], b[i]]
        .map((x) => x!.toString(16).toUpperCase().padStart(2, "0"))
        .join("");
    return out;
  };
  if (bytes.length === 4) {
    const mapped = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, ...bytes];
    return [`${words(bytes)}:${port}`, `${words(mapped)}:${port}`];
  }
  const v4 = bytes.slice(0, 12).every((x, i) => x === (i < 10 ? 0 : 0xff)) ? bytes.slice(12) : null;
  return v4 ? [`${words(v4)}:${port}`, `${words(bytes)}:${port}`] : [`${words(bytes)}:${port}`];
}

/** The bytes of an IPv4 or IPv6 address as node writes it (zone ids not supported), or null. */
function addressBytes(address: string): number[] | null {
  const v4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(address);
  if (v4) {
    const b = v4.slice(1).map(Number);
    return b.every((x) => x <= 255) ? b : null;
  }
  if (!/^[0-9a-fA-F:.]+$/.test(address) || !address.includes(":")) return null;
  let text = address;
  let tail: number[] = [];
  const dotted = /^(.*:)(\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3})$/.exec(text);
  if (dotted) {
    const b = addressBytes(dotted[2]!);
    if (b === null) return null;
    tail = b;
    text = `${dotted[1]}0:0`;
  }
  const halves = text.split("::");
  if (halves.length > 2) return null;
  const groups = (h: string) => (h === "" ? [] : h.split(":"));
  const head = groups(halves[0]!);
  const rest = halves.length === 2 ? groups(halves[1]!) : [];
  const missing = 8 - head.length - rest.length;
  if ((halves.length === 1 && missing !== 0) || missing < 0) return null;
  const all = [...head, ...Array(halves.length === 2 ? missing : 0).fill("0"), ...rest];
  if (all.length !== 8 || all.some((g) => !/^[0-9a-fA-F]{1,4}$/.test(g))) return null;
  const bytes = all.flatMap((g) => {
    const v = Number.parseInt(g, 16);
    return [v >> 8, v & 0xff];
  });
  if (tail.length === 4) bytes.splice(12, 4, ...tail);
  return bytes;
}

function closeQuietly(fd: number): void {
  try {
    closeSync(fd);
  } catch {
    /* already closed */
  }
}
