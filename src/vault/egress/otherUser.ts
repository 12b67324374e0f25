import type { Socket } from "node:net";
import { tcpPeerUid } from "../../identity/procPeer.js";

/**
 * The user id of the process at the other end of a connection to the proxy, when the kernel
 * lists it as another user's; null when it is this user's, or when that cannot be told (not
 * Linux, the connection already gone). Read from /proc/net/tcp, which every user can read: the
 * same look-up the console uses for its ticket (console/ticket.ts, fromAnotherUser).
 */
export function otherUserOf(s: Socket): number | null {
  if (typeof process.getuid !== "function" || !s.localAddress || !s.remoteAddress) return null;
  const uid = tcpPeerUid(
    { address: s.localAddress, port: s.localPort ?? 0 },
    { address: s.remoteAddress, port: s.remotePort ?? 0 },
  );
  return uid !== null && uid !== process.getuid() ? uid : null;
}
