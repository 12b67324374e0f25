// Sockets: which process is on the other end of a TCP connection from this machine (the HTTP front's
// client), found as the kernel lists the connection.
import { readdirSync, readlinkSync } from "node:fs";
import { readProcFile } from "./procRead.js";

/** One end of a TCP connection: its address as node reports it, and its port. */
export interface TcpEnd {
  address: string;
  port: number;
}

/**
 * Linux: the pid of the process on the other end of a TCP connection from this machine (a
 * loopback address or one of its own interface addresses), seen from this end (`ours`: this
 * socket's local end; `theirs`: its remote end). Null when it is not exactly one process: see
 * tcpPeerHolders.
 */
export function pidOfTcpPeer(ours: TcpEnd, theirs: TcpEnd): number | null {
  const holders = tcpPeerHolders(ours, theirs);
  return holders?.length === 1 ? holders[0]! : null;
}

/**
 * Linux: the processes holding the other end of a TCP connection, found as the kernel lists it:
 * the row of /proc/net/tcp or tcp6 whose local end is `theirs` and whose remote end is `ours`,
 * addresses and ports both (ports alone are not enough: another process can bind the same port
 * on another loopback address, 127.0.0.2, and be taken for this one), then every process holding
 * a descriptor to that row's socket inode under /proc/PID/fd. Null when the socket is not found
 * (not Linux, the connection already gone, more than one row); empty when no process this one
 * can read holds it (another user's, or gone meanwhile); more than one pid when the socket is
 * shared (a forked child holds its parent's sockets), and then no one of them is the client.
 */
export function tcpPeerHolders(ours: TcpEnd, theirs: TcpEnd): number[] | null {
  return tcpPeerSocket(ours, theirs)?.holders ?? null;
}

/** The other end's socket, as tcpPeerHolders finds it: its descriptor's link text and holders. */
export interface PeerSocket {
  /** `socket:[INODE]`, as /proc/PID/fd/N links to it */
  target: string;
  holders: number[];
}

/** tcpPeerHolders, with the socket found (for tcpPeerStillHeldBy). */
export function tcpPeerSocket(ours: TcpEnd, theirs: TcpEnd): PeerSocket | null {
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
  return { target, holders: pids.filter((pid) => holds(pid, target)).map(Number) };
}

/**
 * Whether process `pid` still holds the socket an earlier look found: its descriptors alone, not
 * the kernel's tables again. While this end of the connection stays open its four-tuple cannot
 * name another connection, so the socket found is still the other end; and the question asked
 * after a pid's start time is read is only whether that process holds it still. Reading the
 * tables and every process's descriptors again cost as much as the first look (tens of ms per
 * connection on the front's event loop).
 */
export function tcpPeerStillHeldBy(found: PeerSocket, pid: number): boolean {
  return holds(String(pid), found.target);
}

/** Whether process `pid` has a descriptor open to `target` (false when its fds cannot be read). */
function holds(pid: string, target: string): boolean {
  let fds: string[];
  try {
    fds = readdirSync(`/proc/${pid}/fd`);
  } catch {
    return false; // gone, or another user's
  }
  for (const fd of fds) {
    try {
      if (readlinkSync(`/proc/${pid}/fd/${fd}`) === target) return true;
    } catch {
      // closed meanwhile
    }
  }
  return false;
}

/**
 * Linux: the user id owning the other end of a TCP connection from this machine, as the kernel
 * lists it (readable for every user's sockets, unlike their descriptors). Null when the socket is
 * not found (not Linux, the connection already gone, more than one row). A connection the other
 * end's listening process has not accepted yet counts too: it is listed established with no inode
 * (no descriptor holds it yet) and its listener's uid. Left out, a server that accepts late (busy,
 * or stopped) was "not found" when the gateway connected to it, and was sent the request, headers
 * and all, which it read on accepting. Rows with no inode in other states are still left out: a
 * socket in TIME_WAIT, or closed by its process and waiting for the last FIN, is listed with uid 0
 * whoever owned it.
 */
export function tcpPeerUid(ours: TcpEnd, theirs: TcpEnd): number | null {
  if (process.platform !== "linux") return null;
  return tcpSocketRow(theirs, ours, true)?.uid ?? null;
}

/** The inode of the one socket whose local end is `local` and remote end `remote`, or null. */
function tcpSocketInode(local: TcpEnd, remote: TcpEnd): string | null {
  return tcpSocketRow(local, remote, false)?.inode ?? null;
}

/** An IPv4 end as procNetEnds spells it: eight hex digits, ":", four. */
const IPV4_END_LENGTH = 13;

/** /proc/net/tcp's state of an established connection */
const ESTABLISHED = "01";

/**
 * The one socket whose local end is `local` and remote end `remote`: its inode and owner's uid.
 * `unaccepted`: also one established and not accepted yet (inode "0"), listed with its listener's uid.
 */
function tcpSocketRow(
  local: TcpEnd,
  remote: TcpEnd,
  unaccepted: boolean,
): { inode: string; uid: number } | null {
  const locals = new Set(procNetEnds(local));
  const remotes = new Set(procNetEnds(remote));
  if (locals.size === 0 || remotes.size === 0) return null;
  const found = new Map<string, number>();
  // tcp lists IPv4 sockets, tcp6 IPv6 ones (an IPv4 peer of a dual-stack socket as ::ffff:a.b.c.d):
  // an end spelled only in IPv6 cannot be in tcp. Each read walks every bucket of the kernel's
  // socket tables, whatever it lists (about 11 ms a file on a 2-core VM with 24 GB).
  const tables = [...locals].some((e) => e.length === IPV4_END_LENGTH)
    ? ["/proc/net/tcp", "/proc/net/tcp6"]
    : ["/proc/net/tcp6"];
  for (const table of tables) {
    // A connection's four-tuple is unique in the kernel's table of connections, which both files
    // list, whatever the sockets' families: found in the first, it is in no other.
    if (found.size > 0) break;
    const text = readProcFile(table);
    if (!text) continue;
    for (const line of text.split("\n").slice(1)) {
      // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
      const f = line.trim().split(/\s+/);
      if (f.length < 10) continue;
      const noInode = f[9] === "0";
      if (noInode && !(unaccepted && f[3] === ESTABLISHED)) continue;
      if (locals.has(f[1]!.toUpperCase()) && remotes.has(f[2]!.toUpperCase()))
        // an unaccepted one by its row, each as its own socket (they share inode "0")
        found.set(noInode ? `unaccepted ${table} ${f[0]}` : f[9]!, Number(f[7]));
    }
  }
  if (found.size !== 1) return null;
  const [inode, uid] = [...found][0]!;
  return Number.isInteger(uid) ? { inode, uid } : null;
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
