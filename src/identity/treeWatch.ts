// The dependency tree's watcher: one fs.watch (inotify on Linux) per directory down to a depth,
// found by one readdir each. chokidar, which watched it before, also stat'ed every entry of the
// tree and kept an object per file: on a real node_modules (659 directories, 2,997 entries
// to that depth) its first scan took 348 ms of CPU after the server was up, competing with the
// first tools/list, and added 46 MB of RSS; this takes about 5 ms and 2 MB
// (docs/performance.md). It reports; the capture that follows a report decides what changed.
import { type Dirent, type FSWatcher, lstatSync, readdirSync, watch } from "node:fs";
import { basename, dirname, join } from "node:path";

export interface TreeWatch {
  close(): void;
}

/**
 * Watches `root` and its directories down to `depth` levels below it (symlinks are not followed,
 * nor is `root` itself when it is one), calling `onPath` with the absolute path of every entry
 * created, changed or removed in a watched directory. A directory created inside a watched one
 * (an install) is watched too, down to the same depth, and so is one removed and created again, or
 * the root replaced (its name is watched in its parent). `skip` leaves paths out (tool caches).
 * Never throws: a directory that cannot be watched (gone, or the system's limit of watches
 * reached) is left unwatched; the next capture still digests it.
 */
export function watchTree(
  root: string,
  depth: number,
  skip: (abs: string) => boolean,
  onPath: (abs: string) => void,
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
  // The root's own name, watched in its parent: a root removed and created again (`rm -rf
  // node_modules && npm ci`) or replaced by a rename (a node_modules swapped in whole) raises no
  // event in the root's watch, which then follows the removed or moved-away directory: nothing in
  // the tree would be seen again for as long as this watcher lives.
  let parentWatch: FSWatcher | null = null;
  const parent = dirname(root);
  if (parent !== root && !skip(root)) {
    try {
      const pw = watch(parent, { persistent: true }, (_event, name) => {
        if (closed || name?.toString() !== basename(root)) return;
        onPath(root);
        addIfDirectory(root, 0, true);
      });
      pw.on("error", () => pw.close());
      parentWatch = pw;
    } catch {
      /* the parent cannot be watched: the tree is watched as it is now */
    }
  }
  return {
    close() {
      closed = true;
      parentWatch?.close();
      for (const w of watchers.values()) w.close();
      watchers.clear();
    },
  };
}
