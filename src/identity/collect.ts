// Full garbage collections at the two moments an idle gateway would otherwise keep garbage for
// hours: a second after a capture let go of the digest cache, and once idle after a burst of calls.
//
// Decoding the digest cache (one file for every tree the user's gateways digest: 13 MB here)
// leaves tens of megabytes of heap behind once its entries are released; V8 returns them to the
// system only after a full collection, which an idle gateway may not run for hours. Measured
// (docs/performance-history.md, "Startup order and idle memory (second pass)"): idle RSS 118 -> 74
// MB with a 13 MB cache. The collection is scheduled after the handshake's critical path (a second
// later), once, however many captures asked.
import { performance } from "node:perf_hooks";
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

let rssAfter = 0;

function collect(): void {
  const fn = collector();
  if (fn === null) return;
  fn();
  rssAfter = process.memoryUsage.rss();
}

export function collectSoon(): void {
  if (pending !== null) return;
  pending = setTimeout(() => {
    pending = null;
    collect();
  }, DELAY_MS);
  pending.unref();
}

const IDLE_CHECK_MS = 2000;
const IDLE_UTILIZATION = 0.05;
/**
 * Was 16 MB while SQLite's 16 MB page cache made up most of a burst's growth (src/store/db.ts);
 * with that gone, a burst leaves 5-15 MB of V8 garbage, which an idle gateway would keep.
 */
const GROWTH_BYTES = 4 * 1024 * 1024;
let idleTimer: NodeJS.Timeout | null = null;

/**
 * After a burst of calls the heap holds their garbage until V8 decides to collect, which for an
 * idle process can be much later: every 2 s, if the event loop was idle (under 5 % busy) and the
 * RSS grew by more than 4 MB since the last collection, collect now (once: the RSS after it is
 * the new mark). Costs one
 * `eventLoopUtilization` and one RSS read per check; never runs while calls flow.
 */
export function collectWhenIdle(): void {
  if (idleTimer !== null) return;
  let last = performance.eventLoopUtilization();
  if (rssAfter === 0) rssAfter = process.memoryUsage.rss();
  idleTimer = setInterval(() => {
    const now = performance.eventLoopUtilization();
    const busy = performance.eventLoopUtilization(now, last).utilization;
    last = now;
    if (busy < IDLE_UTILIZATION && process.memoryUsage.rss() - rssAfter > GROWTH_BYTES) collect();
  }, IDLE_CHECK_MS);
  idleTimer.unref();
}
