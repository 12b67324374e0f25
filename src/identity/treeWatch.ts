// The dependency tree's watcher: one fs.watch (inotify on Linux) per directory down to a depth,
// found by one readdir each. chokidar, which watched it before, also stat'ed every entry of the
// tree and kept an object per file: on a real node_modules (659 directories, 2,997 entries
// to that depth) its first scan took 348 ms of CPU after the server was up, competing with the
// first tools/list, and added 46 MB of RSS; this takes about 5 ms and 2 MB
// (docs/performance.md). It reports; the capture that follows a report decides what changed.
import { type Dirent, type FSWatcher, lstatSync, readdirSync, watch } from "node:fs";
import { join } from "node:path";

export interface TreeWatch {
  close(): void;
}

/**
 * Watches `root` and its directories down to `depth` levels below it (symlinks are not followed,
 * nor is `root` itself when it is one), calling `onPath` with the absolute path of every entry
 * created, changed or removed in a watched directory. A directory created inside a watched one
 * (an install) is watched too, down to the same depth. `skip` leaves paths out (tool caches).
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

  const add = (dir: string, level: number): void => {
    if (closed || watchers.has(dir) || skip(dir)) return;
    let w: FSWatcher;
    try {
      w = watch(dir, { persistent: true }, (_event, name) => {
        if (closed) return;
        const abs = name ? join(dir, name.toString()) : dir;
        if (skip(abs)) return;
        onPath(abs);
        if (name && level < depth) addIfDirectory(abs, level + 1);
      });
    } catch {
      return;
    }
    w.on("error", () => {
      w.close();
      if (watchers.get(dir) === w) watchers.delete(dir);
    });
    watchers.set(dir, w);
    if (level >= depth) return;
    let entries: Dirent[];
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) if (e.isDirectory()) add(join(dir, e.name), level + 1);
  };

  const addIfDirectory = (abs: string, level: number): void => {
    try {
      if (lstatSync(abs).isDirectory()) add(abs, level);
    } catch {
      /* removed again, or never a directory */
    }
  };

  addIfDirectory(root, 0);
  return {
    close() {
      closed = true;
      for (const w of watchers.values()) w.close();
      watchers.clear();
    },
  };
}
