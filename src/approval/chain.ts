import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, readlinkSync, statSync } from "node:fs";
import { hashFileSync } from "../identity/hash.js";
import { parseProcStat } from "../identity/proc.js";
import type { Store } from "../store/db.js";
import { displayCommand } from "../util/redact.js";

/**
 * The process chain of an agent run: the process that launched the gateway and its
 * ancestors, read from the operating system (Linux /proc, macOS ps + codesign),
 * never from anything the agent or the server says about itself.
 */
export interface ChainEntry {
  pid: number;
  /** parent pid as read, null when it could not be read */
  ppid: number | null;
  /**
   * Start time as the OS gives it, used for identity: on Linux "ticks:<n>" (clock
   * ticks since boot, /proc/PID/stat field 22); on macOS the `lstart` text.
   * A pid alone is not an identity: pids are reused, (pid, start time) are not.
   */
  startTime: string | null;
  /** the same instant as an ISO timestamp, for people (approximate on Linux) */
  startedAt: string | null;
  /** the executable's path (Linux: /proc/PID/exe; macOS: ps comm), null when unreadable */
  executable: string | null;
  /** "sha256:<hex>" of the executable's content, null when it could not be read */
  sha256: string | null;
  /** the command line, for people only: long lines are cut, secret-looking values replaced */
  command: string;
  /** macOS: the code-signing authority chain (codesign "Authority=" lines), when signed */
  signingAuthority?: string[];
  /** why a field is missing (e.g. "executable not readable: EACCES") */
  note?: string;
}

export const MAX_CHAIN_DEPTH = 8;

/** Digests of executables keyed by (path, size, mtime): in memory, and in the store when one is given. */
export class ExecutableDigests {
  private readonly memory = new Map<string, { size: number; mtimeMs: number; sha256: string }>();

  constructor(private readonly db: Store | null = null) {}

  digest(path: string, readPath = path): string | null {
    let st: { size: number; mtimeMs: number };
    try {
      const s = statSync(readPath);
      if (!s.isFile()) return null;
      st = { size: s.size, mtimeMs: Math.trunc(s.mtimeMs) };
    } catch {
      return null;
    }
    const hit = this.memory.get(path) ?? this.fromStore(path);
    if (hit && hit.size === st.size && hit.mtimeMs === st.mtimeMs) return hit.sha256;
    let sha256: string;
    try {
      sha256 = `sha256:${hashFileSync(readPath, true).sha}`;
    } catch {
      return null;
    }
    const entry = { size: st.size, mtimeMs: st.mtimeMs, sha256 };
    this.memory.set(path, entry);
    if (this.db) {
      try {
        this.db
          .prepare(
            `INSERT INTO executable_digests (path, size, mtime_ms, sha256, checked_at) VALUES (?, ?, ?, ?, ?)
             ON CONFLICT(path) DO UPDATE SET size = excluded.size, mtime_ms = excluded.mtime_ms,
               sha256 = excluded.sha256, checked_at = excluded.checked_at`,
          )
          .run(path, entry.size, entry.mtimeMs, sha256, new Date().toISOString());
      } catch {
        /* the cache is an optimisation */
      }
    }
    return sha256;
  }

  private fromStore(path: string): { size: number; mtimeMs: number; sha256: string } | undefined {
    if (!this.db) return undefined;
    try {
      const r = this.db
        .prepare("SELECT size, mtime_ms, sha256 FROM executable_digests WHERE path = ?")
        .get(path) as { size: number; mtime_ms: number; sha256: string } | undefined;
      return r ? { size: r.size, mtimeMs: r.mtime_ms, sha256: r.sha256 } : undefined;
    } catch {
      return undefined;
    }
  }
}

// ───────────────────────────── Linux ─────────────────────────────

let bootTimeMs: number | null | undefined;
function linuxBootTimeMs(): number | null {
  if (bootTimeMs !== undefined) return bootTimeMs;
  try {
    const m = /^btime\s+(\d+)/m.exec(readFileSync("/proc/stat", "utf8"));
    bootTimeMs = m ? Number(m[1]) * 1000 : null;
  } catch {
    bootTimeMs = null;
  }
  return bootTimeMs;
}

/** USER_HZ: 100 on every Linux architecture Node runs on. */
const CLOCK_TICKS_PER_SECOND = 100;

/** Parent pid and start time from /proc/PID/stat (parsed by the identity module). */
export function linuxStat(pid: number): { ppid: number; startTicks: string } | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return null;
  }
  const st = parseProcStat(text);
  return st ? { ppid: st.ppid, startTicks: st.startTime } : null;
}

function linuxEntry(pid: number, digests: ExecutableDigests): ChainEntry | null {
  const stat = linuxStat(pid);
  if (!stat) return null;
  const notes: string[] = [];
  let executable: string | null = null;
  let sha256: string | null = null;
  try {
    executable = readlinkSync(`/proc/${pid}/exe`);
  } catch (e) {
    notes.push(`executable not readable: ${(e as NodeJS.ErrnoException).code ?? "error"}`);
  }
  if (executable) {
    const deleted = executable.endsWith(" (deleted)");
    // /proc/PID/exe opens the very file the process runs, even when it was replaced on disk.
    sha256 = digests.digest(executable, existsSync(executable) && !deleted ? executable : `/proc/${pid}/exe`);
    if (!sha256) sha256 = digests.digest(`/proc/${pid}/exe`);
    if (!sha256) notes.push("executable content not readable");
    if (deleted) notes.push("the executable was deleted or replaced on disk after launch");
  }
  let command = "";
  try {
    const argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
    // A process that rewrote its title (npm does) leaves empty padding arguments.
    while (argv.length > 1 && argv.at(-1) === "") argv.pop();
    command = displayCommand(argv);
  } catch {
    notes.push("command line not readable");
  }
  const boot = linuxBootTimeMs();
  const startedAt =
    boot === null
      ? null
      : new Date(boot + Math.round((Number(stat.startTicks) * 1000) / CLOCK_TICKS_PER_SECOND)).toISOString();
  const entry: ChainEntry = {
    pid,
    ppid: stat.ppid,
    startTime: `ticks:${stat.startTicks}`,
    startedAt,
    executable,
    sha256,
    command,
  };
  if (notes.length) entry.note = notes.join("; ");
  return entry;
}

