// The artifact watcher: tells the supervisor that a file the identity depends on changed on disk
// (a rebuild, an install). It reports; it never decides. The dependency tree is watched to a bounded
// depth, so a changed file inside a package is seen without one watch per file. Everything is
// watched with node's fs.watch (inotify on Linux), set up synchronously before the server is
// reported up: a single file through its directory (which also sees an editor's or a build's
// write-then-rename), a directory tree through treeWatch.ts. (chokidar did this before; loading it
// and its first scan of a real node_modules were the costliest part of a start after the walk.)
import { type FSWatcher, lstatSync, readlinkSync, watch } from "node:fs";
import { basename, dirname, isAbsolute, join, sep } from "node:path";
import { NODE_MODULES_SKIP } from "./capture.js";
import { loadedGlob } from "./glob.js";
import { PACKAGE_SKIP } from "./linked.js";
import { displayPath } from "./resolve.js";
import { type TreeWatch, watchTree } from "./treeWatch.js";
import type { StaticIdentity } from "./types.js";

/** node_modules/pkg/file (1), node_modules/@scope/pkg/file and node_modules/pkg/dir/file (2). */
export const NODE_MODULES_DEPTH = 2;
/** Depth used for a `**` glob, and for a linked package's directory. */
export const GLOB_DEPTH = 20;

const GLOB_CHARS = /[*?[\]{}()!+@]/;

interface IncludeDir {
  path: string;
  depth: number;
}

/**
 * A watched directory tree: a node_modules (the dependency tree, or one a linked package loads
 * from), a linked package's directory, or the base of an include pattern.
 */
export interface WatchedDir {
  path: string;
  depth: number;
  kind: "modules" | "package" | "include";
}

function includeDirs(cwd: string, patterns: string[]): { files: string[]; dirs: IncludeDir[] } {
  const files: string[] = [];
  const dirs: IncludeDir[] = [];
  for (const pattern of patterns) {
    if (pattern.startsWith("!")) continue;
    // An absolute pattern (a plugin outside the project) is watched where it is, not under cwd.
    const base = isAbsolute(pattern) ? "/" : cwd;
    const segs = pattern.split("/").filter((x) => x !== "" && x !== ".");
    const k = segs.findIndex((x) => GLOB_CHARS.test(x));
    if (k < 0) {
      files.push(join(base, ...segs));
      continue;
    }
    const rest = segs.slice(k);
    const depth = rest.some((x) => x.includes("**")) ? GLOB_DEPTH : rest.length - 1;
    dirs.push({ path: join(base, ...segs.slice(0, k)), depth });
  }
  return { files, dirs };
}

/** More symlinks than this on one path: the kernel's ELOOP; the rest is not followed. */
const MAX_LINKS = 40;

/**
 * The paths a change to the file at `p` can be made through: `p` itself, every symlink met
 * while resolving it (each named by its real directory, so a retargeted link is seen as an
 * event in that directory), and the real file. A file is watched through its directory by name,
 * and an edit of a link's target happens in the target's directory under the target's name:
 * watching `p` alone misses it (`node link.mjs`, `dist -> build/out`). What cannot be resolved
 * (missing, a loop) is left as far as it got: the next capture sees what it is then.
 */
export function pathsTo(p: string): string[] {
  const out = [p];
  if (sep !== "/") return out; // drive letters and junctions: not walked here
  let todo = p.split(sep).filter((x) => x !== "");
  let cur: string = sep;
  let links = 0;
  while (todo.length > 0) {
    const name = todo.shift()!;
    if (name === ".") continue;
    if (name === "..") {
      cur = dirname(cur);
      continue;
    }
    const next = join(cur, name);
    let isLink: boolean;
    try {
      isLink = lstatSync(next).isSymbolicLink();
    } catch {
      return out;
    }
    if (!isLink) {
      cur = next;
      continue;
    }
    if (++links > MAX_LINKS) return out;
    out.push(next);
    let target: string;
    try {
      target = readlinkSync(next);
    } catch {
      return out;
    }
    if (isAbsolute(target)) cur = sep;
    todo = [...target.split(sep).filter((x) => x !== ""), ...todo];
  }
  out.push(cur);
  return out;
}

