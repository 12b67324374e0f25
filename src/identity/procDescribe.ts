// One process as the OS describes it (the approval layer's process chain), and what a process
// runs: its executable and, on Linux, the image every execve writes afresh.
import { readlinkSync, statSync } from "node:fs";
import { lstart, ps, readProcFile, readStat, validPid } from "./procRead.js";

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
