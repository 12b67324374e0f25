// One full garbage collection, some time after a capture let go of the digest cache.
//
// Decoding the digest cache (one file for every tree the user's gateways digest: 13 MB here)
// leaves tens of megabytes of heap behind once its entries are released; V8 returns them to the
// system only after a full collection, which an idle gateway may not run for hours. Measured
// (docs/performance.md): idle RSS 118 -> 74 MB with a 13 MB cache. The collection is scheduled
// after the handshake's critical path (a second later), once, however many captures asked.
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

const DELAY_MS = 1000;
let pending: NodeJS.Timeout | null = null;
let gc: (() => void) | null | undefined;

/** The engine's own collector, exposed at run time (undefined where the engine refuses). */
function collector(): (() => void) | null {
  if (gc !== undefined) return gc;
  try {
    setFlagsFromString("--expose-gc");
    const fn = runInNewContext("gc") as unknown;
    gc = typeof fn === "function" ? (fn as () => void) : null;
  } catch {
    gc = null;
  }
  return gc;
}

export function collectSoon(): void {
  if (pending !== null) return;
  pending = setTimeout(() => {
    pending = null;
    collector()?.();
  }, DELAY_MS);
  pending.unref();
}
