// One generation of a launched server (src/supervisor/supervisor.ts): the code that answers calls
// during one execution epoch, its execution record, and the minting of its epoch.
import type { ChildProcessWithoutNullStreams } from "node:child_process";
import { ulid } from "ulid";
import {
  type ExecutionRecord,
  finishRecord,
  listDescendants,
  type StaticIdentity,
} from "../identity/index.js";
import type { SpawnCredentials } from "../vault/delivery.js";
import type { EpochReason, LinkGeneration } from "./link.js";
import { type SettledProcess, settledFrom } from "./replacement.js";
import type { Channel } from "./spawn.js";

/**
 * One generation of the supervised server: the code that can answer calls
 * during one execution epoch. Only the supervisor creates generations, so only
 * the supervisor mints epochs — never the server's own words.
 */
export interface Generation extends LinkGeneration {
  epoch: string;
  record: ExecutionRecord;
  static: StaticIdentity;
  child: ChildProcessWithoutNullStreams;
  /** why this epoch exists */
  reason: Extract<EpochReason, "launch" | "respawn" | "restart" | "replaced">;
  /**
   * Processes observed once the worker answered (still alive). One of them running other code
   * (execve) is a replacement; one going away is a replacement once its parent has started
   * another process of the same executable in its place (checkReplacement). Before that, what
   * is seen of the tree is ReplacementDetector's provisional set (lookEarly).
   */
  settled: SettledProcess[] | null;
  /** settled processes that went away with nothing (yet) in their place */
  departed: SettledProcess[];
  /** the gateway's pipes as the launched process held them at its spawn; null when not known */
  channel: Channel | null;
  /**
   * Non-null while a settled process that held the gateway's pipes is gone and nothing has been
   * seen in its place (checkReplacement): why. Whatever reads a request written now is not known
   * (a watcher may start new code that reads it), so guarded requests wait.
   */
  codeUnknown: string | null;
  alive: boolean;
}

/**
 * A new epoch (a new ulid) for `child` running the code `stat` describes, with its execution
 * record: the processes under `child` now, started at `startedAt`. Called by the supervisor only,
 * for a launch it made or a replacement it observed.
 */
export function newGeneration(
  stat: StaticIdentity,
  child: ChildProcessWithoutNullStreams,
  reason: Generation["reason"],
  startedAt: string,
  channel: Channel | null,
  spawnCredentials: SpawnCredentials | undefined,
): Generation {
  const epoch = ulid();
  const record = finishRecord(stat, {
    epoch,
    processId: child.pid!,
    startedAt,
    processes: safeDescendants(child.pid!),
  });
  return {
    epoch,
    record,
    static: stat,
    child,
    reason,
    settled: null,
    departed: [],
    channel,
    codeUnknown: null,
    alive: true,
    spawnCredentials,
  };
}

/**
 * Records the processes that answer for `gen`, and its record is made again with them. Called
 * when the worker has answered its first request, so wrappers (npx, sh) have started the real
 * server by then.
 */
export function settleGeneration(gen: Generation): void {
  const processes = safeDescendants(gen.child.pid!);
  gen.settled = settledFrom(processes, gen.channel);
  gen.record = finishRecord(gen.static, {
    epoch: gen.epoch,
    processId: gen.child.pid!,
    startedAt: gen.record.startedAt,
    processes,
  });
}

function safeDescendants(pid: number) {
  try {
    return listDescendants(pid);
  } catch {
    return [];
  }
}
