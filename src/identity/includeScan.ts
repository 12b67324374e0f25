// An include pattern read character by character as the glob library (picomatch) reads it, for
// the group checks (includeGroups.ts) and the balance and depth checks (include.ts). Escapes are
// picomatch's, not a shell's: a backslash before `.`, `;` or `/` is dropped and the character read
// as itself (so `{a,\.\./b}` is a range, as `{a,../b}` is, and `{\/usr,a}` an absolute
// alternative); a run of more than two backslashes escapes the character after it whatever the
// run's length. A `}` that closes no `{` is a literal character (`\{a,b}` names the folder
// `{a,b}`): read as a closer, it had such a pattern refused as "unclosed".

/** One character of the pattern (or an escape and what it escapes), as the glob library reads it. */
export interface Token {
  /** as written */
  src: string;
  /** as read: `.` for `\.`, `\{` for an escaped `{` (a literal, never a group) */
  ch: string;
  /** an unescaped `{`, `(` or `[` that opens, a `}`, `)` or `]` that closes; else a character */
  role: "open" | "close" | "char";
}

/** The tokens of `s`, and for each opener the index of its closer; null when they do not pair. */
export interface Scan {
  tokens: Token[];
  closer: Map<number, number>;
}

const CLOSES: Record<string, string> = { "]": "[", "}": "{", ")": "(" };

function tokenize(s: string): Token[] {
  const out: Token[] = [];
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (c !== "\\") {
      out.push({ src: c, ch: c, role: "[{(".includes(c) ? "open" : c in CLOSES ? "close" : "char" });
      continue;
    }
    const next = s[i + 1];
    if (next === undefined) {
      out.push({ src: c, ch: c, role: "char" });
    } else if (next === "." || next === ";" || next === "/") {
      out.push({ src: c + next, ch: next, role: "char" });
      i++;
    } else {
      let run = 0;
      while (s[i + 1 + run] === "\\") run++;
      // picomatch collapses a run of more than two, then escapes what follows it
      const end = run > 2 ? i + run + 1 : i + 1;
      const src = s.slice(i, end + 1);
      out.push({ src, ch: src, role: "char" });
      i = end;
    }
  }
  return out;
}

/**
 * The pattern's tokens with its groups paired, or null when an opener is never closed or a
 * closer closes another kind (`{a)`): a malformed glob. A `}` with no `{` open is a character.
 */
export function scanGroups(s: string): Scan | null {
  const tokens = tokenize(s);
  const closer = new Map<number, number>();
  const open: number[] = [];
  let braces = 0;
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!;
    if (t.role === "open") {
      open.push(i);
      if (t.ch === "{") braces++;
    } else if (t.role === "close") {
      if (t.ch === "}" && braces === 0) {
        t.role = "char";
        continue;
      }
      const o = open.pop();
      if (o === undefined || tokens[o]!.ch !== CLOSES[t.ch]) return null;
      if (t.ch === "}") braces--;
      closer.set(o, i);
    }
  }
  return open.length === 0 ? { tokens, closer } : null;
}

/** The deepest nesting of groups in a scanned pattern (brackets included). */
export function groupDepth(scan: Scan): number {
  let depth = 0;
  let most = 0;
  for (const t of scan.tokens) {
    if (t.role === "open") most = Math.max(most, ++depth);
    else if (t.role === "close") depth--;
  }
  return most;
}

/**
 * A pattern as literal characters (`ch` as the glob library reads it, `src` as written) and groups
 * of alternatives (each again such a sequence). `repeat`: `*(…)`, `+(…)`, which match their
 * alternatives any number of times in a row.
 */
export type Item =
  | { ch: string; src: string }
  | { alts: Item[][]; optional: boolean; repeat: boolean; brace: boolean; src: string };

/** The source text of tokens `from` to `to` (excluded). */
function text(scan: Scan, from: number, to: number): string {
  return scan.tokens
    .slice(from, to)
    .map((t) => t.src)
    .join("");
}

/** The top-level alternatives of the group opened at token `open`, as token ranges. */
function alternatives(scan: Scan, open: number, end: number, sepChar: string): [number, number][] {
  const out: [number, number][] = [];
  let start = open + 1;
  for (let i = open + 1; i < end; i++) {
    const t = scan.tokens[i]!;
    if (t.role === "open") i = scan.closer.get(i)!;
    else if (t.role === "char" && t.ch === sepChar) {
      out.push([start, i]);
      start = i + 1;
    }
  }
  out.push([start, end]);
  return out;
}

/**
 * The items of tokens `from` to `to`. A brace group is one with a top-level comma (`{a}` and a
 * range `{1..3}` are one literal item each); a parenthesised one (extglob `@(…)`, `?(…)`, `*(…)`,
 * `+(…)`, or bare) is split at `|`, and `?(…)`, `*(…)` may also be nothing. A bracket class
 * (`[ab]`) is one literal item; everything else is a literal character.
 */
function parseTokens(scan: Scan, from: number, to: number): Item[] {
  const items: Item[] = [];
  const { tokens } = scan;
  for (let i = from; i < to; i++) {
    const t = tokens[i]!;
    const ext =
      t.role === "char" &&
      "@?*+".includes(t.ch) &&
      tokens[i + 1]?.role === "open" &&
      tokens[i + 1]!.ch === "(";
    const open = ext ? i + 1 : i;
    const o = tokens[open]!;
    if (o.role === "open") {
      const end = scan.closer.get(open)!;
      const src = text(scan, i, end + 1);
      const parts = o.ch === "[" ? [] : alternatives(scan, open, end, o.ch === "{" ? "," : "|");
      if (o.ch === "(" || parts.length > 1) {
        items.push({
          alts: parts.map(([a, b]) => parseTokens(scan, a, b)),
          optional: ext && (t.ch === "?" || t.ch === "*"),
          repeat: ext && (t.ch === "*" || t.ch === "+"),
          brace: o.ch === "{",
          src,
        });
      } else {
        // a range (`{1..3}`) or a class (`[.]`), one item: its dots are not a `..` of the group around it
        items.push({ ch: src, src });
      }
      i = end;
      continue;
    }
    items.push({ ch: t.ch, src: t.src });
  }
  return items;
}

/** The pattern's items; null when its groups do not pair (include.ts refuses it before). */
export function parse(s: string): Item[] | null {
  const scan = scanGroups(s);
  return scan === null ? null : parseTokens(scan, 0, scan.tokens.length);
}

/** The text of `items` as written. */
export function raw(items: Item[]): string {
  return items.map((it) => it.src).join("");
}
