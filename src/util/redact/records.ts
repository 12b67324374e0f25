/** Execution records and audit events as they may be kept and shown. */

import { redactArgv } from "./commandLine.js";
import { redactStrings, redactValue } from "./values.js";

/**
 * An execution record as it may be kept and shown: the launch command and every process's argv
 * through redactArgv, every other string through redactText. The record's digests were computed
 * over the real values before this copy was made.
 */
export function redactRecord<T extends { launchCommand: string[]; processes?: { argv: string[] }[] }>(
  r: T,
): T {
  const out = redactStrings(r) as T;
  out.launchCommand = redactArgv(r.launchCommand);
  if (Array.isArray(r.processes) && Array.isArray(out.processes)) {
    out.processes = r.processes.map((p, i) => ({
      ...(out.processes as { argv: string[] }[])[i]!,
      argv: Array.isArray(p.argv) ? redactArgv(p.argv.map(String)) : p.argv,
    }));
  }
  return out;
}

/**
 * An audit event as shown to a person: its execution record and clear arguments redacted as
 * they are when written, every other string as text. Digests in it stay as they are.
 */
export function redactEvent<T extends Record<string, unknown>>(e: T): T {
  const out = redactStrings(e) as Record<string, unknown>;
  const rec = e.record as { launchCommand?: unknown } | undefined;
  if (rec && typeof rec === "object" && Array.isArray(rec.launchCommand)) {
    out.record = redactRecord(rec as { launchCommand: string[] });
  }
  if (e.arguments !== undefined) out.arguments = redactValue(e.arguments, { marker: { redacted: true } });
  return out as T;
}
