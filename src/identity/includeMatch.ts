// The files an identity include pattern (`identity.include`, `--watch`) names, symlinks followed.
// Plugin layouts are made of links (`enabled/x -> ../available/x`, stow, `current -> releases/vN`):
// a glob that skipped every link digested and watched nothing there, silently, and a plugin
// could change inside one epoch. Links to regular files are matches (digested by their target's
// content); links to directories are walked, loop-checked and bounded as linked.ts follows a
// linked package. The glob library does the matching; its file system calls are wrapped here to
// check each link it follows and to count what the links add.
import { type Dirent, lstatSync, readdirSync, realpathSync, type Stats, statSync } from "node:fs";
import { basename, dirname, isAbsolute, join, relative, sep } from "node:path";
import type { FileSystemAdapter, globSync as GlobSync } from "tinyglobby";
import { GLOB_CHARS, includeSource, inStateDirReal, stateDirGiven } from "./include.js";
import { patternBases } from "./includeBases.js";
import { MAX_LINKED_FILES, warnOnce } from "./walkLimits.js";

/** One matched file, named as the pattern reached it (through its links). */
export interface IncludeMatch {
  /** relative to the working directory, as the glob library gives it */
  rel: string;
  abs: string;
  /** file: a regular file; link: a symlink to one; broken: a symlink to nothing or to no regular file */
  kind: "file" | "link" | "broken";
  /** the first pattern that matched it */
  pattern: string;
}

/** A symlinked directory the walk went into. */
export interface LinkedDir {
  link: string;
  real: string;
}

export interface IncludeMatches {
  /** sorted by rel, each once */
  files: IncludeMatch[];
  linkedDirs: LinkedDir[];
  /** positive patterns that matched no file */
  unmatched: string[];
  /** the pattern whose walk of linked directories stopped at MAX_LINKED_FILES entries, else null */
  over: string | null;
  /** positive patterns that reached files of portcullis's state directory, left out (include.ts) */
  stateDir: string[];
  /**
   * Files a pattern matched outside every directory it names (includeBases.ts): left out of
   * `files`, never digested nor watched; the capture refuses the launch for them (capture.ts).
   */
  outside: OutsideMatch[];
}

/** A file the glob library matched outside every base of the pattern that matched it. */
export interface OutsideMatch {
  pattern: string;
  rel: string;
  abs: string;
  bases: string[];
}

/** Stands for the target of a link to nothing: the walk takes it for a file, so it is matched and named. */
const DANGLING = "\0portcullis:dangling";
const NOT_A_DIRECTORY = { isDirectory: () => false, isFile: () => false } as unknown as Stats;

function within(p: string, dir: string): boolean {
  return p === dir || p.startsWith(dir === sep ? dir : dir + sep);
}

function trimSlash(p: string): string {
  return p.length > 1 && p.endsWith(sep) ? p.slice(0, -1) : p;
}

/**
 * Whether following `link` (to the directory `real`) would walk a directory again: its target is,
 * or contains, a directory on the way to the link (each ancestor as its real path). Such a link
 * (`self -> .`, `up -> ..`, `a/x -> ../b` with `b/y -> ../a`) leads into an endless walk.
 */
function loops(link: string, real: string): boolean {
  let d = dirname(link);
  for (;;) {
    let r: string;
    try {
      r = realpathSync.native(d);
    } catch {
      return true;
    }
    if (within(r, real)) return true;
    const up = dirname(d);
    if (up === d) return false;
    d = up;
  }
}

interface WalkState {
  linkedDirs: LinkedDir[];
  /** entries listed in directories reached through a link */
  entries: number;
  over: boolean;
  /** a link into the state directory was met (and not followed) */
  stateDir: boolean;
}

/** A result or the error it threw, kept to be given again. */
type Kept<T> = { ok: T } | { error: unknown };

function keep<T>(memo: Map<string, Kept<T>>, key: string, make: () => T): T {
  let k = memo.get(key);
  if (k === undefined) {
    try {
      k = { ok: make() };
    } catch (error) {
      k = { error };
    }
    memo.set(key, k);
  }
  if ("error" in k) throw k.error;
  return k.ok;
}

/**
 * The file system the glob library walks with: links checked and counted as they are followed.
 * Every answer is kept for the rest of one match, so walking each pattern on its own reads
 * each directory once (a pattern outside the working directory walks from their common
 * ancestor, which can be as wide as /tmp).
 */