// ───────────────────────────── macOS ─────────────────────────────

function run(cmd: string, args: string[]): { stdout: string; stderr: string; status: number | null } | null {
  const r = spawnSync(cmd, args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], timeout: 5000 });
  if (r.error) return null;
  return { stdout: r.stdout ?? "", stderr: r.stderr ?? "", status: r.status };
}

let codesignPath: string | null | undefined;
function codesign(): string | null {
  if (codesignPath === undefined) codesignPath = existsSync("/usr/bin/codesign") ? "/usr/bin/codesign" : null;
  return codesignPath;
}

/** macOS: the "Authority=" lines of `codesign -dv --verbose=2` (it reports on stderr). */
function signingAuthority(path: string): string[] | undefined {
  const tool = codesign();
  if (!tool) return undefined;
  const r = run(tool, ["-dv", "--verbose=2", path]);
  if (!r) return undefined;
  const lines = [...`${r.stdout}\n${r.stderr}`.matchAll(/^Authority=(.+)$/gm)].map((m) => m[1]!.trim());
  return lines.length ? lines : undefined;
}

function darwinEntry(pid: number, digests: ExecutableDigests): ChainEntry | null {
  const r = run("/bin/ps", ["-o", "ppid=,lstart=,comm=", "-p", String(pid)]);
  if (r?.status !== 0) return null;
  // "  123 Tue Jul 22 14:31:08 2026     /Applications/Foo.app/Contents/MacOS/Foo"
  const m = /^\s*(\d+)\s+(\w{3}\s+\w{3}\s+\d+\s+[\d:]+\s+\d{4})\s+(.*)$/.exec(r.stdout.trim());
  if (!m) return null;
  const ppid = Number(m[1]);
  const lstart = m[2]!.replace(/\s+/g, " ");
  const executable = m[3]!.trim() || null;
  const parsed = Date.parse(lstart);
  const argsOut = run("/bin/ps", ["-o", "args=", "-p", String(pid)]);
  const entry: ChainEntry = {
    pid,
    ppid,
    startTime: lstart,
    startedAt: Number.isNaN(parsed) ? null : new Date(parsed).toISOString(),
    executable: executable?.startsWith("/") ? executable : null,
    sha256: null,
    command: argsOut ? displayCommand(argsOut.stdout.trim().split(/\s+/)) : "",
  };
  if (entry.executable) {
    entry.sha256 = digests.digest(entry.executable);
    const authority = signingAuthority(entry.executable);
    if (authority) entry.signingAuthority = authority;
    if (!entry.sha256) entry.note = "executable content not readable";
  } else {
    entry.note = `executable path not known (ps comm: ${executable ?? "none"})`;
  }
  return entry;
}

// ───────────────────────────── chain ─────────────────────────────

/** One process as the OS describes it, or null when it is gone or unreadable. */
export function describeProcess(pid: number, digests = new ExecutableDigests()): ChainEntry | null {
  if (!Number.isInteger(pid) || pid <= 0) return null;
  if (process.platform === "linux") return linuxEntry(pid, digests);
  if (process.platform === "darwin") return darwinEntry(pid, digests);
  return null;
}

/** The start time the OS reports for a pid (identity of a live process), or null when it is gone. */
export function processStartTime(pid: number): string | null {
  if (!Number.isInteger(pid) || pid <= 0) return null;
  if (process.platform === "linux") {
    const s = linuxStat(pid);
    return s ? `ticks:${s.startTicks}` : null;
  }
  if (process.platform === "darwin") {
    const r = run("/bin/ps", ["-o", "lstart=", "-p", String(pid)]);
    const t = r?.stdout.trim().replace(/\s+/g, " ");
    return t ? t : null;
  }
  return null;
}

/**
 * Walks from `fromPid` upward: each process, then its parent, up to pid 1 or
 * MAX_CHAIN_DEPTH entries. On a platform without /proc or ps, the chain holds
 * the starting pid only, with a note.
 */
export function processChain(fromPid: number, digests = new ExecutableDigests()): ChainEntry[] {
  const chain: ChainEntry[] = [];
  let pid = fromPid;
  const seen = new Set<number>();
  while (pid > 0 && chain.length < MAX_CHAIN_DEPTH && !seen.has(pid)) {
    seen.add(pid);
    const e = describeProcess(pid, digests);
    if (!e) {
      chain.push({
        pid,
        ppid: null,
        startTime: null,
        startedAt: null,
        executable: null,
        sha256: null,
        command: "",
        note:
          process.platform === "linux" || process.platform === "darwin"
            ? "process not readable (gone, or another user's)"
            : `process chains are not read on ${process.platform}`,
      });
      break;
    }
    chain.push(e);
    if (pid === 1 || e.ppid === null) break;
    pid = e.ppid;
  }
  return chain;
}

export { displayCommand };