/** What the artifact watcher watches: absolute paths. */
export function watchedPaths(s: StaticIdentity): {
  files: string[];
  dirs: WatchedDir[];
} {
  const cwd = s.workingDirectory;
  const abs = (p: string) => (isAbsolute(p) ? p : join(cwd, p));
  const files: string[] = [];
  // The server's own files are followed through symlinks to the file that runs (pathsTo); the
  // executable is a realpath already.
  if (s.entry !== null) files.push(...pathsTo(abs(s.entry.path)));
  for (const w of s.wrappers) files.push(...pathsTo(abs(w.path)));
  if (s.lockfile !== null) files.push(...pathsTo(abs(s.lockfile.path)));
  if (s.executable !== null) files.push(s.executable.path);
  const dirs: WatchedDir[] = [];
  const tree = s.dependencyTree;
  if (tree !== null) {
    dirs.push({ path: abs(tree.root), depth: NODE_MODULES_DEPTH, kind: "modules" });
    // A linked package is the user's own code, rebuilt in place (dist/a/b.js): watched to any
    // depth. One not digested (too large, a link to an ancestor) is not watched either.
    for (const m of tree.more ?? []) {
      if (m.sha256 === null) continue;
      dirs.push(
        m.kind === "modules"
          ? { path: abs(m.path), depth: NODE_MODULES_DEPTH, kind: "modules" }
          : { path: abs(m.path), depth: GLOB_DEPTH, kind: "package" },
      );
    }
  }
  if (s.identityInputs !== null) {
    const inc = includeDirs(cwd, s.identityInputs.patterns);
    files.push(...inc.files);
    dirs.push(...inc.dirs.map((d) => ({ ...d, kind: "include" as const })));
  }
  return { files: [...new Set(files)], dirs };
}

export interface ArtifactWatcher {
  /** Settles when the initial scan is done and changes from then on are reported. */
  ready: Promise<void>;
  close(): Promise<void>;
}

/**
 * Watches the artifacts of `s` and calls `onChange` with the changed paths (relative to the
 * working directory when inside it), debounced. Never throws into the caller: watcher errors are
 * swallowed, and so is an exception from `onChange` or `stirred`.
 *
 * `stirred(true)` is called at the first event of each batch, before the debounce: from then on
 * a file the code depends on may differ from what runs (the supervisor holds guarded requests
 * until the batch is judged); `stirred(false)` once the batch is handed to `onChange` (after that
 * call), found to hold nothing to report, or dropped by close().
 */
