import type { Socket } from "node:net";
import { tcpPeerUid } from "./proc.js";

/**
 * The user id of the process at the other end of a TCP connection on this machine, when the
 * kernel lists it as another user's; null when it is this user's, or when that cannot be told
 * (not Linux, the connection already gone, the other end not on this machine). Either way
 * round: for a connection accepted (the egress proxy's) it is the connecting process's user,
 * for one made (to a server at `http://127.0.0.1:PORT`) the listening process's. Read from
 * /proc/net/tcp, which every user can read. Loopback is this machine, not this user.
 */
export function otherUserOf(s: Socket): number | null {
  if (typeof process.getuid !== "function" || !s.localAddress || !s.remoteAddress) return null;
  const uid = tcpPeerUid(
    { address: s.localAddress, port: s.localPort ?? 0 },
    { address: s.remoteAddress, port: s.remotePort ?? 0 },
  );
  return uid !== null && uid !== process.getuid() ? uid : null;
}

/**
 * For a connection this process accepted on this machine, where only this user's processes are
 * to be served: who else is at its other end, or null when the kernel lists it as a live socket
 * of this user, or when there is no table to read (not Linux). Stricter than otherUserOf, which
 * lets through what it cannot tell: `{ unlisted: true }` when the other end is not listed as a
 * live socket at all. A process that wrote its request and closed its socket before this one
 * accepted the connection leaves such an end (no owner is listed for it), and the request it left
 * would otherwise be read and acted on unchecked; so would every connection on a system whose
 * /proc/net/tcp cannot be read. The console's ticket (console/ticket.ts, fromAnotherUser) asks it
 * too: an unlisted end's attempts are not the ticket holder's.
 */
export function acceptedFromOther(s: Socket): { uid: number } | { unlisted: true } | null {
  if (process.platform !== "linux" || typeof process.getuid !== "function") return null;
  const uid =
    s.localAddress && s.remoteAddress
      ? tcpPeerUid(
          { address: s.localAddress, port: s.localPort ?? 0 },
          { address: s.remoteAddress, port: s.remotePort ?? 0 },
        )
      : null;
  if (uid === process.getuid()) return null;
  return uid === null ? { unlisted: true } : { uid };
}
