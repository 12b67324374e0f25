// What is left of a process group once its leader is gone (Linux /proc), for the supervisor's
// signals to a launched server's group (src/supervisor/groupSignal.ts): which processes still
// carry the group's number, and whether one of them is still there, the same process.
import { readdirSync } from "node:fs";
import { readStat, validPid } from "./procRead.js";

/** A process that carried a group's number (as its group or its session), named by pid and start time. */
export interface GroupMember {
  pid: number;
  startTime: string;
}

/**
 * Every process whose process group or session is numbered `pgid` (a group lies within one
 * session, and the session of a spawned leader that called setsid bears the same number): null
 * where /proc cannot be read (not Linux). One pass over /proc: read at a server's exit, never on
 * a request's path.
 */
export function carriersOf(pgid: number): GroupMember[] | null {
  if (process.platform !== "linux" || !validPid(pgid)) return null;
  let names: string[];
  try {
    names = readdirSync("/proc");
  } catch {
    return null;
  }
  const out: GroupMember[] = [];
  for (const name of names) {
    const c = name.charCodeAt(0);
    if (c < 48 || c > 57) continue;
    const pid = Number(name);
    const st = readStat(pid);
    if (st !== null && (st.pgid === pgid || st.session === pgid)) out.push({ pid, startTime: st.startTime });
  }
  return out;
}

/** Whether `member` is still there (zombie or alive, the same start time) and still carries `pgid`. */
export function stillCarries(member: GroupMember, pgid: number): boolean {
  const st = readStat(member.pid);
  return st !== null && st.startTime === member.startTime && (st.pgid === pgid || st.session === pgid);
}
