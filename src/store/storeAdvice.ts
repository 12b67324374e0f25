/**
 * The one thing to do about a store that cannot be used, by its cause: `doctor`'s advice, and the
 * end of the sentence any command says when the store refuses it.
 */
import { basename, dirname } from "node:path";
import { describeOsProcess, lockHolders, plainExe } from "../identity/proc.js";
import { shellWord } from "../util/shellWord.js";
import type { StoreError } from "./storeError.js";

/** The one thing to do about a store that cannot be used, by its cause. */
export function storeAdvice(e: StoreError): string {
  const file = e.path;
  const dir = dirname(file);
  // inside a command, a path as one shell word (a space, a control character: src/util/shellWord.ts)
  const f = shellWord(file);
  const d = shellWord(dir);
  switch (e.reason) {
    case "newer-schema":
      return "run the newer portcullis, the one that upgraded it, for every command on this state directory, and point each MCP client's server entry at it (a gateway this older one started refuses the store once restarted); this one could misread or damage it";
    case "older-schema":
      return `run any portcullis command once as a user who may write it (its owner: ls -l ${f} shows who): it is brought up to date then`;
    case "permissions":
      return `run portcullis as the user ${file} belongs to (ls -l ${f} shows who), or give a state directory of your own (--state-dir or PORTCULLIS_HOME)`;
    case "not-a-file":
      return `see what is at ${file} (ls -ld ${f}): the store must be a regular file; move that aside (mv ${f} ${shellWord(`${file}.not-a-store`)}) and the next command creates a new, empty store`;
    case "locked":
      return `end the program that holds it${lockHoldersOf(file)}, or finish its transaction (an sqlite3 shell inside BEGIN: COMMIT or ROLLBACK), then run doctor again`;
    case "busy":
      return "nothing: other gateways wait up to their busy timeout (10 s) for it; run doctor again in a moment to see it let go";
    case "not-a-store":
      return `it is another program's SQLite database: move it back where that program keeps it (mv ${f} …); the next command creates a portcullis store in its place`;
    case "read-only":
      return `make it and its directory writable by their owner (chmod u+w ${f} ${d}; on a read-only file system, remount it read-write)`;
    case "disk-full":
      return `free space on the file system that holds ${dir} (df -h ${d} shows what is left)`;
    case "file-size-limit":
      return "raise the file size limit of the shell or service that starts portcullis (ulimit -f unlimited; under systemd, LimitFSIZE=infinity), then run it again from there";
    case "log-deleted":
    case "files-replaced":
      return `end every portcullis process that had the store open then (portcullis status lists the gateways; fuser ${f} lists every process), then run doctor again`;
    case "io-error":
      return `check the disk (the system log, or dmesg, says what failed), then restore ${file} from a backup`;
    default:
      // not an SQLite database, damaged, or SQLite's own code: what it holds cannot be read
      return `restore ${file} from a backup of the state directory; without one, move it aside and keep it (mv ${f} ${shellWord(`${file}.damaged`)}): the next command creates a new, empty store and audit log`;
  }
}

/**
 * The processes holding the store's write lock (Linux lists them; SQLite's locks are POSIX record
 * locks), for the advice on a locked store: " (pid 4242 sqlite3)". Only the write lock's holder:
 * every process with the store open (each running gateway) holds shared locks on it. Empty where
 * they are not listed, or none but this process is.
 */
function lockHoldersOf(file: string): string {
  const pids = lockHolders(file);
  if (pids.length === 0) return "";
  const named = pids.map((pid) => {
    const p = describeOsProcess(pid);
    const exe = plainExe(p?.executable ?? null) ?? p?.argv?.[0] ?? "";
    return exe ? `pid ${pid} ${basename(exe)}` : `pid ${pid}`;
  });
  return ` (${named.join(", ")})`;
}
