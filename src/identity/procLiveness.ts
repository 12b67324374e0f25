// Whether the process a row recorded (pid, start time, PID namespace, boot) still runs, as far as
// this process can tell. Three answers, because two gateways on one state directory may live in
// different PID namespaces (a container or a sandbox): a pid recorded in another namespace names
// some other process here, or none, and proves nothing either way.
import { ownPlace, type ProcessPlace, processStartTime } from "./procRead.js";

export type Liveness = "alive" | "gone" | "unknown";

/** What was recorded of a process when it registered itself (null: not read then). */
export interface RecordedProcess {
  pid: number;
  start: string | null;
  pidNs: string | null;
  boot: string | null;
}

/**
 * The decision, over what this process sees (`here`, and `startNow`, the start time of a pid in
 * its namespace). Gone only when provable: another boot (a reboot ends every process), or, in
 * our own namespace, a pid that now runs another process or none. A row from another namespace,
 * or one whose namespace or start time was never read, cannot be judged: "unknown", which no
 * caller treats as gone.
 */
export function judgeLiveness(
  rec: RecordedProcess,
  here: ProcessPlace,
  startNow: (pid: number) => string | null,
): Liveness {
  if (rec.boot !== null && here.boot !== null && rec.boot !== here.boot) return "gone";
  if (rec.start === null || rec.pidNs === null || here.pidNs === null || rec.pidNs !== here.pidNs) {
    return "unknown";
  }
  return startNow(rec.pid) === rec.start ? "alive" : "gone";
}

/** judgeLiveness from this process's own view. */
export function processLiveness(rec: RecordedProcess): Liveness {
  return judgeLiveness(rec, ownPlace(), processStartTime);
}

/**
 * Whether a process judged "unknown" runs (or ran) in another PID namespace than this one: both
 * namespaces are known and differ. False when where it ran, or where we run, was never read.
 */
export function inAnotherNamespace(rec: RecordedProcess, here: ProcessPlace = ownPlace()): boolean {
  return rec.pidNs !== null && here.pidNs !== null && rec.pidNs !== here.pidNs;
}
