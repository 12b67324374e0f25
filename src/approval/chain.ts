import { spawnSync } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import type { DigestCache } from "../identity/cache.js";
import { hashFileSync } from "../identity/hash.js";
import { describeOsProcess, processStartTime } from "../identity/proc.js";
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
   * Start time as the OS gives it, used for identity, in the one format of
   * identity/proc.ts: on Linux the clock ticks since boot (/proc/PID/stat field 22);
   * on macOS the `lstart` text.
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

/** A value the recorder knows to be secret, and what stands for it in a recorded command line. */
export interface HiddenValue {
  value: string;
  as: string;
}

function hidden(word: string, hide: readonly HiddenValue[]): string {
  let out = word;
  for (const h of hide) if (h.value) out = out.split(h.value).join(h.as);
  return out;
}

/**
 * Digests of executables keyed by (path, size, mtime): in memory, and in the store when one is
 * given. A miss is read through the gateway's content-digest cache when one is given: the
 * client's executable is often the server's runtime too (node), digested by the capture already,
 * or warmed by it (Supervisor's warmAtLaunch).
 */
export class ExecutableDigests {
  private readonly memory = new Map<string, { size: number; mtimeMs: number; sha256: string }>();

  constructor(
    private readonly db: Store | null = null,
    private readonly cache: DigestCache | null = null,
  ) {}

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
      sha256 = `sha256:${this.cache?.cachedDigest(path, readPath) ?? hashFileSync(readPath, true).sha}`;
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

// ───────────────────────────── one process ─────────────────────────────

/** macOS: /usr/bin/codesign, when present (signing is the one fact ps does not give). */
let codesignPath: string | null | undefined;
function codesign(): string | null {
  if (codesignPath === undefined) codesignPath = existsSync("/usr/bin/codesign") ? "/usr/bin/codesign" : null;
  return codesignPath;
}

/** macOS: the "Authority=" lines of `codesign -dv --verbose=2` (it reports on stderr). */
function signingAuthority(path: string): string[] | undefined {
  const tool = codesign();
  if (!tool) return undefined;
  const r = spawnSync(tool, ["-dv", "--verbose=2", path], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
    timeout: 5000,
  });
  if (r.error) return undefined;
  const lines = [...`${r.stdout ?? ""}\n${r.stderr ?? ""}`.matchAll(/^Authority=(.+)$/gm)].map((m) =>
    m[1]!.trim(),
  );
  return lines.length ? lines : undefined;
}

/** One process as the OS describes it (read by identity/proc.ts), or null when it is gone or unreadable. */
export function describeProcess(
  pid: number,
  digests = new ExecutableDigests(),
  hide: readonly HiddenValue[] = [],
): ChainEntry | null {
  const os = describeOsProcess(pid);
  if (!os) return null;
  const notes: string[] = [];
  if (os.executableProblem) notes.push(os.executableProblem);
  let executable = os.executable;
  let sha256: string | null = null;
  if (executable) {
    const deleted = executable.endsWith(" (deleted)");
    // /proc/PID/exe opens the very file the process runs, even when it was replaced on disk.
    const open = os.executableOpenPath;
    sha256 = digests.digest(executable, (existsSync(executable) && !deleted) || !open ? executable : open);
    if (!sha256 && open) sha256 = digests.digest(open);
    if (!sha256) notes.push("executable content not readable");
    if (deleted) notes.push("the executable was deleted or replaced on disk after launch");
  } else {
    executable = null;
  }
  if (os.argv === null) notes.push("command line not readable");
  const entry: ChainEntry = {
    pid,
    ppid: os.ppid,
    startTime: os.startTime,
    startedAt: os.startedAt,
    executable,
    sha256,
    // known secrets out of each word before the line is shortened for display (a cut could leave
    // a secret's start behind)
    command: os.argv ? displayCommand(hide.length ? os.argv.map((a) => hidden(a, hide)) : os.argv) : "",
  };
  if (process.platform === "darwin" && executable) {
    const authority = signingAuthority(executable);
    if (authority) entry.signingAuthority = authority;
  }
  if (notes.length) entry.note = notes.join("; ");
  return entry;
}

// ───────────────────────────── chain ─────────────────────────────

/**
 * Each process from `fromPid` upward, as `describe` reads it, up to pid 1 or MAX_CHAIN_DEPTH
 * entries; a process that cannot be read ends the walk, and `unreadable` is given its pid.
 */
function walkChain<T extends { ppid: number | null }>(
  fromPid: number,
  describe: (pid: number) => T | null,
  unreadable: (pid: number) => T | null = () => null,
): T[] {
  const chain: T[] = [];
  let pid = fromPid;
  const seen = new Set<number>();
  while (pid > 0 && chain.length < MAX_CHAIN_DEPTH && !seen.has(pid)) {
    seen.add(pid);
    const e = describe(pid);
    if (!e) {
      const instead = unreadable(pid);
      if (instead) chain.push(instead);
      break;
    }
    chain.push(e);
    if (pid === 1 || e.ppid === null) break;
    pid = e.ppid;
  }
  return chain;
}

/**
 * The executables of the chain upward from `fromPid` that can be read under their own name, for
 * digesting ahead of the run (the chain itself is read again when the run starts).
 */
export function chainExecutables(fromPid: number): string[] {
  return walkChain(fromPid, describeOsProcess).flatMap((os) =>
    os.executable && !os.executable.endsWith(" (deleted)") ? [os.executable] : [],
  );
}

/** An entry for a process that could not be read: its pid (0: none known) and why. */
function unreadEntry(pid: number, note: string): ChainEntry {
  return {
    pid,
    ppid: null,
    startTime: null,
    startedAt: null,
    executable: null,
    sha256: null,
    command: "",
    note,
  };
}

/** The chain of a client whose process could not be found: one entry, no pid, the reason. */
export function unknownClientChain(why: string): ChainEntry[] {
  return [unreadEntry(0, why)];
}

/**
 * Walks from `fromPid` upward: each process, then its parent, up to pid 1 or
 * MAX_CHAIN_DEPTH entries. On a platform without /proc or ps, the chain holds
 * the starting pid only, with a note.
 */
export function processChain(
  fromPid: number,
  digests = new ExecutableDigests(),
  /** values the caller knows to be secret (the listen token): replaced in the command lines */
  hide: readonly HiddenValue[] = [],
): ChainEntry[] {
  return walkChain(
    fromPid,
    (pid) => describeProcess(pid, digests, hide),
    (pid) =>
      unreadEntry(
        pid,
        process.platform === "linux" || process.platform === "darwin"
          ? "process not readable (gone, or another user's)"
          : `process chains are not read on ${process.platform}`,
      ),
  );
}

export { displayCommand, processStartTime };
