/**
 * The names of the abstract unix sockets (Linux) a process holds open: what a process can show
 * about itself that no other process of the same user can forge. A row in the store, a file in
 * the state directory, a process's own command line (for another process that starts one) can be
 * written by any process of the user; an abstract socket has no file to rename or rewrite, its name
 * is held by the one socket bound to it, and only the process itself puts a socket in its file
 * descriptor table (another one can only ptrace it, which docs/security.md lists apart). A gateway
 * binds one per approval request it makes (src/approval/vouch.ts); `approve --next` and the lists
 * read them here to tell its rows from rows another process wrote.
 *
 * Read from /proc/PID/fd (the socket inodes) and /proc/PID/net/unix (the table of the process's
 * own network namespace, which names each socket's inode). Null where that cannot be read: not
 * Linux, the process gone, /proc closed to this user (hidepid): the caller takes that as "holds
 * none", deny first.
 */
import { readdirSync, readFileSync, readlinkSync } from "node:fs";

/** The abstract socket names (without the leading NUL) process `pid` holds, or null when they cannot be read. */
export function heldAbstractSockets(pid: number): Set<string> | null {
  if (process.platform !== "linux" || !Number.isSafeInteger(pid) || pid <= 0) return null;
  const inodes = new Set<string>();
  try {
    for (const fd of readdirSync(`/proc/${pid}/fd`)) {
      let target: string;
      try {
        target = readlinkSync(`/proc/${pid}/fd/${fd}`);
      } catch {
        continue; // closed meanwhile
      }
      if (target.startsWith("socket:[") && target.endsWith("]")) inodes.add(target.slice(8, -1));
    }
  } catch {
    return null;
  }
  if (inodes.size === 0) return new Set();
  let table: string;
  try {
    table = readFileSync(`/proc/${pid}/net/unix`, "latin1");
  } catch {
    return null;
  }
  const names = new Set<string>();
  // "Num RefCount Protocol Flags Type St Inode Path": an abstract name is shown with '@' for its
  // leading NUL, and for each NUL after it (Node pads the address to its full length)
  for (const line of table.split("\n")) {
    const fields = line.split(" ").filter((f) => f !== "");
    if (fields.length < 8) continue;
    const [inode, path] = [fields[6]!, fields[7]!];
    if (!path.startsWith("@") || !inodes.has(inode)) continue;
    let end = path.length;
    while (end > 1 && path[end - 1] === "@") end--;
    names.add(path.slice(1, end));
  }
  return names;
}
