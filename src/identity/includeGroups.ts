// An include pattern that opens with a group of alternatives (`{/usr,/opt}/**`, `{,/}usr/**`,
// `@(/opt/a|b)/**`) is not absolute to the glob library (tinyglobby, picomatch): it reads the whole
// pattern relative to the server's working directory, and an alternative that makes it an absolute
// path can never match there. Accepted, such a pattern digested and watched nothing of what it
// named (the watcher watched the working directory instead), with at most a warning that it
// matched no file "until a file matches"; and its reach went unjudged (includeReach.ts). So
// include.ts refuses it, naming the absolute path it meant; each absolute path is its own pattern.
// So too a brace group of alternatives holding `..` (`{plugins,../shared}/**`): picomatch reads
// any `..` in braces as a range (`{1..3}`), and the group as a class of single characters.
// And a group with `~` at an alternative's start: the home only at a pattern's start (include.ts).

import { type Item, parse, raw } from "./includeScan.js";

/**
 * An expansion of `items` that is an absolute path: the alternatives chosen up to its first `/`,
 * the rest as written (`/usr/**` of `{/usr,/opt}/**`); null when no expansion starts with `/`.
 */
function absoluteExpansion(items: Item[], top: boolean): string | null {
  for (let k = 0; k < items.length; k++) {
    const item = items[k]!;
    const rest = raw(items.slice(k + 1));
    // `\/usr/**` opens with no group: no absolute path of an alternative (and it never matches)
    if ("ch" in item) return item.ch === "/" && !(top && k === 0) ? item.ch + rest : null;
    for (const alt of item.alts) {
      const abs = absoluteExpansion(alt, false);
      if (abs !== null) return abs + rest;
    }
    // an alternative that can be nothing leaves the next item at the start
    if (!item.optional && !item.alts.some(canBeEmpty)) return null;
  }
  return null;
}

function canBeEmpty(items: Item[]): boolean {
  return items.every((it) => "alts" in it && (it.optional || it.alts.some(canBeEmpty)));
}

/**
 * For a pattern (`~` expanded, no `!`): an absolute path one of its leading alternatives makes of
 * it (`/usr/**` of `{/usr,/opt}/**`), or null when it is absolute itself or none does.
 */
export function absoluteAlternative(body: string): string | null {
  const items = body.startsWith("/") ? null : parse(body);
  return items === null ? null : absoluteExpansion(items, true);
}

function isDot(it: Item | undefined): boolean {
  return it !== undefined && "ch" in it && it.ch === ".";
}

/**
 * Whether the alternative holds `..` of its own brace group: picomatch gives dots to the innermost
 * brace open, so also those in a parenthesised group inside it (`{@(..),a}`), not in a brace group.
 */
function dotDot(items: Item[]): boolean {
  return items.some(
    (it, j) => (isDot(it) && isDot(items[j + 1])) || ("alts" in it && !it.brace && it.alts.some(dotDot)),
  );
}

/** The innermost brace group of alternatives in `items` that holds `..`, as written, or null. */
function rangeLike(items: Item[]): string | null {
  for (const item of items) {
    if ("ch" in item) continue;
    for (const alt of item.alts) {
      const inner = rangeLike(alt);
      if (inner !== null) return inner;
    }
    if (item.brace && item.alts.some(dotDot)) return item.src;
  }
  return null;
}

/**
 * A brace group of alternatives in the pattern that holds `..` (`{plugins,../shared}`), which the
 * glob library reads as a range of single characters, not as its alternatives; or null.
 */
export function rangeGroup(body: string): string | null {
  const items = parse(body);
  return items === null ? null : rangeLike(items);
}

/** The first group in `items` with an alternative opening with `~`, as written, or null. */
function homeLike(items: Item[]): string | null {
  for (const item of items) {
    if ("ch" in item) continue;
    if (item.alts.some((alt) => alt[0] !== undefined && "ch" in alt[0] && alt[0].ch === "~")) return item.src;
    for (const alt of item.alts) {
      const inner = homeLike(alt);
      if (inner !== null) return inner;
    }
  }
  return null;
}

/**
 * A group with an alternative opening with `~` (`{~/a,~/b}`), or null. `~` is the home directory
 * only at the start of a pattern (include.ts); in a group the glob library reads it as a folder
 * named `~`, and the home made of it there would be an absolute alternative, which never matches.
 */
export function homeGroup(body: string): string | null {
  const items = parse(body);
  return items === null ? null : homeLike(items);
}
