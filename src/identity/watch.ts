// The artifact watcher: tells the supervisor that a file the identity depends on changed on disk
// (a rebuild, an install). It reports; it never decides. The dependency tree is watched to a bounded
// depth, so a changed file inside a package is seen without one watch per file. Everything is
// watched with node's fs.watch (inotify on Linux), set up synchronously before the server is
// reported up: a single file through its directory (which also sees an editor's or a build's
// write-then-rename), a directory tree through treeWatch.ts. (chokidar did this before; loading it
// and its first scan of a real node_modules were the costliest part of a start after the walk.)
// The server's own files are also stat'ed on a poll (statPoll): some writes raise no inotify event.
import { type FSWatcher, lstatSync, type Stats, watch } from "node:fs";
import { basename, dirname, isAbsolute, join, sep } from "node:path";
import { changedSinceCapture } from "./asCaptured.js";
import { NODE_MODULES_SKIP } from "./capture.js";
import { loadedGlob } from "./glob.js";
import { GLOB_CHARS, inStateDirReal } from "./include.js";
import { expansions } from "./includeBases.js";
import { type IncludeMatches, matchIncludes } from "./includeMatch.js";
import { PACKAGE_SKIP } from "./linked.js";
import { pathsTo } from "./pathsTo.js";
import { displayPath } from "./resolve.js";
import { type TreeWatch, watchTree } from "./treeWatch.js";
import type { StaticIdentity } from "./types.js";

