// What the walks through links (linked packages, identity.include patterns) share: their bound
// and their once-per-process warnings. Apart from linked.ts so that the include matcher, which
// digest.ts uses, does not import the tree walk that imports digest.ts.
import { stderrLogger } from "../util/log.js";

/**
 * Files digested at most for one linked package directory (its node_modules aside). A link to a
 * huge directory (a data set, /usr) would otherwise make every capture walk it and put an inotify
 * watch on each of its directories. Past it, the package is left out, with a warning.
 */
export const MAX_LINKED_FILES = 20_000;

const warned = new Set<string>();

/**
 * A warning on the gateway's stderr, once per process: the capture runs at every launch and after
 * every change, and the same tree gives the same warning each time.
 */
export function warnOnce(label: string, msg: string): void {
  const key = `${label}\0${msg}`;
  if (warned.has(key)) return;
  warned.add(key);
  stderrLogger(label).warn(msg);
}
