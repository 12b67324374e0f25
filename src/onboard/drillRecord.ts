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
 * Whether the record's server process may be signalled: a child of the drill's own gateway
 * (`gatewayPid`, the process the drill spawned). The pid comes from a row any process of the user
 * can rewrite, and a restart signals its whole process group: one that names another process (a
 * rewritten record, or the pid reused once the server is gone) is refused in one sentence, and
 * nothing is signalled. "gone": no such process (its respawn is coming).
 */
export function signallable(pid: number, gatewayPid: number | null): "yes" | "gone" {
  const parent = describeOsProcess(pid)?.ppid;
  if (parent === undefined) return "gone";
  if (gatewayPid !== null && parent === gatewayPid) return "yes";
  throw new Error(
    `the server pid ${pid} in the drill's store (gateways.record_json) is not a process the drill's gateway${gatewayPid === null ? "" : ` (pid ${gatewayPid})`} started: something rewrote the record, so the drill sends it no signal`,
  );
}