export function watchArtifacts(
  s: StaticIdentity,
  onChange: (changedPaths: string[]) => void,
  opts: { debounceMs?: number; stirred?: (open: boolean) => void } = {},
): ArtifactWatcher {
  const debounceMs = opts.debounceMs ?? 250;
  const maxWaitMs = Math.max(1000, 4 * debounceMs);
  const cwd = s.workingDirectory;
  const watchers: FSWatcher[] = [];
  const trees: TreeWatch[] = [];
  const pending = new Set<string>();
  const pendingInclude = new Set<string>();
  let timer: NodeJS.Timeout | null = null;
  let firstAt = 0;
  let closed = false;
  const patterns = s.identityInputs?.patterns ?? [];
  const globbed = (): Set<string> => {
    // loaded by the capture of these patterns, which always comes before the watcher
    const globSync = loadedGlob();
    if (globSync === null) return new Set();
    try {
      // Named as record() names a change (displayPath), also for matches outside cwd.
      return new Set(
        globSync(patterns, {
          cwd,
          dot: true,
          onlyFiles: true,
          followSymbolicLinks: false,
          absolute: true,
        }).map((p) => displayPath(p, cwd)),
      );
    } catch {
      return new Set();
    }
  };
  let includeBefore: Set<string> | null = null;
  const stir = (open: boolean) => {
    try {
      opts.stirred?.(open);
    } catch {}
  };

  const flush = () => {
    timer = null;
    if (closed) return;
    try {
      report();
    } finally {
      stir(false);
    }
  };

  const report = () => {
    const out = new Set(pending);
    if (pendingInclude.size > 0) {
      // Keep a path under an include base only if a pattern matches it now or matched it before.
      const now = globbed();
      for (const p of pendingInclude) if (now.has(p) || includeBefore?.has(p)) out.add(p);
      includeBefore = now;
    }
    pending.clear();
    pendingInclude.clear();
    if (out.size === 0) return;
    try {
      onChange([...out].sort());
    } catch {}
  };

  const record = (abs: string, include: boolean) => {
    if (closed) return;
    const rel = displayPath(abs, cwd);
    if (include) pendingInclude.add(rel);
    else pending.add(rel);
    const now = Date.now();
    if (timer === null) {
      firstAt = now;
      stir(true);
    } else clearTimeout(timer);
    timer = setTimeout(flush, Math.max(0, Math.min(debounceMs, firstAt + maxWaitMs - now)));
  };

  /** Single files, each seen through its directory: one watch per directory, events by name. */
  const addFiles = (files: string[]) => {
    const byDir = new Map<string, Set<string>>();
    for (const f of files) {
      const names = byDir.get(dirname(f)) ?? new Set<string>();
      names.add(basename(f));
      byDir.set(dirname(f), names);
    }
    for (const [dir, names] of byDir) {
      try {
        const w = watch(dir, { persistent: true }, (_event, name) => {
          const n = name?.toString();
          if (n !== undefined && names.has(n)) record(join(dir, n), false);
        });
        w.on("error", () => w.close());
        watchers.push(w);
      } catch {
        /* a directory that does not exist (yet) or cannot be watched: the next capture sees it */
      }
    }
  };

  try {
    const { files, dirs } = watchedPaths(s);
    addFiles(files);
    for (const d of dirs) {
      if (d.kind === "modules") {
        const skip = [...NODE_MODULES_SKIP].map((n) => join(d.path, n));
        trees.push(
          watchTree(
            d.path,
            d.depth,
            (p: string) => skip.some((x) => p === x || p.startsWith(x + sep)),
            (p: string) => record(p, false),
          ),
        );
      } else if (d.kind === "package") {
        // as digested (PACKAGE_SKIP at its top); its node_modules is watched as a tree of its own
        // when the package loads from it, and one deeper down is not watched
        const top = [...PACKAGE_SKIP].map((n) => join(d.path, n));
        trees.push(
          watchTree(
            d.path,
            d.depth,
            (p: string) =>
              top.some((x) => p === x || p.startsWith(x + sep)) ||
              /[\\/](?:node_modules|\.git)(?:[\\/]|$)/.test(p.slice(d.path.length)),
            (p: string) => record(p, false),
          ),
        );
      } else {
        if (includeBefore === null) includeBefore = globbed();
        trees.push(
          watchTree(
            d.path,
            d.depth,
            (p: string) => /[\\/](?:node_modules|\.git)(?:[\\/]|$)/.test(p.slice(d.path.length)),
            (p: string) => record(p, true),
          ),
        );
      }
    }
  } catch {}

  return {
    // set up synchronously: changes are reported from the moment this returns
    ready: Promise.resolve(),
    async close() {
      closed = true;
      if (timer !== null) {
        clearTimeout(timer);
        stir(false); // the batch is dropped: nothing of it is judged any more
      }
      timer = null;
      for (const t of trees) t.close();
      for (const w of watchers) w.close();
    },
  };
}
