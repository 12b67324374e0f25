// The dependency tree's watcher: one fs.watch (inotify on Linux) per directory down to a depth,
// found by one readdir each. chokidar, which watched it before, also stat'ed every entry of the
// tree and kept an object per file: on a real node_modules (659 directories, 2,997 entries
// to that depth) its first scan took 348 ms of CPU after the server was up, competing with the
// first tools/list, and added 46 MB of RSS; this takes about 5 ms and 2 MB
// (docs/performance-history.md, "Startup and memory, third pass"). It reports; the capture that
// follows a report decides what changed.
import { type Dirent, type FSWatcher, lstatSync, readdirSync, watch } from "node:fs";
import { basename, dirname, join, sep } from "node:path";

export interface TreeWatch {
  close(): void;
}

/**
 * Watches `root` and its directories down to `depth` levels below it (symlinks are not followed,
 * nor is `root` itself when it is one), calling `onPath` with the absolute path of every entry
 * created, changed or removed in a watched directory. A directory created inside a watched one
 * (an install) is watched too, down to the same depth, and so is one removed and created again, or
 * the root or one of its directories up to `top` replaced (each one's name is watched in its
 * parent; `top`, by default the root's parent, is the highest directory watched, and one that is
 * not above the root counts as the default). `skip` leaves paths out (tool caches).
 * Never throws: a directory that cannot be watched (gone, or the system's limit of watches
 * reached) is left unwatched; the next capture still digests it.
 */
export function watchTree(
  root: string,
  depth: number,
  skip: (abs: string) => boolean,
  onPath: (abs: string) => void,
  top: string = dirname(root),
): TreeWatch {
  const watchers = new Map<string, FSWatcher>();
  let closed = false;

  // `renew`: the directory is watched again even if a watch by this name exists. An event for a
  // directory's name in its parent means it may have been removed and created again (npm
  // replacing a package, `rm -rf dist && tsc`): the old watch then follows the removed directory
  // and reports nothing more, and every later write in the new one would go unseen. The new watch
  // is set up before the old one is closed, so a directory that stayed is never unwatched.
  const add = (dir: string, level: number, renew = false): void => {
    if (closed || skip(dir)) return;
    const had = watchers.get(dir);
    if (had !== undefined && !renew) return;
    let w: FSWatcher;
    try {
      w = watch(dir, { persistent: true }, (_event, name) => {
        if (closed) return;
        const abs = name ? join(dir, name.toString()) : dir;
        if (skip(abs)) return;
        onPath(abs);
        if (name && level < depth) addIfDirectory(abs, level + 1, true);
      });
    } catch {
      return;
    }
    w.on("error", () => {
      w.close();
      if (watchers.get(dir) === w) watchers.delete(dir);
    });
    watchers.set(dir, w);
    had?.close();
    if (level >= depth) return;
    let entries: Dirent[];
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    // a directory created again comes with directories of its own, whose old watches are dead too
    for (const e of entries) if (e.isDirectory()) add(join(dir, e.name), level + 1, renew);
  };

  const addIfDirectory = (abs: string, level: number, renew = false): void => {
    try {
      if (lstatSync(abs).isDirectory()) add(abs, level, renew);
    } catch {
      /* removed again, or never a directory */
    }
  };

  addIfDirectory(root, 0);
  // The root's own name, watched in its parent, and each directory's on the way up to `top`: a
  // root removed and created again (`rm -rf node_modules && npm ci`) or replaced by a rename (a
  // node_modules swapped in whole) raises no event in the root's watch, which then follows the
  // removed or moved-away directory: nothing in the tree would be seen again for as long as this
  // watcher lives. The same goes for the parent's watch when an ancestor is replaced (`rm -rf
  // plugins && mkdir -p plugins/base && cp …` for a base plugins/base), or when the root and its
  // parent do not exist at the start: only a directory higher up sees the name come back. An
  // event naming the next directory down sets its watch up again (new before old is closed), and
  // so on down to the root's tree.
  const links: { dir: string; child: string; w: FSWatcher | null }[] = [];
  const inTop = top !== root && root.startsWith(top.endsWith(sep) ? top : top + sep);
  const stop = inTop ? top : dirname(root);
  if (!skip(root)) {
    for (let d = root; dirname(d) !== d; d = dirname(d)) {
      links.push({ dir: dirname(d), child: basename(d), w: null });
      if (dirname(d) === stop) break;
    }
  }
  /** (Re)sets up the watch of links[i]; `renew`: its directory may be a new one. */
  const watchLink = (i: number, renew: boolean): void => {
    const l = links[i]!;
    if (closed) return;
    let w: FSWatcher;
    try {
      w = watch(l.dir, { persistent: true }, (_event, name) => {
        if (closed || name?.toString() !== l.child) return;
        below(i);
      });
    } catch (e) {
      // gone (removed, or not created yet): an old watch would follow a directory moved away;
      // the link above sees it come back
      const code = (e as NodeJS.ErrnoException).code;
      if (code === "ENOENT" || code === "ENOTDIR") {
        l.w?.close();
        l.w = null;
      }
      return;
    }
    w.on("error", () => {
      w.close();
      if (l.w === w) l.w = null;
    });
    const old = l.w;
    l.w = w;
    old?.close();
    if (renew) below(i);
  };
  /** The directory links[i] names may have been replaced: everything below it is watched anew. */
  const below = (i: number): void => {
    if (i > 0) {
      watchLink(i - 1, true);
      return;
    }
    onPath(root);
    addIfDirectory(root, 0, true);
  };
  for (let i = links.length - 1; i >= 0; i--) watchLink(i, false);
  return {
    close() {
      closed = true;
      for (const l of links) l.w?.close();
      for (const w of watchers.values()) w.close();
      watchers.clear();
    },
  };
}
