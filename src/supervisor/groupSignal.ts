// Signals to a launched server's process group, sent by its number: the pid of the process the
// gateway spawned as its leader (spawn.ts). While any process of the group (or of the session the
// leader opened, which bears the same number) is left, that number is given to no new process;
// once the leader is reaped and they are all gone, the next process the machine forks may get it
// and lead a group of its own (a detached spawn, setsid), and a signal sent by the number would
// reach that group. Every signal the supervisor sends a group it launched goes through here and
// is checked against the leader's start time, read at the spawn, while the number was certainly
// the leader's (a child is not reaped before the spawn returns); and, once the leader is reaped,
// against what was left of its group at that moment (see signalLaunchedGroup).
import type { ChildProcess } from "node:child_process";
import { carriersOf, type GroupMember, pidHolderStartTime, stillCarries } from "../identity/proc.js";

/** A launched group's leader, as signalLaunchedGroup checks its group's number against. */
export interface Leader {
  /** its pid: the number of its process group (and session) */
  readonly pid: number;
  /** its start time, read while the pid was surely its own; null when none could be read */
  readonly startTime: string | null;
  /**
   * What carried its number when it was reaped (recordLeader): "unseen" until then, and for a
   * leader this process did not spawn; "unread" where the OS gives no such list (not Linux).
   */
  leftAtExit: readonly GroupMember[] | "unseen" | "unread";
}

/** Each spawned process's leader record, made at the spawn. */
const leaders = new WeakMap<ChildProcess, Leader>();

/**
 * Records `child`'s start time: called right after its spawn, before it can have been reaped.
 * Its exit listener, the first one the child gets, reads what is left of its group in the same
 * turn as the reap (Node emits `exit` from the handler that reaped it), before anything else of
 * the gateway runs, so before its number can have been signalled as a reaped leader's.
 */
export function recordLeader(child: ChildProcess): void {
  const pid = child.pid;
  if (pid === undefined) return;
  const leader: Leader = { pid, startTime: pidHolderStartTime(pid), leftAtExit: "unseen" };
  leaders.set(child, leader);
  child.once("exit", () => {
    leader.leftAtExit = leftInGroup(pid);
  });
}

/** What carries `pgid` just after its leader was reaped; [] at once when nothing of its group is left. */
function leftInGroup(pgid: number): readonly GroupMember[] | "unread" {
  try {
    process.kill(-pgid, 0);
  } catch (e) {
    // An empty group can never fill again as ours: no process can join a group that is gone, nor
    // lead one under a number still held as a session's (a reserved pid is given to no process).
    // EPERM: members are left that this process may not signal (a setuid program's): read them.
    if ((e as NodeJS.ErrnoException).code === "ESRCH") return [];
  }
  return carriersOf(pgid) ?? "unread";
}

/** `child`'s leader record (recordLeader); null when none was made (its spawn failed). */
export function leaderOf(child: ChildProcess): Leader | null {
  return leaders.get(child) ?? null;
}

/**
 * What became of a signal to a launched group: `another`, its number names someone else's
 * process now; `no-member`, nothing of the launch is left in the group (whatever may carry the
 * number now is not ours).
 */
export type GroupSignalled = "sent" | "no-member" | "another";

/**
 * Sends `signal` (0: only asks whether it has members) to `leader`'s group, unless the number
 * names another process's now. The process holding the number is checked first: the leader
 * (alive, or a zombie not yet reaped) lets the signal go, a holder with another start time means
 * the leader was reaped, its group emptied and the number was taken.
 *
 * No holder: the leader was reaped. What is left of a group of that number is ours only if the
 * number stayed reserved since the reap, and one of the processes that carried it then still
 * carrying it (the same pid and start time, in the group or the session) proves it did: no
 * moment came when it was free. With none of them left, any process in the group now joined a
 * group led by a stranger that took the freed number and exited (its own children), or was forked
 * after the reap by a process of ours that has since exited: the two cannot be told apart (both
 * started after our leader, in a session bearing its number, their parents gone), and nothing is
 * sent. Where no list was read (not Linux), the group is signalled, as holding nothing but ours.
 *
 * Between the reads and the kill a new process could still take a number found free: a fork and
 * a setsid within two system calls.
 */
export function signalLaunchedGroup(leader: Leader, signal: NodeJS.Signals | 0): GroupSignalled {
  const pgid = leader.pid;
  const holder = pidHolderStartTime(pgid);
  if (holder !== null && holder !== leader.startTime) return "another";
  if (holder === null && !oursLeft(leader)) return "no-member";
  try {
    process.kill(-pgid, signal);
    return "sent";
  } catch {
    return "no-member"; // ESRCH: nothing is left in the group
  }
}

/** Whether a reaped leader's group still holds something of ours (signalLaunchedGroup). */
function oursLeft(leader: Leader): boolean {
  const left = leader.leftAtExit;
  // "unseen": not reaped by us (or not yet told): nothing of its group is known to be ours
  if (left === "unseen") return false;
  if (left === "unread") return true;
  return left.some((m) => stillCarries(m, leader.pid));
}

/** Sends `signal` to the process group `child` leads (spawned by spawnServer), checked as above. */
export function signalChildGroup(child: ChildProcess, signal: NodeJS.Signals): GroupSignalled {
  const leader = leaderOf(child);
  if (leader === null) return "no-member"; // the spawn itself failed
  return signalLaunchedGroup(leader, signal);
}
