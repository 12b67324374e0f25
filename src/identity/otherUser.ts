import type { Socket } from "node:net";
import { tcpPeerUid } from "./proc.js";

/**
 * The user id of the process at the other end of a TCP connection on this machine, when the
 * kernel lists it as another user's; null when it is this user's, or when that cannot be told
 * (not Linux, the connection already gone, the other end not on this machine). Either way
 * round: for a connection accepted (the egress proxy's) it is the connecting process's user,
 * for one made (to a server at `http://127.0.0.1:PORT`) the listening process's. Read from
 * /proc/net/tcp, which every user can read: the look-up the console uses for its ticket
 * (console/ticket.ts, fromAnotherUser). Loopback is this machine, not this user.
 */
export function otherUserOf(s: Socket): number | null {
  if (typeof process.getuid !== "function" || !s.localAddress || !s.remoteAddress) return null;
  const uid = tcpPeerUid(
    { address: s.localAddress, port: s.localPort ?? 0 },
    { address: s.remoteAddress, port: s.remotePort ?? 0 },
  );
  return uid !== null && uid !== process.getuid() ? uid : null;
}
