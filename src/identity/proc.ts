// Processes seen from outside: Linux /proc, macOS ps. The only module that reads either (the
// supervisor's replacement check, the approval layer's process chain, gateway liveness and the
// identity capture all come here), with one start-time format: on Linux the decimal clock ticks
// since boot of /proc/PID/stat field 22, on macOS ps's `lstart` text with single spaces. Opaque,
// stable for a process's lifetime, compared only for equality. Synchronous and cheap enough for
// the request forwarding path.
//
// This file is the module's one door; the reading is done by the files behind it, one concern
// each: procRead.ts (procfs files, ps, the stat line, start times), procDescribe.ts (one process:
// what it is and what it runs), procProbe.ts (the forwarding path's cheap re-reads), procTree.ts
// (a process's descendants and children), procGroup.ts (what is left of a process group once its
// leader is gone), procPeer.ts (the process behind a TCP connection),
// procLiveness.ts (whether a recorded process still runs, across PID namespaces and boots),
// procPortcullis.ts (whether a recorded pid runs portcullis, by its command line),
// procLocks.ts (the processes holding a store's write lock), procSockets.ts (the abstract unix
// sockets a process holds: the marks a gateway vouches for its approval requests with) and
// procLimits.ts (this process's descriptor limit, which caps the HTTP front's connections).
export { describeOsProcess, execImage, isOwnExecutable, type OsProcess, plainExe } from "./procDescribe.js";
export { carriersOf, type GroupMember, stillCarries } from "./procGroup.js";
export { openFilesSoftLimit } from "./procLimits.js";
export {
  inAnotherNamespace,
  judgeLiveness,
  type Liveness,
  NAMESPACE_UNREAD,
  processLiveness,
  type RecordedProcess,
  recordedPlace,
} from "./procLiveness.js";
export { lockHolders } from "./procLocks.js";
export {
  type PeerSocket,
  pidOfTcpPeer,
  procNetEnds,
  type TcpEnd,
  tcpPeerHolders,
  tcpPeerSocket,
  tcpPeerStillHeldBy,
  tcpPeerUid,
} from "./procPeer.js";
export { notPortcullisPhrase, runsPortcullisCommand } from "./procPortcullis.js";
export { type Probed, StartTimeProbe } from "./procProbe.js";
export {
  dead,
  descriptorOf,
  fileSizeLimit,
  ownPlace,
  type ProcessPlace,
  parseProcStat,
  pidHolderStartTime,
  processStartTime,
  readStat,
  type StatLine,
} from "./procRead.js";
export { heldAbstractSockets } from "./procSockets.js";
export { type ListOptions, listChildren, listDescendants } from "./procTree.js";
