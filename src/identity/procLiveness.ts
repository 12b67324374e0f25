// Whether the process a row recorded (pid, start time, PID namespace, boot) still runs, as far as
// this process can tell. Three answers, because two gateways on one state directory may live in
// different PID namespaces (a container or a sandbox): a pid recorded in another namespace names
// some other process here, or none, and proves nothing either way.
import { ownPlace, type ProcessPlace, processStartTime } from "./procRead.js";

export type Liveness = "alive" | "gone" | "unknown";

/**
 * What was recorded of a process when it registered itself. `start` and `boot` null: not read
 * then. `pidNs` null: written before namespaces were recorded (store migrations 17 and 18);
 * NAMESPACE_UNREAD: written by a process that could not read its own.
 */
export interface RecordedProcess {
  pid: number;
  start: string | null;
  pidNs: string | null;
  boot: string | null;
}

/**
 * What a process records as its PID namespace when it cannot read its own (a /proc that is not
 * its namespace's, in a sandbox; a platform with neither /proc nor ps's single table). A row
 * never gets a null namespace from a current version: null keeps meaning "written before
 * namespaces were recorded", which is judged by pid; a row whose writer could not tell where its
 * pid means something can never be (it may be another namespace's pid).
 */
export const NAMESPACE_UNREAD = "unknown";

/** This process's place as the rows it writes record it: the namespace never null. */
export function recordedPlace(here: ProcessPlace = ownPlace()): { pidNs: string; boot: string | null } {
  return { pidNs: here.pidNs ?? NAMESPACE_UNREAD, boot: here.boot };
}

/**
 * The decision, over what this process sees (`here`, and `startNow`, the start time of a pid in
 * its namespace). Gone only when provable: another boot (a reboot ends every process), or, in
 * our own namespace, a pid that now runs another process or none. A row from another namespace,
 * or one whose namespace or start time was never read (NAMESPACE_UNREAD), cannot be judged:
 * "unknown", which no caller treats as gone. A row written before namespaces were recorded is judged by its pid and
 * start time here, as the version that wrote it did.
 */
export function judgeLiveness(
  rec: RecordedProcess,
  here: ProcessPlace,
  startNow: (pid: number) => string | null,
): Liveness {
  if (rec.boot !== null && here.boot !== null && rec.boot !== here.boot) return "gone";
  if (writtenBeforePlaces(rec) && rec.start !== null && here.pidNs !== null) {
    // A row from a portcullis that recorded neither namespace nor boot (before store migrations
    // 17 and 18) is judged as that version judged it, by its pid and start time here. Otherwise
    // a gateway killed before an upgrade would stay "cannot tell" for ever: its run open, its calls
    // never closed, its requests still decidable. Such a row can only be written by a process
    // that was running before the upgrade (older versions refuse a migrated store), so this is
    // wrong only for an old gateway still running in another namespace on the same state
    // directory at the upgrade: its run would be ended and its grants stop covering (a refusal,
    // never an authority gained).
    return startNow(rec.pid) === rec.start ? "alive" : "gone";
  }
  if (
    rec.start === null ||
    rec.pidNs === null ||
    rec.pidNs === NAMESPACE_UNREAD ||
    here.pidNs === null ||
    rec.pidNs !== here.pidNs
  ) {
    return "unknown";
  }
  return startNow(rec.pid) === rec.start ? "alive" : "gone";
}

/** Neither the namespace nor the boot was recorded: a row written before either was. */
function writtenBeforePlaces(rec: RecordedProcess): boolean {
  return rec.pidNs === null && rec.boot === null;
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
  return (
    rec.pidNs !== null && rec.pidNs !== NAMESPACE_UNREAD && here.pidNs !== null && rec.pidNs !== here.pidNs
  );
}
