// A gateway on a server that runs under its own watcher (`node --watch`): the watcher outlives
// the worker the tests kill or break, and starts the next one only at a change.
import { NODE } from "./paths.js";
import type { Project } from "./project.js";
import { type RawGateway, rawGateway } from "./raw.js";

/**
 * A raw gateway (label inventory, --approval none, `--hold-timeout holdTimeoutMs` when given) on
 * `node --watch dist/server.js` in `project`'s dir, with the project's env and then `env`.
 */
export function nodeWatchGateway(
  project: Project,
  options: { holdTimeoutMs?: number; env?: Record<string, string> } = {},
): RawGateway {
  const hold = options.holdTimeoutMs === undefined ? [] : ["--hold-timeout", String(options.holdTimeoutMs)];
  return rawGateway({
    args: ["--label", "inventory", "--approval", "none", ...hold, "--", NODE, "--watch", "dist/server.js"],
    cwd: project.dir,
    env: { ...project.env, ...options.env },
  });
}