function linkFollowingFs(state: WalkState): FileSystemAdapter {
  const reachedByLink = (p: string) => state.linkedDirs.some((d) => within(p, d.real) || within(p, d.link));
  const listed = new Map<string, Kept<Dirent[]>>();
  const resolved = new Map<string, Kept<string>>();
  const list = (path: string): Dirent[] => {
    const entries = readdirSync(path, { withFileTypes: true });
    if (!reachedByLink(trimSlash(path))) return entries;
    if (state.entries + entries.length > MAX_LINKED_FILES) {
      state.over = true;
      return [];
    }
    state.entries += entries.length;
    return entries;
  };
  // Called for each symlink the walk meets. Throwing leaves the link out (the library
  // suppresses the error), which is how a loop is not followed.
  const resolve = (path: string): string => {
    let real: string;
    let st: Stats;
    try {
      real = realpathSync.native(path);
      st = statSync(real);
    } catch {
      return DANGLING;
    }
    if (!st.isDirectory()) return real;
    if (inStateDirReal(real)) {
      state.stateDir = true;
      throw new Error("a link into portcullis's state directory");
    }
    if (loops(path, real)) throw new Error("a link to a directory on its own path");
    state.linkedDirs.push({ link: trimSlash(path), real });
    return real;
  };
  return {
    readdirSync: ((path: string): Dirent[] =>
      keep(listed, path, () => list(path))) as unknown as FileSystemAdapter["readdirSync"],
    realpathSync: ((path: string): string =>
      keep(resolved, path, () => resolve(path))) as FileSystemAdapter["realpathSync"],
    statSync: ((path: string): Stats =>
      path === DANGLING ? NOT_A_DIRECTORY : statSync(path)) as FileSystemAdapter["statSync"],
  };
}

/**
 * Whether a matched file is in portcullis's state directory (include.ts): the directory that
 * holds it is, by real path (`realDirs` keeps each directory's for one match), or, for a link,
 * the file it leads to.
 */
function inStateDir(abs: string, kind: IncludeMatch["kind"], realDirs: Map<string, string | null>): boolean {
  if (stateDirGiven() === null) return false;
  const real = (p: string): string | null => {
    try {
      return realpathSync.native(p);
    } catch {
      return null;
    }
  };
  const d = dirname(abs);
  let rd = realDirs.get(d);
  if (rd === undefined) {
    rd = real(d);
    realDirs.set(d, rd);
  }
  if (rd !== null && inStateDirReal(join(rd, basename(abs)))) return true;
  if (kind === "file") return false;
  const target = real(abs);
  return target !== null && inStateDirReal(target);
}

function kindOf(abs: string): IncludeMatch["kind"] | null {
  let l: Stats;
  try {
    l = lstatSync(abs);
  } catch {
    return null; // gone since the walk
  }
  if (!l.isSymbolicLink()) return l.isFile() ? "file" : null;
  try {
    return statSync(abs).isFile() ? "link" : "broken";
  } catch {
    return "broken";
  }
}

function globbed(
  globSync: typeof GlobSync,
  cwd: string,
  patterns: string[],
  fs: FileSystemAdapter,
): string[] {
  try {
    return globSync(patterns, { cwd, dot: true, onlyFiles: true, followSymbolicLinks: true, fs });
  } catch {
    return [];
  }
}

/**
 * A pattern with no glob, as the glob library would match it (relative to cwd; a file, or a
 * link to something other than a directory), without a walk from the common ancestor of cwd and
 * the path: for a plugin outside the project, that can be all of /tmp.
 */
function plainPath(cwd: string, pattern: string): string[] {
  const abs = isAbsolute(pattern) ? pattern : join(cwd, pattern);
  try {
    if (lstatSync(abs).isDirectory() || statSync(abs).isDirectory()) return [];
  } catch {
    // a link to nothing is matched (and named); nothing at all is not
    try {
      lstatSync(abs);
    } catch {
      return [];
    }
  }
  return [relative(cwd, abs)];
}

/**
 * The files `patterns` match under `cwd`, links followed. Each positive pattern is walked on its
 * own (with every negation), to know which match nothing.
 */
