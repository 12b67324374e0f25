// Identity inputs given by the user (`identity.include` in portcullis.json, `--watch` on the
// command line): globs relative to the server's working directory, absolute paths, or `~/…`.
// A pattern that can never match is refused at start: a watched path that silently watches
// nothing lets a plugin change inside one epoch. One that matches nothing yet is accepted, and
// the capture warns of it (includeMatch.ts), naming where it was given.
import { existsSync, realpathSync } from "node:fs";
import { isAbsolute, join, resolve, sep } from "node:path";
import { homeDirectory } from "../util/xdg.js";
import { expansions } from "./includeBases.js";
import { climbingGroup } from "./includeClimb.js";
import { absoluteAlternative, homeGroup, rangeGroup } from "./includeGroups.js";
import { GLOB_CHARS, tooWide } from "./includeReach.js";
import { groupDepth, parse, scanGroups } from "./includeScan.js";

// a pattern is a glob when it has one of these (includeReach.ts keeps them: it needs them too)
export { GLOB_CHARS };

/**
 * Where each accepted pattern was given (the config key and file, or the flag), by working
 * directory and pattern: the capture that finds a pattern matching nothing names it there.
 */
const sources = new Map<string, string>();

export function includeSource(cwd: string, pattern: string): string | undefined {
  return sources.get(`${resolve(cwd)}\0${pattern}`);
}

/**
 * portcullis's own state directory (the store, its -wal and -shm, the keyring), as given and as
 * its real path: never the server's code. A pattern such as `../**` can reach it; its files are
 * left out of the identity and the watcher (includeMatch.ts, watch.ts, and the tree walks of
 * digest.ts): otherwise every write of the gateway's own audit log would be a change of the
 * server's code, and under `onChange: restart` a restart.
 */
let stateDir: { given: string; real: string } | null = null;

/** Sets the state directory the include patterns leave out (`run`, before the first capture). */
export function setStateDir(dir: string | null): void {
  if (dir === null) {
    stateDir = null;
    return;
  }
  const given = resolve(dir);
  let real = given;
  try {
    real = realpathSync.native(given);
  } catch {}
  stateDir = { given, real };
}

/** The state directory as given (for messages), or null when none is set. */
export function stateDirGiven(): string | null {
  return stateDir?.given ?? null;
}

function under(p: string, dir: string): boolean {
  return p === dir || p.startsWith(dir === sep ? dir : dir + sep);
}

/**
 * Whether `p`, a path with no symbolic link on its way (a watched tree's entry, a digested
 * tree's), is the state directory or under it, by its real path or as given. No file system
 * call: for watcher events and tree walks.
 */
export function inStateDirReal(p: string): boolean {
  return stateDir !== null && (under(p, stateDir.real) || under(p, stateDir.given));
}

export class IncludeError extends Error {
  override name = "IncludeError";
}

/**
 * `~` and `~/x` become the home directory by the one rule (xdg.ts): an empty or relative HOME is
 * passed over, else `~/x` under `HOME=` watched `x` of the server's working directory instead.
 */
function expandHome(pattern: string): string {
  if (pattern === "~") return homeDirectory();
  if (pattern.startsWith("~/")) return join(homeDirectory(), pattern.slice(2));
  return pattern;
}

/**
 * The group a pattern opens with when it is `!(…)`, else null. The glob library (tinyglobby) takes a
 * pattern opening with `!(` for a positive extglob, while a `!` opens a negation everywhere else
 * here: accepted, its files were digested, yet neither watched nor judged for their reach (both
 * skip negations). Refused rather than read as the library reads it: a negation that turns out to
 * add files is not what was written.
 */
function leadingExtglob(p: string): string | null {
  if (!p.startsWith("!(")) return null;
  const scan = scanGroups(p);
  const end = scan?.closer.get(1);
  if (scan === null || end === undefined) return null;
  return scan.tokens
    .slice(0, end + 1)
    .map((t) => t.src)
    .join("");
}

/** How deep a pattern may nest its groups (`{…}`, `(…)`): far past any real one. */
const MAX_GROUP_DEPTH = 32;

