// Signals to a launched server's process group, sent by its number: the pid of the process the
// gateway spawned as its leader (spawn.ts). While any process of the group is left, that number
// is given to no new process; once the leader is reaped and the group is empty, the next process
// the machine forks may get it and lead a group of its own (a detached spawn, setsid), and a
// signal sent by the number would reach that group. Every signal the supervisor sends a group it
// launched goes through here and is checked against the leader's start time, read at the spawn,
// while the number was certainly the leader's (a child is not reaped before the spawn returns).
import type { ChildProcess } from "node:child_process";
import { pidHolderStartTime } from "../identity/proc.js";

/** Each spawned leader's start time, read at the spawn. */
const leaders = new WeakMap<ChildProcess, string | null>();

/** Records `child`'s start time: called right after its spawn, before it can have been reaped. */
export function recordLeader(child: ChildProcess): void {
  if (child.pid !== undefined) leaders.set(child, pidHolderStartTime(child.pid));
}

/** `child`'s start time as read at its spawn (recordLeader); null when none was read. */
export function leaderStartTime(child: ChildProcess): string | null {
  return leaders.get(child) ?? null;
}

/** What became of a signal to a launched group: `another`, its number names someone else's now. */
export type GroupSignalled = "sent" | "no-member" | "another";

/**
 * Sends `signal` (0: only asks whether it has members) to group `pgid`, launched with a leader
 * that started at `startTime`, unless the number names another process now. The process holding
 * the number is checked: the leader (alive, or a zombie not yet reaped), or none (the leader was
 * reaped; what is left of a group of that number is ours, since the number could not be taken
 * while any of it was left) lets the signal go; a holder with another start time means the
 * leader was reaped, the group emptied and the number was taken. Between the read and the kill a
 * new process could still take a number found free: a fork and a setsid within two system calls.
 */
export function signalLaunchedGroup(
  pgid: number,
  startTime: string | null,
  signal: NodeJS.Signals | 0,
): GroupSignalled {
  const holder = pidHolderStartTime(pgid);
  if (holder !== null && holder !== startTime) return "another";
  try {
    process.kill(-pgid, signal);
    return "sent";
  } catch {
    return "no-member"; // ESRCH: nothing is left in the group
  }
}

/** Sends `signal` to the process group `child` leads (spawned by spawnServer), checked as above. */
export function signalChildGroup(child: ChildProcess, signal: NodeJS.Signals): GroupSignalled {
  if (child.pid === undefined) return "no-member"; // the spawn itself failed
  return signalLaunchedGroup(child.pid, leaderStartTime(child), signal);
}
