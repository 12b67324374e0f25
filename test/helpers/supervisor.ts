// A Supervisor driven directly (no gateway), as the tests of a replaced server (execve into other
// code under the same pid) run it.
import { afterEach } from "vitest";
import { DigestCache } from "../../src/identity/cache.js";
import type { LaunchSpec } from "../../src/identity/types.js";
import { type Generation, Supervisor, type SupervisorOptions } from "../../src/supervisor/supervisor.js";
import type { Logger } from "../../src/util/log.js";

/** A Logger that says nothing. */
export const quiet: Logger = {
  debug: () => {},
  info: () => {},
  status: () => {},
  warn: () => {},
  error: () => {},
} as unknown as Logger;

/** Clean-ups for each test of the file: `defer(c)` runs `c` after the test, the last deferred first. */
export function deferredCleanup(): (c: () => Promise<void> | void) => void {
  let cleanup: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of cleanup.reverse()) await c();
    cleanup = [];
  });
  return (c) => void cleanup.push(c);
}

/**
 * A Supervisor of `spec`'s command in `dir` (env: PATH alone), quick to stop and to retry, its
 * idle poll far off (the test calls checkReplacement), logging nothing unless `options` says;
 * `ups` collects every generation brought up.
 */
export function supervisorIn(
  dir: string,
  spec: Pick<LaunchSpec, "serverLabel" | "command" | "args"> & Partial<LaunchSpec>,
  options: Partial<SupervisorOptions> = {},
): { sup: Supervisor; ups: Generation[] } {
  const sup = new Supervisor({
    spec: { cwd: dir, env: { PATH: process.env.PATH ?? "/usr/bin:/bin" }, configDigest: "test", ...spec },
    cache: new DigestCache(null),
    log: quiet,
    shutdownGraceMs: 200,
    backoff: { initialMs: 10, maxMs: 10 },
    pollMs: 60_000,
    ...options,
  });
  const ups: Generation[] = [];
  sup.on("up", (gen) => ups.push(gen));
  return { sup, ups };
}
