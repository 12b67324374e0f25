/**
 * Waiting for audit records a running gateway commits after the moment a test can observe what
 * they record. Its best-effort records (a call's `tool_result`, a `call_interrupted`, a refusal's
 * `authorization_denied`, …) are emitted as the answer is written, or after it, and committed by
 * the audit sink's next group (the end of that turn, a ride of a few ms while other calls are in
 * flight, later still while another process holds the store's lock): a client can hold the answer
 * before its record is in the log. Read once right after the answer, the record is sometimes
 * missing; these helpers read until it is there, and fail naming what never came.
 *
 * A durable record (`tool_called`, `request_forwarded`, `approval_requested`, `catalog_revised`)
 * needs no wait: it is committed before the call goes on, and with it every record emitted before.
 */
import { auditEvents, storeStamp } from "./approvals.js";
import { sleep } from "./files.js";

type AuditEvent = Record<string, unknown>;

/** While the store is unchanged it holds no new record; it is read again at least this often. */
const READ_AT_LEAST_EVERY_MS = 1_000;

/**
 * Every audit event of the state dir, once `ready(events)` holds (waiting up to `ms`). Read again
 * only when the store's files changed since the last read (or a second passed): a read unlocks
 * the keyring and decrypts the whole chain. On timeout it throws naming `what`, with the types
 * of the records that were there.
 */
export async function waitForAuditEvents(
  stateDir: string,
  ready: (events: AuditEvent[]) => boolean,
  what: string,
  ms = 15_000,
): Promise<AuditEvent[]> {
  const deadline = Date.now() + ms;
  let last: AuditEvent[] = [];
  let read: { stamp: string; at: number } | null = null;
  for (;;) {
    const stamp = storeStamp(stateDir);
    if (read === null || read.stamp !== stamp || Date.now() - read.at >= READ_AT_LEAST_EVERY_MS) {
      read = { stamp, at: Date.now() }; // taken before the read: a commit meanwhile changes it
      last = await auditEvents(stateDir);
      if (ready(last)) return last;
    }
    if (Date.now() > deadline)
      throw new Error(
        `timed out after ${ms} ms waiting for ${what} in the audit log; its records were: ${last.map((e) => e.type).join(", ") || "(none)"}`,
      );
    await sleep(25);
  }
}

/** The first audit event `matches` picks, waiting up to `ms` for it (see waitForAuditEvents). */
export async function waitForAuditEvent(
  stateDir: string,
  matches: (event: AuditEvent) => boolean,
  what: string,
  ms = 15_000,
): Promise<AuditEvent> {
  const events = await waitForAuditEvents(stateDir, (all) => all.some(matches), what, ms);
  return events.find(matches) as AuditEvent;
}