export function matchIncludes(
  cwd: string,
  patterns: readonly string[],
  globSync: typeof GlobSync,
): IncludeMatches {
  const state: WalkState = { linkedDirs: [], entries: 0, over: false, stateDir: false };
  const stateHits: string[] = [];
  const realDirs = new Map<string, string | null>();
  let over: string | null = null;
  const fs = linkFollowingFs(state);
  const negations = patterns.filter((p) => p.startsWith("!"));
  const byRel = new Map<string, IncludeMatch>();
  const unmatched: string[] = [];
  const outside: OutsideMatch[] = [];
  for (const pattern of patterns) {
    if (pattern.startsWith("!")) continue;
    state.stateDir = false;
    // Beside a negation opening with `..` (`!../old/**`) the library walks above the working
    // directory, and a wildcard that reads `..` as a name (`.?/**`, `[.][.]/**`, `@(*)/**`)
    // matched files up there: outside every base, so unwatched, and never judged for its reach.
    const bases = patternBases(pattern, cwd);
    const rels =
      negations.length === 0 && !GLOB_CHARS.test(pattern)
        ? plainPath(cwd, pattern)
        : globbed(globSync, cwd, [pattern, ...negations], fs);
    let found = 0;
    for (const rel of rels) {
      const known = byRel.get(rel);
      if (known !== undefined) {
        found++;
        continue;
      }
      // `../plugins/x.js` as /…/plugins/x.js: the watcher and its stat poll know a file by this
      // name, and an event names the file without the `..` (a name left with it was never marked
      // seen, and the poll reported every change a second time, a round later)
      const abs = join(cwd, rel);
      if (!bases.some((b) => within(abs, b))) {
        outside.push({ pattern, rel, abs, bases });
        found++;
        continue;
      }
      const kind = kindOf(abs);
      if (kind === null) continue;
      // the gateway's own store, not the server's code: left out, and said once (warnIncludes)
      if (inStateDir(abs, kind, realDirs)) {
        state.stateDir = true;
        found++;
        continue;
      }
      byRel.set(rel, { rel, abs, kind, pattern });
      found++;
    }
    if (found === 0 && !state.stateDir) unmatched.push(pattern);
    if (state.stateDir) stateHits.push(pattern);
    if (state.over && over === null) over = pattern;
  }
  const files = [...byRel.values()].sort((a, b) => (a.rel < b.rel ? -1 : a.rel > b.rel ? 1 : 0));
  // one that another pattern matched under its own base is judged there: only the rest is refused
  const unjudged = outside
    .filter((o) => !byRel.has(o.rel))
    .sort((a, b) => (a.rel < b.rel ? -1 : a.rel > b.rel ? 1 : 0));
  return { files, linkedDirs: state.linkedDirs, unmatched, over, stateDir: stateHits, outside: unjudged };
}

/** Why a pattern matches nothing, when the path it names says so. */
function whyNoMatch(cwd: string, pattern: string): string {
  if (GLOB_CHARS.test(pattern)) return "";
  const abs = pattern.startsWith(sep) ? pattern : `${cwd}/${pattern}`;
  try {
    if (statSync(abs).isDirectory())
      return ` (it names a directory: give ${pattern.replace(/\/+$/, "")}/** for the files in it)`;
  } catch {}
  return "";
}

/**
 * Warnings for what the user's patterns do not cover, once per gateway (a capture runs at every
 * launch and change), each naming the pattern and where it was given (the config file, --watch):
 * a pattern matching no file, a matched link leading to no regular file (its text is digested,
 * not code), and a walk of linked directories that hit the bound.
 */
export function warnIncludes(label: string, cwd: string, m: IncludeMatches): void {
  const where = (p: string) => includeSource(cwd, p) ?? "identity.include";
  for (const p of m.unmatched) {
    warnOnce(
      label,
      `${where(p)}: ${JSON.stringify(p)} matches no file${whyNoMatch(cwd, p)}: nothing is digested or watched for it until a file matches`,
    );
  }
  for (const f of m.files) {
    if (f.kind !== "broken") continue;
    warnOnce(
      label,
      `${where(f.pattern)}: ${JSON.stringify(f.pattern)} matches ${f.rel}, a symbolic link to a missing file or to no regular file: only the link's text is digested`,
    );
  }
  for (const p of m.stateDir) {
    warnOnce(
      label,
      `${where(p)}: ${JSON.stringify(p)} reaches portcullis's state directory ${stateDirGiven() ?? ""}: its files (the store, the audit log, the keyring) are not the server's code, and are left out of its identity and not watched`,
    );
  }
  if (m.over !== null) {
    warnOnce(
      label,
      `${where(m.over)}: the directories ${JSON.stringify(m.over)} reaches through symbolic links hold more than ${MAX_LINKED_FILES} entries: the walk stopped there, and what it did not reach is not digested or watched`,
    );
  }
}
