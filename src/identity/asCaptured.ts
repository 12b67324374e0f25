// What a capture saw of the files it digested (the server's own code: executable, entry, wrappers,
// lockfile, the include patterns' files; and the linked workspace packages, the developer's own code
// a `tsc --watch` rewrites: each file, link and directory), kept beside the identity it made, so
// that the artifact watcher, once set up, can tell whether one of them changed after the capture
// read it and before the watcher could see it (watch.ts). No event and no ctime probe covers that
// stretch: the capture's look at each file is over, and inotify was not listening yet. node_modules
// is not kept: a second stat of each of its files would double a warm start's walk.
import { type Dirent, lstatSync, readdirSync, type Stats, statSync } from "node:fs";
import type { IncludeMatch } from "./includeMatch.js";
import type { StaticIdentity } from "./types.js";

/** A file as one stat saw it: through its links (`follow`) or the link itself. */
export interface SeenFile {
  follow: boolean;
  /** size, mtime, ctime and inode: what the digest cache compares too */
  state: string;
  /** a linked package's directory: the names the walk digested in it (left out: skipped ones) */
  names?: readonly string[];
  /** a package's top directory: the names its walk leaves out there (a tool cache is no change) */
  skip?: ReadonlySet<string>;
}

export function stateKey(st: Pick<Stats, "size" | "mtimeMs" | "ctimeMs" | "ino">): string {
  return `${st.size}:${st.mtimeMs}:${st.ctimeMs}:${st.ino}`;
}

/** Absolute path → what the capture that made the identity saw of it. */
export type SeenFiles = ReadonlyMap<string, SeenFile>;

const seenBy = new WeakMap<StaticIdentity, SeenFiles>();

/** Keeps what the capture saw beside the identity it made (never in it: nothing of it is digested or stored). */
export function rememberSeen(s: StaticIdentity, seen: SeenFiles): void {
  seenBy.set(s, seen);
}

/** Drops what the capture of `s` saw, unasked (a launch whose watcher was set up before it). */
export function forgetSeen(s: StaticIdentity): void {
  seenBy.delete(s);
}

/** The entries of `dir` a tree walk digests (no socket, FIFO or device), or null if unreadable. */
function namesNow(dir: string): Set<string> | null {
  let dirents: Dirent[];
  try {
    dirents = readdirSync(dir, { withFileTypes: true });
  } catch {
    return null;
  }
  const other = (d: Dirent) => d.isFIFO() || d.isSocket() || d.isCharacterDevice() || d.isBlockDevice();
  return new Set(dirents.filter((d) => !other(d)).map((d) => d.name));
}

/**
 * A tree's directory whose state moved: the entries added or removed since the walk listed it
 * (`was`), each by its path; the directory itself when it cannot be read now. Names the walk
 * skipped (at a tree's top: tool caches, .git) count only if they were listed, so a tool cache
 * created meanwhile is no change, as it is none for the watcher; an entry written through a
 * temporary file and a rename shows as its own state, not here.
 */
function entriesMoved(dir: string, was: SeenFile, out: string[]): void {
  const now = namesNow(dir);
  if (now === null) {
    out.push(dir);
    return;
  }
  const listed = was.names ?? [];
  const before = new Set(listed);
  for (const n of listed) if (!now.has(n)) out.push(`${dir}/${n}`);
  for (const n of now) if (!before.has(n) && !was.skip?.has(n)) out.push(`${dir}/${n}`);
}

function stateNow(abs: string, follow: boolean): string {
  try {
    return stateKey(follow ? statSync(abs) : lstatSync(abs));
  } catch (e) {
    return (e as NodeJS.ErrnoException).code ?? "EIO";
  }
}

/**
 * The files of `s` that differ now from what its capture read (written, replaced, removed), and
 * the include patterns' files matched now that it did not read (`matchedNow`: the matches taken
 * once the watcher was set up; null without patterns). Asked once, by the first watcher of `s`
 * (which watches from then on), and forgotten: empty afterwards, and for an identity no capture of
 * this process made. One stat per file: the fixed files are a handful, the include files what the
 * user named.
 */
export function changedSinceCapture(s: StaticIdentity, matchedNow: readonly IncludeMatch[] | null): string[] {
  const seen = seenBy.get(s);
  if (seen === undefined) return [];
  seenBy.delete(s);
  const out: string[] = [];
  for (const [abs, was] of seen) {
    if (stateNow(abs, was.follow) === was.state) continue;
    if (was.names === undefined) out.push(abs);
    else entriesMoved(abs, was, out);
  }
  for (const m of matchedNow ?? []) if (!seen.has(m.abs)) out.push(m.abs);
  return out;
}
