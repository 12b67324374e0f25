import { openFilesSoftLimit } from "../identity/proc.js";

/** The most connections a front holds when the process's descriptor limit cannot be read. */
const DEFAULT_CAP = 1024;
/** Never fewer than this, however low the limit (a front must take a few clients at once). */
const FLOOR = 32;

/**
 * How many connections the `run --listen` front holds open at once; one more is closed as it is
 * accepted. Each is a descriptor, taken before any check (Host, token) has read a byte, so
 * without a cap a client that opens connections and sends nothing ran the gateway out of
 * descriptors, and the next file it opened (a module loaded late, the store, a server's pipes)
 * threw EMFILE and ended it. Half the process's soft limit (`/proc/self/limits` on Linux; node
 * raises the soft limit to the hard one at start), at most DEFAULT_CAP: the other half is the
 * sessions' own (their servers' pipes, the store, egress proxies).
 */
export function connectionCap(softLimit: number | null = openFilesSoftLimit()): number {
  if (softLimit === null) return DEFAULT_CAP;
  return Math.max(FLOOR, Math.min(DEFAULT_CAP, Math.floor(softLimit / 2)));
}
