// How far an identity include pattern's walk reaches. Every capture (each launch, each change)
// walks a pattern's tree and digests what it matches, and the watcher watches each of its
// directories: `/**` walked the whole file system at every capture, `/usr/**` a system tree of
// hundreds of thousands of files, `~/**` every cache and download of the home directory. None of
// them is a server's code, and a walk cut short by a bound would leave part of the pattern
// unwatched without the user having asked for less; so such a pattern is refused when the gateway
// starts, as one that can never match is (include.ts), naming where it was given.
import { realpathSync } from "node:fs";
import { dirname, isAbsolute, join, resolve, sep } from "node:path";
import { homeDirectory } from "../util/xdg.js";

/** The characters that make a pattern a glob (include.ts re-exports them). */
export const GLOB_CHARS = /[*?[\]{}()!+@]/;

/** The real path of `dir` when it exists, else `dir`: a link to / reaches / too. */
function real(dir: string): string {
  try {
    return realpathSync.native(dir);
  } catch {
    return dir;
  }
}

/**
 * Why the positive pattern `body` (its `~` expanded) walks too much to be a server's code, or null.
 * Refused: a walk from the file system's root (`/`, `/**`, `/*.js`, `../../**`
 * climbing there, any pattern from a working directory of `/`); a recursive walk (`**`) of a
 * directory right under the root (`/usr/**`, `/home/**`) or of the home directory itself (`~/**`).
 * `/usr/local/lib/plugins/**`, `~/.config/app/*.json` and a plain `/usr` are accepted. A pattern
 * opening with a group is judged as the glob library reads it, from `cwd`; one whose group holds an
 * absolute path (`{/usr,/opt}/**`) is refused before this, as one that can never match (include.ts).
 */
export function tooWide(body: string, cwd: string): string | null {
  const segments = body.split("/");
  const k = segments.findIndex((s) => GLOB_CHARS.test(s));
  const fixed = k < 0 ? segments : segments.slice(0, k);
  const recursive = k >= 0 && segments.slice(k).some((s) => s.includes("**"));
  const given = isAbsolute(body) ? join(sep, ...fixed) : resolve(cwd, ...fixed);
  const base = real(given);
  const shown = base === given ? base : `${given} (${base})`;
  const fix = "give the directory of the server's own files (such as /opt/plugins/**)";
  if (base === sep)
    return `walks the whole file system (from ${shown}) at every capture, and watches it; ${fix}`;
  if (!recursive) return null;
  if (base === real(homeDirectory()))
    return `walks the whole home directory ${shown} at every capture, and watches it; ${fix}`;
  if (dirname(base) === sep)
    return `walks all of ${shown} (a directory at the top of the file system) at every capture, and watches it; ${fix}`;
  return null;
}
