// A server spawned while its identity is captured (src/supervisor/supervisor.ts, launch): what a
// launch makes its epoch of, with the check that the capture describes the code that was loaded.
import { collectSoon } from "../identity/collect.js";
import {
  type ChangeProbe,
  captureStaticIdentity,
  type DigestCache,
  type LaunchSpec,
  type StaticIdentity,
} from "../identity/index.js";
import type { Logger } from "../util/log.js";
import { discard, LaunchError, type Started, spawnServer } from "./spawn.js";

/** How far before the spawn a file's ctime still counts as a change after it. */
const CTIME_SLACK_MS = 50;

/**
 * Starts the server and captures its identity at the same time: the process boots (node and
 * its modules) on one core while the dependency tree is digested on the other. A digested file
 * that changed after the spawn (ctime) means the capture may describe other bytes than the ones
 * the process loaded: that process is killed, and the server is launched again the careful way,
 * capture first. Its output is not read until the caller wires it (after `up`). Throws
 * LaunchError, with nothing left running, when the identity cannot be captured.
 */
export async function spawnAndCapture(
  spec: LaunchSpec,
  cache: DigestCache,
  log: Logger,
  extra: Record<string, string>,
  alsoWarm: readonly string[],
  /** the process already spawned for this launch (earlyStart.ts), with `extra` empty */
  prestarted: Started | null,
  /** told of every process this launch runs, before the capture: shutdown must reach it */
  onSpawn: (started: Started) => void,
): Promise<{ started: Started; stat: StaticIdentity }> {
  let started = prestarted ?? spawnServer(spec, extra);
  onSpawn(started);
  // The kernel stamps ctime from a coarse clock (up to a tick behind): take the margin so a
  // change right after the spawn is never stamped before `since`.
  const probe: ChangeProbe = { since: started.startedAtMs - CTIME_SLACK_MS };
  let stat: StaticIdentity;
  try {
    stat = await captureStaticIdentity(spec, cache, probe, alsoWarm);
    if (probe.touched) {
      log.info(`${probe.touched} changed while the server was starting; starting it again after the capture`);
      await discard(started);
      stat = await captureStaticIdentity(spec, cache);
      started = spawnServer(spec, extra);
      onSpawn(started);
    }
  } catch (e) {
    await discard(started);
    throw new LaunchError((e as Error).message);
  }
  saveQuietly(cache);
  return { started, stat };
}

/** The digest cache only saves time: persist it as soon as a capture filled it, ignore failures. */
function saveQuietly(cache: DigestCache): void {
  try {
    // saved: the entries need not stay in memory until the next capture, and the memory they
    // took goes back to the system
    if (cache.save()) {
      cache.release();
      collectSoon();
    }
  } catch {
    /* a read-only cache location costs speed, not correctness */
  }
}
