// Whether a live process is, by its command line, the portcullis process a record claims it is.
// Rows in the store and files in the state directory name processes by pid (and start time), and
// any process of this user can write them: a row naming the pid of the user's editor, with that
// process's own start time, passes every liveness check. Before a sentence tells the human to end
// a pid, the process must look like portcullis's own run of the command the record claims:
// `node [node options] <portcullis package>/dist/cli/main.cjs <command> …` (how the MCP client,
// the console launcher and `unlock` start it; the `portcullis` bin is a link to that file).
// Whatever cannot be read (no /proc/PID entry, an executable or working directory this user may
// not look at) reads as not portcullis: nothing is said to end, or taken as a gateway's, on a
// guess.
import { readFileSync, readlinkSync, realpathSync } from "node:fs";
import { basename, dirname, isAbsolute, join, resolve } from "node:path";
import { describeOsProcess, isOwnExecutable, plainExe } from "./procDescribe.js";
import { parseNodeArgs } from "./tools.js";

/** The files of the build a portcullis command is started by (scripts/entry.cjs, scripts/bundle.mjs). */
const ENTRY_FILES = new Set(["main.cjs", "main.js", "gateway.cjs"]);

/**
 * Whether `pid` is a live process running `portcullis <command>` by its command line (and, when
 * `startTime` is given, the very process started then). False when it cannot be read: deny first,
 * nothing is said to end a process that cannot be told to be ours.
 */
export function runsPortcullisCommand(pid: number, command: string, startTime?: string | null): boolean {
  const p = describeOsProcess(pid);
  if (p === null || p.argv === null || p.argv.length < 3) return false;
  if (startTime != null && p.startTime !== startTime) return false;
  const exe = executableOf(p.executable, p.argv[0]!);
  if (exe === null || !isNodeExecutable(exe)) return false;
  const args = p.argv.slice(1);
  const entry = parseNodeArgs(args).entry;
  if (entry === null) return false;
  const at = args.indexOf(entry);
  return args[at + 1] === command && isPortcullisEntry(pid, entry);
}

/**
 * What the process executes, as far as it can be told. On Linux the kernel names it
 * (/proc/PID/exe); when that cannot be read (the process gone, another user's, or one that made
 * itself undumpable, as executing a file this user may not read does) it is not known, and
 * argv[0] is not asked instead: that is the process's own to write (`exec -a node`), so a process
 * whose /proc entries are closed to this user is never taken for node. On macOS `ps` gives no
 * more than a path it printed (describeDarwin), and argv[0] stands in when that is not absolute.
 */
function executableOf(executable: string | null, argv0: string): string | null {
  const exe = plainExe(executable);
  if (exe !== null) return exe;
  return process.platform === "linux" ? null : argv0;
}

/** node, nodejs, node20…, or the very executable this process runs. */
function isNodeExecutable(exe: string): boolean {
  return /^node(js)?[\d.]*$/.test(basename(exe)) || (isAbsolute(exe) && isOwnExecutable(exe));
}

/**
 * The script is one of the build's entry files in `dist/cli` of a package named portcullis (the
 * bin link resolved): a file of that name in any other tool's `dist/cli` is not ours. A relative
 * entry is resolved against the process's working directory, /proc/PID/cwd: where that cannot be
 * read (macOS has no /proc; on Linux the process is another user's or undumpable) the entry is not
 * ours (deny first).
 */
function isPortcullisEntry(pid: number, entry: string): boolean {
  let path = entry;
  if (!isAbsolute(path)) {
    let cwd: string;
    try {
      cwd = readlinkSync(`/proc/${pid}/cwd`);
    } catch {
      return false;
    }
    path = resolve(cwd, path);
  }
  try {
    path = realpathSync(path);
  } catch {
    return false;
  }
  const cli = dirname(path);
  if (!ENTRY_FILES.has(basename(path)) || basename(cli) !== "cli" || basename(dirname(cli)) !== "dist")
    return false;
  try {
    const pkg = JSON.parse(readFileSync(join(dirname(dirname(cli)), "package.json"), "utf8")) as {
      name?: unknown;
    };
    return pkg.name === "portcullis";
  } catch {
    return false;
  }
}

/**
 * The sentence for a pid a record names that is not, by its command line, the portcullis `what`
 * it claims: the process is not to be ended for it.
 */
export function notPortcullisPhrase(pid: number, what: string): string {
  return `pid ${pid} is not a portcullis ${what} by its command line (the record naming it may have been written by another process): do not end that process for this`;
}
