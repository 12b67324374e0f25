// Code a dependency tree reaches outside itself. A workspace (npm, yarn, pnpm), `npm link`, or a
// `file:`/`link:` dependency puts a symlink in node_modules that leads out of every node_modules
// (`node_modules/@acme/core -> ../../packages/core`). Node loads that package from its real
// directory, and resolves the package's own imports from there. Digesting the link's text alone
// left a rebuild of the linked package out of the identity and out of the watcher.
import { readlinkSync, realpathSync, statSync } from "node:fs";
import { basename, dirname, isAbsolute, join, resolve, sep } from "node:path";
import type { DigestJob, TreeDigest } from "./digest.js";
import { realpathOr } from "./files.js";
import { MAX_LINKED_FILES, warnOnce } from "./walkLimits.js";

export { MAX_LINKED_FILES, warnOnce };

/**
 * Left out at the top of a linked package's directory: its node_modules (walked as a dependency
 * tree of its own when the package loads from it), .git, and what test runs and build tools
 * rewrite without changing the package's code (coverage, tool caches).
 */
export const PACKAGE_SKIP: ReadonlySet<string> = new Set([
  "node_modules",
  ".git",
  ".cache",
  ".turbo",
  ".vite",
  ".vite-temp",
  ".vitest",
  ".nyc_output",
  "coverage",
]);

/** A directory reached from the dependency tree, as the walk saw it. */
export interface Reached {
  /** real path */
  abs: string;
  /** a node_modules directory, or a linked package directory */
  kind: "modules" | "package";
  /** null when it was not digested (`skipped` says why) */
  finish: (() => TreeDigest) | null;
  skipped?: string;
}

function within(p: string, dir: string): boolean {
  return p === dir || p.startsWith(dir.endsWith(sep) ? dir : dir + sep);
}

function inNodeModules(p: string): boolean {
  return p.split(sep).includes("node_modules");
}

function isDir(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}

/**
 * The node_modules directories node searches from `dir` (each ancestor's), up to the directory
 * holding `lockfile`-named files: the root of the install that put them there (a workspace root,
 * a checkout). Nothing above it was installed for this code. With no lockfile upward, only the
 * nearest one, as for the main dependency tree.
 */
export function installedModules(dir: string, hasLockfile: (dir: string) => boolean): string[] {
  const found: string[] = [];
  let d = dir;
  for (;;) {
    const nm = join(d, "node_modules");
    if (isDir(nm)) found.push(nm);
    if (hasLockfile(d)) return found;
    const up = dirname(d);
    if (up === d) return found.slice(0, 1);
    d = up;
  }
}

/**
 * Walks the dependency tree at `root` with `job`, following each symlink in it whose real target
 * is a directory outside every node_modules: the linked package's directory is digested (less
 * PACKAGE_SKIP at its top, bounded by MAX_LINKED_FILES), and so is every node_modules node
 * resolves the package's imports from (installedModules), with the same rule for the links in
 * them. Every directory is walked once: a target inside one already walked adds nothing, and a
 * target that contains one (a link to an ancestor, the loop case) is not followed.
 * `moreFrom`: where the main code's further node_modules are searched from (see capture.ts).
 * `own`: the real directories of the entry and of the working directory. A target holding one is
 * the server's own package (npm links every workspace, the server's too): its code is identified
 * by the entry, wrappers and identity.include as without a link, and it is where a server keeps
 * its state, whose every write would otherwise be a "rebuild". It is named, not followed.
 */
export function walkReached(
  job: DigestJob,
  root: string,
  skip: ReadonlySet<string>,
  moreFrom: string,
  hasLockfile: (dir: string) => boolean,
  own: readonly string[],
  label: string,
): { main: () => TreeDigest; reached: Reached[] } {
  const modules: string[] = [realpathOr(root)];
  const packages: string[] = [];
  const refused = new Set<string>();
  const queue: string[] = [];
  const reached: Reached[] = [];

  const follow = (link: string, tree: string): void => {
    // .bin holds command shims into packages, which module resolution never goes through (no
    // package name starts with a dot); a large tree has hundreds of them.
    if (basename(dirname(link)) === ".bin") return;
    let target: string;
    try {
      // A relative link that stays inside the tree being walked (pnpm's .pnpm layout, thousands
      // of them) leads nowhere new: a link on its way is an entry of this tree, considered in
      // turn. A readlink is a fraction of the cost of a realpath.
      const text = readlinkSync(link);
      if (!isAbsolute(text) && within(resolve(dirname(link), text), tree)) return;
      target = realpathSync.native(link);
    } catch {
      return; // dangling: its text is digested, there is nothing to load
    }
    if (inNodeModules(target) || packages.some((p) => within(target, p)) || !isDir(target)) return;
    if (refused.has(target)) return;
    if ([...modules, ...packages].some((d) => within(d, target))) {
      refused.add(target);
      const why = "it contains code digested already (a link to an ancestor directory)";
      reached.push({ abs: target, kind: "package", finish: null, skipped: why });
      warnOnce(label, `${link} -> ${target} is not followed: ${why}; only the link's text is digested`);
      return;
    }
    if (own.some((d) => within(d, target))) {
      refused.add(target);
      reached.push({ abs: target, kind: "package", finish: null, skipped: "the server's own package" });
      return;
    }
    packages.push(target);
    queue.push(target);
  };
  const walk = (dir: string, skipTop: ReadonlySet<string>) =>
    job.tree(dir, skipTop, { onLink: (link) => follow(link, dir) });

  const addModules = (from: string): void => {
    for (const nm of installedModules(from, hasLockfile)) {
      const real = realpathOr(nm);
      if (modules.includes(real)) continue;
      modules.push(real);
      reached.push({ abs: real, kind: "modules", finish: walk(real, skip) });
    }
  };

  const main = walk(root, skip);
  addModules(moreFrom);
  while (queue.length > 0) {
    const pkg = queue.shift()!;
    // what was seen of it is kept: the first watcher compares it (asCaptured.ts), the
    // developer's own code being what a `tsc --watch` rewrites while the gateway starts
    const finish = job.tree(pkg, PACKAGE_SKIP, { limit: MAX_LINKED_FILES, keepSeen: true });
    reached.push({ abs: pkg, kind: "package", finish });
    addModules(pkg);
  }
  return { main, reached };
}
