/**
 * Step 1 of the drill: the execution record its own fresh gateway wrote for the first epoch (the
 * server's pid, which the default rebuild signals, and its entry). The drill's store is a
 * throwaway one, but any process of the user can write it, the server the drill launched among
 * them: the row is read through storedJson, and one that is not a record with a server pid fails
 * the step in one sentence naming the column, not in JSON.parse's words (or a TypeError).
 */
import { describeOsProcess } from "../identity/procDescribe.js";
import type { Store } from "../store/db.js";
import { type StoredShape, storedJson } from "../store/storedJson.js";
import { type Leader, signalLaunchedGroup } from "../supervisor/groupSignal.js";

export interface DrillRecord {
  /** the server process the supervisor started: its process group is what a restart signals */
  processId: number;
  entry?: { path?: unknown };
}

/**
 * A server's pid: an integer above 1. Signalled as a process group (`kill(-pid)`), 0 would be the
 * drill's own group and 1 every process the user may signal: never taken from a rewritten row.
 */
const A_DRILL_RECORD: StoredShape<DrillRecord> = {
  is: (v): v is DrillRecord => {
    if (typeof v !== "object" || v === null || Array.isArray(v)) return false;
    const { processId, entry } = v as Record<string, unknown>;
    return (
      Number.isSafeInteger(processId) &&
      (processId as number) > 1 &&
      (entry === undefined || (typeof entry === "object" && entry !== null))
    );
  },
  words: "an execution record with a server pid",
};

/** The record of `epoch` in the gateway's row, or an Error whose message is the step's one sentence. */
export function drillRecord(store: Store, epoch: string): DrillRecord {
  const row = store.prepare("SELECT record_json FROM gateways WHERE epoch = ?").get(epoch) as
    | { record_json: unknown }
    | undefined;
  if (row === undefined)
    throw new Error(
      `the gateway's row in the drill's store no longer names epoch ${epoch}: something rewrote it, so the drill cannot say which server process it started`,
    );
  const record = storedJson(row.record_json, "gateways", "record_json", A_DRILL_RECORD);
  if (!record.ok)
    throw new Error(
      // (a parse error quotes the text it could not read: `drill` writes each line through safeText)
      `the gateway's row in the drill's store cannot be read (${record.why}): something rewrote it, so the drill cannot say which server process it started`,
    );
  return record.value;
}

/** The entry's path as the step shows it. */
export function entryPath(record: DrillRecord): string | null {
  return typeof record.entry?.path === "string" ? record.entry.path : null;
}

/**
 * The record's server process as the OS showed it when step 1 read the record: its parent and its
 * start time, from one read (null: no process had the pid). The restart (step 4) signals its
 * group by that start time, not by whatever holds the pid then: the server may have exited, been
 * reaped by the gateway and its pid given to another process since, a child of the gateway's (its
 * next server) as much as anyone's.
 */
export interface SeenServer {
  pid: number;
  seen: { ppid: number; startTime: string } | null;
}

export function seenServer(record: DrillRecord): SeenServer {
  const p = describeOsProcess(record.processId);
  return { pid: record.processId, seen: p === null ? null : { ppid: p.ppid, startTime: p.startTime } };
}

/**
 * Sends `signal` to the group of the server seen at step 1, a child of the drill's own gateway
 * (`gatewayPid`, the process the drill spawned). The pid comes from a row any process of the user
 * can rewrite, and a restart signals its whole process group: a record that named another process
 * at step 1 is refused in one sentence, and nothing is signalled. The signal itself goes through
 * the supervisor's own check (groupSignal.ts), against the start time seen at step 1: "gone" when
 * the pid names another process now, or the server is reaped (what is left of its group is its
 * gateway's to end, which saw the reap) — its respawn is coming.
 */
export function signalServerGroup(
  server: SeenServer,
  gatewayPid: number | null,
  signal: NodeJS.Signals,
): "sent" | "gone" {
  const { pid, seen } = server;
  if (seen === null) return "gone";
  if (gatewayPid === null || seen.ppid !== gatewayPid)
    throw new Error(
      `the server pid ${pid} in the drill's store (gateways.record_json) is not a process the drill's gateway${gatewayPid === null ? "" : ` (pid ${gatewayPid})`} started: something rewrote the record, so the drill sends it no signal`,
    );
  // not reaped by this process: with no holder, nothing of its group is known to be the drill's
  const leader: Leader = { pid, startTime: seen.startTime, leftAtExit: "unseen" };
  return signalLaunchedGroup(leader, signal) === "sent" ? "sent" : "gone";
}