/** node_modules/pkg/file (1), node_modules/@scope/pkg/file and node_modules/pkg/dir/file (2). */
export const NODE_MODULES_DEPTH = 2;
/** Depth used for a `**` glob, and for a linked package's directory. */
export const GLOB_DEPTH = 20;

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
  // Each alternative of a group from its own base: `{plugins,lib}/**` watched all of cwd (includeBases.ts).
  for (const pattern of patterns.flatMap((p) => (p.startsWith("!") ? [] : expansions(p)))) {
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

/** What the artifact watcher watches: absolute paths. */
export function watchedPaths(s: StaticIdentity): {
  files: string[];
  dirs: WatchedDir[];
} {
  const w = computeWatched(s);
  last = { s, w };
  return { files: w.files, dirs: w.dirs };
}

interface Watched {
  files: string[];
  dirs: WatchedDir[];
  /** the include patterns' files as found for this set, null without patterns */
  matches: IncludeMatches | null;
}

/**
 * The set computed by the latest watchedPaths(), which a watcher of the same identity started
 * right after (as WatchedSet does) takes instead of walking the include patterns again.
 */
let last: { s: StaticIdentity; w: Watched } | null = null;

function computeWatched(s: StaticIdentity): Watched {
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
  let matches: IncludeMatches | null = null;
  const tree = s.dependencyTree;
  if (tree !== null) {
    dirs.push({ path: abs(tree.root), depth: NODE_MODULES_DEPTH, kind: "modules" });
    // A linked package is the user's own code, rebuilt in place (dist/a/b.js): watched as deep
    // as a `**` glob (GLOB_DEPTH), though digested to any depth. One not digested (too large, a
    // link to an ancestor) is not watched either.
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
    // What is in portcullis's state directory (include.ts) is never watched: the gateway writes
    // its store there at every call.
    for (const f of inc.files) {
      const chain = pathsTo(f);
      if (!chain.some(inStateDirReal)) files.push(...chain);
    }
    // A base reached through links (`plugins -> plugins-v1`) is watched at its real path, and
    // each link on the way by name, so that pointing one elsewhere is seen.
    for (const d of inc.dirs) {
      const chain = pathsTo(d.path);
      if (inStateDirReal(chain[chain.length - 1]!)) continue;
      files.push(...chain.slice(1, -1));
      dirs.push({ path: chain[chain.length - 1]!, depth: d.depth, kind: "include" });
    }
    const m = currentMatches(cwd, s.identityInputs.patterns);
    matches = m;
    if (m !== null) {
      // A matched link, or a match under a linked directory: its target and the links on the
      // way, which no base watch sees (a base is watched to its links, not through them).
      for (const f of m.files) {
        const chain = pathsTo(f.abs);
        if (chain.length > 2 || chain[1] !== f.abs) files.push(...chain);
      }
      for (const l of m.linkedDirs) {
        const chain = pathsTo(l.link);
        files.push(...chain.slice(0, -1));
        dirs.push({ path: l.real, depth: GLOB_DEPTH, kind: "include" });
      }
    }
  }
  return { files: [...new Set(files)], dirs: deepest(dirs), matches };
}

/** Each (kind, path) once, at the greatest depth asked for it. */
function deepest(dirs: WatchedDir[]): WatchedDir[] {
  const by = new Map<string, WatchedDir>();
  for (const d of dirs) {
    const k = `${d.kind}\0${d.path}`;
    const had = by.get(k);
    if (had === undefined || had.depth < d.depth) by.set(k, d);
  }
  return [...by.values()];
}

/** The include patterns' files now, links followed; null when no capture loaded the glob library. */
function currentMatches(cwd: string, patterns: readonly string[]): IncludeMatches | null {
  const globSync = loadedGlob();
  if (globSync === null || patterns.length === 0) return null;
  try {
    return matchIncludes(cwd, patterns, globSync);
  } catch {
    return null;
  }
}

/** A directory watched for single files (watchArtifacts' addFiles). */
interface WatchedDirNode {
  /** the watched files in it */
  names: Set<string>;
  /** its directories on the way to a watched file, watched again when an event names them */
  subdirs: Set<string>;
  w: FSWatcher | null;
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
 *
 * `unseen(since)` follows a change the stat poll found (after its batch is open): no event told
 * it when it was made, which was at some moment after `since` (performance.now(), the path's
 * previous round), so what ran from then on may have read the file as it was then.
 *
 * `sinceCapture` (default true): once set up, compare the server's own files with what the capture
 * that made `s` saw (asCaptured.ts). False when the caller compares a whole fresh capture with `s`
 * anyway (WatchedSet replacing another set's watcher), which would judge the same write twice.
 */
export function watchArtifacts(
  s: StaticIdentity,
  onChange: (changedPaths: string[]) => void,
  opts: {
    debounceMs?: number;
    stirred?: (open: boolean) => void;
    unseen?: (since: number) => void;
    sinceCapture?: boolean;
  } = {},
): ArtifactWatcher {
  const debounceMs = opts.debounceMs ?? 250;
  const maxWaitMs = Math.max(1000, 4 * debounceMs);
  const cwd = s.workingDirectory;
  /** addFiles' directories: the files watched in each, the directories on the way below it */
  const fileDirs = new Map<string, WatchedDirNode>();
  const trees: TreeWatch[] = [];
  const pending = new Set<string>();
  const pendingInclude = new Set<string>();
  let timer: NodeJS.Timeout | null = null;
  let firstAt = 0;
  let closed = false;
  const patterns = s.identityInputs?.patterns ?? [];
  /**
   * The include patterns' files now, each by every name a change to it can be reported under
   * (as matched, the links on the way, its real path), as record() names a change (displayPath).
   */
  const globbed = (m = currentMatches(cwd, patterns)): { names: Set<string>; files: string[] } => {
    if (m === null) return { names: new Set(), files: [] };
    const files = m.files.flatMap((f) => pathsTo(f.abs));
    return { names: new Set(files.map((p) => displayPath(p, cwd))), files };
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
      for (const p of pendingInclude) if (now.names.has(p) || includeBefore?.has(p)) out.add(p);
      // A file that matches now and did not before is a change, with or without an event of its
      // own: one written into a directory just created (`mkdir plugins/x && cp …`, a glob's base
      // made after the start) is written before that directory's watch is set up, and only the
      // directory's creation, which no pattern matches, was reported.
      if (includeBefore !== null) for (const p of now.names) if (!includeBefore.has(p)) out.add(p);
      includeBefore = now.names;
      poll.setIncluded(now.files);
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
    // What inotify reported is in this batch: the poll must not report it again later (a server
    // that writes a watched file as it starts would otherwise be started again by the poll's
    // echo of its last write, out of a pause).
    poll.seen(abs);
    const rel = displayPath(abs, cwd);
    if (include) {
      pendingInclude.add(rel);
      // A directory of an include tree named by an event may have been created again or replaced
      // by a rename (the base itself is named in its parent, treeWatch.ts): a file written in it
      // before its new watch began raised no event, nor did any file of a directory renamed in
      // whole, and only the directory was named, which no pattern matches. The polled files under
      // it whose state differs from what the poll last saw are a change seen now (the poll would
      // report them up to a round later, as a change no event told of).
      for (const f of poll.includedUnder(abs)) {
        if (!poll.differs(f)) continue;
        poll.seen(f);
        pendingInclude.add(displayPath(f, cwd));
      }
    } else pending.add(rel);
    const now = Date.now();
    if (timer === null) {
      firstAt = now;
      stir(true);
    } else clearTimeout(timer);
    timer = setTimeout(flush, Math.max(0, Math.min(debounceMs, firstAt + maxWaitMs - now)));
  };

  /**
   * Single files, each seen through its directory: one watch per directory, events by name. A
   * watch follows the directory it was set up on: one removed and created again (`rm -rf dist &&
   * tsc`, a bundler emptying its out dir) or replaced by a rename leaves it on the old directory,
   * silent (node reports no error), and every later write of the entry would be seen by the stat
   * poll only, up to a round late and as a change no event told of (`unseen`, judged more
   * strictly). So each directory's name is watched in its parent too, up to the working
   * directory (outside it, in its parent only), and an event naming it sets its watch up again
   * (new before old is closed, so a directory that stayed is never unwatched), and those of the
   * directories below it on the way to a watched file. The same brings a directory that does not
   * exist at the start (`dist` before the first build) under watch once it is created. What was
   * written in such a directory before its new watch began raised no event here: a watched file
   * in it whose state differs from what the poll last saw is reported then.
   */
  const addFiles = (files: string[]) => {
    const inCwd = (d: string) => d === cwd || d.startsWith(cwd.endsWith(sep) ? cwd : cwd + sep);
    const at = (d: string): WatchedDirNode => {
      const had = fileDirs.get(d);
      if (had !== undefined) return had;
      const n: WatchedDirNode = { names: new Set(), subdirs: new Set(), w: null };
      fileDirs.set(d, n);
      return n;
    };
    for (const f of files) {
      let d = dirname(f);
      at(d).names.add(basename(f));
      const top = inCwd(d) ? cwd : dirname(d);
      while (d !== top && dirname(d) !== d) {
        at(dirname(d)).subdirs.add(basename(d));
        d = dirname(d);
      }
    }
    for (const d of fileDirs.keys()) watchFileDir(d, false);
  };

  /** (Re)sets up the watch of a directory of addFiles; `renew`: after an event naming it. */
  const watchFileDir = (dir: string, renew: boolean): void => {
    const n = fileDirs.get(dir);
    if (closed || n === undefined) return;
    let w: FSWatcher;
    try {
      w = watch(dir, { persistent: true }, (_event, name) => {
        const x = name?.toString();
        if (closed || x === undefined) return;
        if (n.names.has(x)) record(join(dir, x), false);
        if (n.subdirs.has(x)) watchFileDir(join(dir, x), true);
      });
    } catch (e) {
      // gone (removed, or not created yet): an old watch would follow a directory moved away
      const code = (e as NodeJS.ErrnoException).code;
      if (code === "ENOENT" || code === "ENOTDIR") {
        n.w?.close();
        n.w = null;
      }
      // otherwise (the system's limit of watches reached) the old one is kept; the next capture
      // sees what it misses
      return;
    }
    w.on("error", () => {
      w.close();
      if (n.w === w) n.w = null;
    });
    const old = n.w;
    n.w = w;
    old?.close();
    if (!renew) return;
    for (const x of n.names) {
      const abs = join(dir, x);
      if (poll.differs(abs)) record(abs, false);
    }
    for (const x of n.subdirs) watchFileDir(join(dir, x), true);
  };

  const poll = statPoll((abs, since) => {
    record(abs, false);
    if (closed) return;
    try {
      opts.unseen?.(since);
    } catch {}
  });
  try {
    const set = last?.s === s ? last.w : computeWatched(s);
    last = null;
    const { files, dirs } = set;
    addFiles(files);
    poll.setFixed(files);
    if (set.matches !== null) {
      const now = globbed(set.matches);
      includeBefore = now.names;
      poll.setIncluded(now.files);
    }
    // Each tree's directories are watched by name up to the working directory (treeWatch.ts,
    // `top`), as addFiles' are: an ancestor of a base replaced leaves the base's watches dead.
    for (const d of dirs) {
      if (d.kind === "modules") {
        const skip = [...NODE_MODULES_SKIP].map((n) => join(d.path, n));
        trees.push(
          watchTree(
            d.path,
            d.depth,
            (p: string) => skip.some((x) => p === x || p.startsWith(x + sep)) || inStateDirReal(p),
            (p: string) => record(p, false),
            cwd,
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
              /[\\/](?:node_modules|\.git)(?:[\\/]|$)/.test(p.slice(d.path.length)) ||
              inStateDirReal(p),
            (p: string) => record(p, false),
            cwd,
          ),
        );
      } else {
        trees.push(
          watchTree(
            d.path,
            d.depth,
            (p: string) =>
              /[\\/](?:node_modules|\.git)(?:[\\/]|$)/.test(p.slice(d.path.length)) || inStateDirReal(p),
            (p: string) => record(p, true),
            cwd,
          ),
        );
      }
    }
    // Watching from here on. A change made after the capture read a file of the server's own
    // code and before now raised no event here, and came too late for the capture's ctime probe:
    // what the capture saw is compared with the files now (a stat each; the include patterns
    // matched again, for a file added meanwhile), and a difference is a change seen now.
    if (opts.sinceCapture !== false) {
      const matchedNow = patterns.length > 0 ? (currentMatches(cwd, patterns)?.files ?? null) : null;
      for (const abs of changedSinceCapture(s, matchedNow)) record(abs, false);
    }
  } catch {}

  return {
    // set up synchronously: changes are reported from the moment this returns
    ready: Promise.resolve(),
    async close() {
      closed = true;
      poll.close();
      if (timer !== null) {
        clearTimeout(timer);
        stir(false); // the batch is dropped: nothing of it is judged any more
      }
      timer = null;
      for (const t of trees) t.close();
      for (const n of fileDirs.values()) n.w?.close();
    },
  };
}

/** How often the stat poll runs, and how many paths one round stats at most. */
export const POLL_INTERVAL_MS = 1000;
export const POLL_MAX_PER_TICK = 256;

/** A path's state as the poll compares it (the error code when it cannot be stat'ed). */
function stateOf(abs: string): string {
  let st: Stats;
  try {
    st = lstatSync(abs);
  } catch (e) {
    return (e as NodeJS.ErrnoException).code ?? "EIO";
  }
  // A directory on the way (a linked release) changes with every file written in it: its link
  // is polled, not it.
  if (st.isDirectory()) return "dir";
  return `${st.size}:${st.mtimeMs}:${st.ctimeMs}:${st.ino}`;
}

interface StatPoll {
  /** the entry, wrappers, lockfile and executable, with the links on their way */
  setFixed(paths: readonly string[]): void;
  /** the include patterns' files, renewed when their set may have changed */
  setIncluded(paths: readonly string[]): void;
  /** a change of `path` reported by inotify: its state now is the one the next rounds compare with */
  seen(path: string): void;
  /** the include patterns' files polled under the directory `dir` */
  includedUnder(dir: string): string[];
  /** whether `path` differs now from its state at its last round or seen() (true when not polled) */
  differs(path: string): boolean;
  close(): void;
}

/**
 * inotify reports a write through the watched name and a rename in a watched directory, but not
 * a write through another hard link of the file made in a directory nobody watches, nor a write
 * through a shared memory mapping. Both change the file's mtime and ctime, which a stat through
 * our path shows. So the files whose content is digested fresh at every capture (the server's own
 * code; never the dependency tree) are also stat'ed every POLL_INTERVAL_MS, at most
 * POLL_MAX_PER_TICK of them per round (a larger set is gone through in turns), and a path whose
 * (size, mtime, ctime, inode) differs from the last round is reported as a watcher event is.
 * Such a change was made at some moment since that path's previous round, not when it is seen:
 * `onChange` gets that round's time (performance.now()), so the gateway can tell whether a
 * request was at the server while the file may have differed (a write, a call that loads it, the
 * file put back, all between two rounds, compares equal at the capture).
 */
function statPoll(onChange: (abs: string, since: number) => void): StatPoll {
  let fixed: string[] = [];
  let included: string[] = [];
  let order: string[] = [];
  /** each path's state at its last round, and when that round read it */
  const last = new Map<string, { state: string; at: number }>();
  let next = 0;
  const rebuild = () => {
    order = [...new Set([...fixed, ...included])];
    const keep = new Set(order);
    for (const p of [...last.keys()]) if (!keep.has(p)) last.delete(p);
    for (const p of order) if (!last.has(p)) last.set(p, { state: stateOf(p), at: performance.now() });
    next = 0;
  };
  const tick = () => {
    const n = Math.min(order.length, POLL_MAX_PER_TICK);
    for (let i = 0; i < n; i++) {
      if (next >= order.length) next = 0;
      const p = order[next++]!;
      const before = last.get(p);
      const now = { state: stateOf(p), at: performance.now() };
      last.set(p, now);
      if (before === undefined || now.state === before.state) continue;
      onChange(p, before.at);
    }
  };
  const timer = setInterval(tick, POLL_INTERVAL_MS);
  timer.unref();
  return {
    setFixed(paths) {
      fixed = [...paths];
      rebuild();
    },
    setIncluded(paths) {
      included = [...paths];
      rebuild();
    },
    seen(path) {
      if (last.has(path)) last.set(path, { state: stateOf(path), at: performance.now() });
    },
    includedUnder(dir) {
      const prefix = dir.endsWith(sep) ? dir : dir + sep;
      return included.filter((p) => p.startsWith(prefix));
    },
    differs(path) {
      const had = last.get(path);
      return had === undefined || had.state !== stateOf(path);
    },
    close() {
      clearInterval(timer);
    },
  };
}
