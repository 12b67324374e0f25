// An include pattern that opens with a group of alternatives (`{/usr,/opt}/**`, `{,/}usr/**`,
// `@(/opt/a|b)/**`) is not absolute to the glob library (tinyglobby, picomatch): it reads the whole
// pattern relative to the server's working directory, and an alternative that makes it an absolute
// path can never match there. Accepted, such a pattern digested and watched nothing of what it
// named (the watcher watched the working directory instead), with at most a warning that it
// matched no file "until a file matches"; and its reach went unjudged (includeReach.ts). So
// include.ts refuses it, naming the absolute path it meant; each absolute path is its own pattern.
// So too a brace group of alternatives holding `..` (`{plugins,../shared}/**`): picomatch reads
// any `..` in braces as a range (`{1..3}`), and the group as a class of single characters.

/** A pattern as literal characters and groups of alternatives (each again such a sequence). */
type Item = { ch: string; src: string } | { alts: Item[][]; optional: boolean; brace: boolean; src: string };

/** Where the group opened at `open` closes (its matching `}` or `)`), or -1. */
function closing(s: string, open: number): number {
  let depth = 0;
  for (let i = open; i < s.length; i++) {
    const c = s[i]!;
    if (c === "\\") i++;
    else if (c === "{" || c === "(") depth++;
    else if (c === "}" || c === ")") {
      depth--;
      if (depth === 0) return i;
    }
  }
  return -1;
}

/** The top-level alternatives of the group's inside, split at `sepChar`. */
function alternatives(inside: string, sepChar: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < inside.length; i++) {
    const c = inside[i]!;
    if (c === "\\") i++;
    else if (c === "{" || c === "(") depth++;
    else if (c === "}" || c === ")") depth--;
    else if (c === sepChar && depth === 0) {
      out.push(inside.slice(start, i));
      start = i + 1;
    }
  }
  out.push(inside.slice(start));
  return out;
}

/**
 * The pattern's items. A brace group is one with a top-level comma (`{a}` and a range `{1..3}` are
 * one literal item each); a parenthesised one (extglob `@(…)`, `?(…)`, `*(…)`, `+(…)`, or bare) is
 * split at `|`, and `?(…)`, `*(…)` may also be nothing. Everything else is a literal character.
 */
function parse(s: string): Item[] {
  const items: Item[] = [];
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (c === "\\") {
      items.push({ ch: s.slice(i, i + 2), src: s.slice(i, i + 2) });
      i++;
      continue;
    }
    const ext = "@?*+".includes(c) && s[i + 1] === "(";
    const open = ext ? i + 1 : i;
    if (s[open] === "{" || s[open] === "(") {
      const end = closing(s, open);
      const parts = end < 0 ? [] : alternatives(s.slice(open + 1, end), s[open] === "{" ? "," : "|");
      if (end >= 0 && (s[open] === "(" || parts.length > 1)) {
        items.push({
          alts: parts.map(parse),
          optional: ext && (c === "?" || c === "*"),
          brace: s[open] === "{",
          src: s.slice(i, end + 1),
        });
        i = end;
        continue;
      }
      // a range (`{1..3}`), one item: its dots are not a `..` of the group around it
      if (end >= 0 && s[open] === "{" && !ext) {
        items.push({ ch: s.slice(i, end + 1), src: s.slice(i, end + 1) });
        i = end;
        continue;
      }
    }
    items.push({ ch: c, src: c });
  }
  return items;
}

/** The text of `items` as written. */
function raw(items: Item[]): string {
  return items.map((it) => it.src).join("");
}

/**
 * An expansion of `items` that is an absolute path: the alternatives chosen up to its first `/`,
 * the rest as written (`/usr/**` of `{/usr,/opt}/**`); null when no expansion starts with `/`.
 */
function absoluteExpansion(items: Item[]): string | null {
  for (let k = 0; k < items.length; k++) {
    const item = items[k]!;
    const rest = raw(items.slice(k + 1));
    if ("ch" in item) return item.ch === "/" ? item.ch + rest : null;
    for (const alt of item.alts) {
      const abs = absoluteExpansion(alt);
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
  return body.startsWith("/") ? null : absoluteExpansion(parse(body));
}

/** Whether the alternative holds `..` of its own (not in a group inside it). */
function dotDot(items: Item[]): boolean {
  return items.some((it, j) => "ch" in it && it.ch === "." && items[j + 1]?.src === ".");
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
  return rangeLike(parse(body));
}