/**
 * The patterns with `~` expanded, each checked: refused (IncludeError naming `where`, the flag or
 * config key, and the pattern) when empty, malformed, a plain path that does not exist, one that an
 * alternative of its opening group makes absolute (includeGroups.ts: it can never match), one with
 * `..` in a brace group of alternatives (read as a range), one with `~` in a group, one whose group
 * makes a `..` segment (includeClimb.ts), one nesting groups too deep, one opening with `!(` (a
 * positive pattern to the glob library: leadingExtglob), or one whose walk (each alternative's)
 * reaches the whole file system, a top-level directory or the home directory (includeReach.ts).
 * Groups and escapes are read as the glob library reads them (includeScan.ts). Relative patterns
 * stay relative to `cwd`; absolute ones stay absolute and are watched there.
 */
export function checkIncludes(patterns: readonly string[], cwd: string, where: string): string[] {
  return patterns.map((given) => {
    const p = expandHome(given.trim());
    // a whole sentence, ending as every other refusal does
    const bad = (why: string) => new IncludeError(`${where}: ${JSON.stringify(given)} ${why}.`);
    if (p === "" || p === "!") throw bad("is empty; give a path or a glob such as dist/**");
    if (p.includes("\0")) throw bad("contains a NUL byte");
    if (given.startsWith("~") && !given.startsWith("~/") && given !== "~") {
      throw bad("names another user's home directory (~user); give an absolute path");
    }
    const body = p.startsWith("!") ? p.slice(1) : p;
    const scan = scanGroups(body);
    if (scan === null) throw bad("is not a valid glob (an unclosed [, { or ( )");
    // the group checks below read the pattern recursively: a pattern nesting thousands of groups
    // ended `run` on a stack overflow (exit 70) instead of a sentence
    if (groupDepth(scan) > MAX_GROUP_DEPTH)
      throw bad(`nests groups more than ${MAX_GROUP_DEPTH} deep; give a simpler pattern`);
    const absolute = absoluteAlternative(body);
    if (absolute !== null) {
      throw bad(
        `can never match ${absolute}: it opens with a group of alternatives, so the glob library reads it relative to the working directory, where an absolute path never matches; give each absolute path as a pattern of its own, without the group`,
      );
    }
    const range = rangeGroup(body);
    if (range !== null) {
      throw bad(
        `does not match what it lists: the glob library reads the group ${range}, which holds "..", as a range such as {1..3}, a class of single characters; give each alternative as a pattern of its own`,
      );
    }
    const home = homeGroup(body);
    if (home !== null) {
      throw bad(
        `has ~ inside the group ${home}: ~ is the home directory only at the start of a pattern, and in a group the glob library reads it as a folder named ~ in the working directory; give each home path as a pattern of its own (such as ~/a/**), or the group after ~/ (such as ~/{a,b}/**)`,
      );
    }
    const climbing = climbingGroup(parse(body)!);
    if (climbing !== null) {
      throw bad(
        `can never match what its group ${climbing} lists with "..": the glob library matches a group's alternatives only below the directory the group is in, never climbing out of it; give each alternative that climbs as a pattern of its own, opening with its .. (such as ../shared/**)`,
      );
    }
    const positiveGroup = leadingExtglob(p);
    if (positiveGroup !== null) {
      throw bad(
        `opens with the group ${positiveGroup}, which the glob library reads as a pattern of files to digest (any name but what the group lists), not as a negation; to digest them write it after ./ (such as ./${p}), and to leave them out give it a second ! (such as !${p})`,
      );
    }
    if (!p.startsWith("!")) {
      // each alternative of a group as its own pattern: `~/{a,b}/**` walks ~/a and ~/b, not the home
      for (const one of expansions(body)) {
        const wide = tooWide(one, cwd);
        if (wide !== null) throw bad(wide);
      }
    }
    if (!GLOB_CHARS.test(body) && !p.startsWith("!")) {
      const abs = isAbsolute(body) ? body : join(cwd, body);
      if (!existsSync(abs)) throw bad(`can never match: ${abs} does not exist (and it has no glob)`);
    }
    const key = `${resolve(cwd)}\0${p}`;
    if (!sources.has(key)) sources.set(key, where);
    return p;
  });
}
