// The patterns an include pattern's groups stand for, for the watcher (watch.ts): it watches each
// pattern's base, the directory before its first glob. `{plugins,lib}/**` has no such directory
// but the working directory, so all of it was watched (every build output and cache of the
// project, each a watch), though only plugins/ and lib/ can hold a match. As `plugins/**` and
// `lib/**`, each alternative is watched from its own base. Only a group that matches exactly one
// of its alternatives (`{…}`, `@(…)`, `(…)`, `?(…)` also nothing) is written out; from a group
// that repeats (`*(…)`, `+(…)`) or negates (`!(…)`) on, the pattern is kept as written, so its
// base stays before that group, as wide as before and never narrower than what can match.
import { resolve } from "node:path";
import { type Item, parse, raw } from "./includeScan.js";

/** More would be a watch list no one wrote: the pattern is watched from its own base then. */
const MAX_EXPANSIONS = 64;

function expand(items: Item[]): string[] | null {
  let out = [""];
  for (let k = 0; k < items.length; k++) {
    const item = items[k]!;
    if ("ch" in item) {
      out = out.map((o) => o + item.ch);
      continue;
    }
    const prev = items[k - 1];
    if (item.repeat || (prev !== undefined && "ch" in prev && prev.ch === "!")) {
      const rest = raw(items.slice(k));
      return out.map((o) => o + rest);
    }
    const choices: string[] = item.optional ? [""] : [];
    for (const alt of item.alts) {
      const e = expand(alt);
      if (e === null) return null;
      choices.push(...e);
      if (choices.length > MAX_EXPANSIONS) return null;
    }
    if (out.length * choices.length > MAX_EXPANSIONS) return null;
    out = out.flatMap((o) => choices.map((c) => o + c));
  }
  return out;
}

/**
 * The patterns `pattern` stands for, its groups written out (`plugins/**` and `lib/**` of
 * `{plugins,lib}/**`), each once; `[pattern]` when it has no group, or would stand for more than
 * MAX_EXPANSIONS.
 */
export function expansions(pattern: string): string[] {
  const items = parse(pattern);
  const e = items === null ? null : expand(items);
  // one made absolute by a group never matches (include.ts refuses it): never a base of `/`
  if (e === null || (!pattern.startsWith("/") && e.some((x) => x.startsWith("/")))) return [pattern];
  return [...new Set(e)];
}

/** The characters after which a path segment is no longer a plain name (`\` escapes one). */
const NOT_PLAIN = /[*?[\]{}()!+@\\]/;

/**
 * The directories a positive pattern (`~` expanded) names, absolute: for each of its expansions
 * the path before its first segment that is not a plain name (`/opt/plugins` of
 * `/opt/plugins/*.js`, the working directory of `*.js`), the whole path for one with no glob.
 * What the pattern matches lies under one of them; these are what the reach check judges
 * (includeReach.ts) and the watcher watches. A segment with an escape ends the base early: wider,
 * never narrower than what the pattern names.
 */
export function patternBases(pattern: string, cwd: string): string[] {
  return expansions(pattern).map((one) => {
    const segments = one.split("/");
    const k = segments.findIndex((s) => NOT_PLAIN.test(s));
    const fixed = k < 0 ? segments : segments.slice(0, k);
    return one.startsWith("/") ? resolve("/", ...fixed) : resolve(cwd, ...fixed);
  });
}
