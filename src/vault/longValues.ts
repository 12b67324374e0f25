/**
 * The search for the forms of a long released value, without a regular expression built from it.
 * ReleasedValues (src/vault/scrub.ts) searches the forms of its values with one regex alternation,
 * and their percent spellings with regexes of one group per character (src/vault/percentSpelling.ts):
 * fast for the values of everyday keys, but past a few thousand characters V8 can no longer
 * compile them ("Regular expression too large") or runs out of stack matching them, and the vault
 * takes values up to 64 KiB (`run --url --header` longer ones). A value over LONG_VALUE characters
 * is searched here instead, every form as the regexes search it:
 *   - each written form (the listed forms and the hex forms): every occurrence, overlapping ones
 *     too, by indexOf and then, only where it is found, a Knuth-Morris-Pratt pass, so that text
 *     that repeats a periodic form costs one pass and not one comparison of the form per position;
 *   - the percent spelling (each character as itself or as its UTF-8 bytes in `%XX`, either hex
 *     case, a space also "+"): from each place where the first character starts, in either
 *     spelling, the characters are read one after the other, keeping every place the spelling read
 *     so far can end (at most a few: only a "%" of the value can be read two ways), and the
 *     furthest end of a complete spelling is taken. A spelling that starts inside one found and
 *     runs on past its end is found too (from the value's borders, onePlaceOccurrences). Text built to start many spellings that run a
 *     long way before failing would cost the length of the value at each start; the work is
 *     bounded (PERCENT_WORK per character of the text), and past it the rest of the text from that
 *     start is taken as a spelling of the value: more is replaced, nothing is let through.
 */

import { jsonLevels } from "./percentSpelling.js";

/** The longest value (in UTF-16 code units) the regexes of ReleasedValues search; longer ones are searched here. */
export const LONG_VALUE = 256;

/** Steps of the percent search allowed per character of the text searched (plus PERCENT_SLACK), before it fails closed. */
const PERCENT_WORK = 8;
const PERCENT_SLACK = 4096;

/** Where a form of a value occurs: text.slice(start, end). */
export interface Found {
  start: number;
  end: number;
}

/** One character of a value, as the percent spelling may write it. */
interface PercentChar {
  /** the character as itself (one or two UTF-16 code units) */
  self: string;
  /** its UTF-8 bytes, each written `%XX` (none for a lone surrogate, which has no bytes of its own) */
  bytes: number[] | null;
  /** a space, which form encoding writes "+" */
  space: boolean;
  /** as itself inside JSON strings, one level after another (jsonLevels: `\"`, `\\\"`…) */
  escaped: string[];
}

/** A written form and, once it is first found somewhere, its KMP failure table. */
export class WrittenForm {
  private table: Int32Array | null = null;
  constructor(readonly text: string) {}

  /**
   * Every occurrence of the form in `t`, overlapping ones too, in order; with `join`, those that
   * overlap as one (text that repeats a form that repeats itself has one at every place: a
   * search that only needs what they cover keeps one, not one per place).
   */
  occurrencesIn(t: string, out: Found[], join = false): void {
    const f = this.text;
    const first = t.indexOf(f);
    if (first === -1) return;
    const table = this.failureTable();
    let k = 0;
    let last: Found | null = null;
    for (let i = first; i < t.length; i++) {
      const c = t.charCodeAt(i);
      while (k > 0 && f.charCodeAt(k) !== c) k = table[k - 1]!;
      if (f.charCodeAt(k) === c) k++;
      if (k === f.length) {
        const start = i + 1 - f.length;
        if (join && last !== null && start < last.end) last.end = i + 1;
        else {
          last = { start, end: i + 1 };
          out.push(last);
        }
        k = table[k - 1]!;
      }
    }
  }

  private failureTable(): Int32Array {
    if (this.table) return this.table;
    const f = this.text;
    const table = new Int32Array(f.length);
    for (let i = 1, k = 0; i < f.length; i++) {
      while (k > 0 && f.charCodeAt(i) !== f.charCodeAt(k)) k = table[k - 1]!;
      if (f.charCodeAt(i) === f.charCodeAt(k)) k++;
      table[i] = k;
    }
    this.table = table;
    return table;
  }
}

/** A long released value: its written forms and its percent spelling, searched without a regex. */
export class LongValue {
  private readonly written: WrittenForm[];
  private readonly chars: PercentChar[];
  /** the longest percent spelling of the value, in characters */
  readonly percentLongest: number;
  /**
   * whether a character of the value can be read two ways at one place: a "%" (as itself, or
   * "%25"), or a "\" inside JSON strings (as itself, or escaped at some level)
   */
  private readonly twoWays: boolean;
  /** the failure table over the value's characters, once a spelling is found (border) */
  private borders: Int32Array | null = null;
  /** onePlaceOccurrences' places of the characters of a spelling, and of one read on from its end */
  private places: [Int32Array, Int32Array] | null = null;

  /**
   * `forms`: every written form of `value` (its listed forms and hex forms, src/vault/scrub.ts);
   * `levels`: how many levels of JSON strings a character of the percent spelling kept as itself
   * may be escaped in (src/vault/percentSpelling.ts, jsonLevels).
   */
  constructor(
    readonly value: string,
    readonly scope: string,
    forms: Iterable<string>,
    levels = 0,
  ) {
    this.written = [...new Set(forms)].filter((f) => f !== "").map((f) => new WrittenForm(f));
    this.chars = [];
    let longest = 0;
    for (const c of value) {
      const lone = c.length === 1 && c.charCodeAt(0) >= 0xd800 && c.charCodeAt(0) <= 0xdfff;
      const bytes = lone ? null : [...Buffer.from(c, "utf8")];
      const escaped = jsonLevels(c, levels);
      this.chars.push({ self: c, bytes, space: c === " ", escaped });
      longest += Math.max(c.length, 3 * (bytes?.length ?? 0), ...escaped.map((e) => e.length));
    }
    this.percentLongest = longest;
    // (a run of backslashes spells a "\" of the value kept as itself at several levels at once:
    // `\\\\` is two as themselves, or one escaped once; a `"` or a control has one escape at a
    // place, its backslashes then itself, and no other spelling of it starts with "\")
    this.twoWays = value.includes("%") || (levels > 0 && value.includes("\\"));
  }

  /** Whether some written form occurs in `t` (the percent spelling is not looked at). */
  writtenIn(t: string): boolean {
    return this.written.some((f) => t.includes(f.text));
  }

  /** Whether some written form, lower-cased, occurs in `lower` (a lower-cased host name). */
  caselessIn(lower: string): boolean {
    return this.written.some((f) => f.text.length <= lower.length && lower.includes(f.text.toLowerCase()));
  }

  /**
   * Every occurrence of every written form in `t`, in no particular order; with `join`, those of
   * a form that overlap as one (WrittenForm.occurrencesIn).
   */
  writtenOccurrences(t: string, out: Found[] = [], join = false): Found[] {
    for (const f of this.written) f.occurrencesIn(t, out, join);
    return out;
  }

  /**
   * Every percent spelling of the value in `t`: from each place one can start, to the furthest
   * place it can end, those that start inside an earlier one too (`{%7b` inside `{{%7b`, for a
   * value `{{`: a search that went on past a spelling's end, as a global regex does, left `%7b`).
   * Past the work bound, the rest of `t` from where the search stood (see the module comment).
   */
  percentOccurrences(t: string, out: Found[] = []): Found[] {
    if (!this.twoWays) return this.onePlaceOccurrences(t, out);
    let budget = PERCENT_WORK * t.length + PERCENT_SLACK;
    // a "%" of the value can be read two ways: every place is tried as a start
    for (let s = 0; s < t.length; s++) {
      if (!this.mayStartAt(t, s)) continue;
      let ends = [s];
      for (let k = 0; k < this.chars.length && ends.length > 0; k++) {
        budget -= ends.length;
        if (budget < 0) break;
        ends = this.stepsOf(t, ends, this.chars[k]!);
      }
      if (budget < 0) {
        out.push({ start: s, end: t.length });
        return out;
      }
      if (ends.length > 0) out.push({ start: s, end: Math.max(...ends) });
    }
    return out;
  }

  /**
   * percentOccurrences for a value without "%", whose characters each have at most one spelling
   * at a place: one place at a time. After a spelling is found the search goes on past its end,
   * and a spelling that starts inside it and runs on past that end is found from the value's
   * borders (its last b characters that are also its first b): such a spelling starts where one
   * of them does, and its first b characters are the ones read already, so only what follows the
   * end is read, for the longest border that goes on, then from that spelling's end again. The
   * one other place inside a spelling found where another can start is inside one of its `%XX`
   * (its hex digits read as characters): those places are tried as any other. Trying every
   * place inside a spelling instead read again, from each, all of the spelling after it: for a
   * value that repeats itself (64 KiB of a 17-character unit) that ran past the work bound, and
   * the rest of the text was taken.
   */
  private onePlaceOccurrences(t: string, out: Found[]): Found[] {
    let budget = PERCENT_WORK * t.length + PERCENT_SLACK;
    const n = this.chars.length;
    // at[(o + i) % m]: where the value's character i starts in the spelling found last (i = n:
    // its end), a ring from `o`, so that moving on to the spelling from a border shifts nothing
    // (shifting the places along by the value at each step cost the value's length per step);
    // kept from call to call (a line is searched for each value, and most lines have no spelling)
    this.places ??= [new Int32Array(n + 1), new Int32Array(n + 1)];
    const [at, next] = this.places;
    const m = n + 1;
    let o = 0;
    // where the spellings found so far end: a place before it is tried only inside a `%XX`
    let covered = 0;
    for (let s = 0; s < t.length; s++) {
      if (s < covered && t.charCodeAt(s - 1) !== 0x25 && t.charCodeAt(s - 2) !== 0x25) continue;
      if (!this.mayStartAt(t, s)) continue;
      let p = s;
      for (let k = 0; k < n && p !== -1; k++) {
        if (--budget < 0) break;
        p = stepOf(t, p, this.chars[k]!);
      }
      if (budget < 0) {
        out.push({ start: s, end: t.length });
        return out;
      }
      if (p === -1) continue;
      out.push({ start: s, end: p });
      // the places of its characters, read again now that it is found: most starts fail, and
      // the search from them is kept to the reading alone
      o = 0;
      at[0] = s;
      for (let k = 0; k < n; k++) at[k + 1] = stepOf(t, at[k]!, this.chars[k]!);
      let end = p;
      for (let b = this.border(n); b > 0; ) {
        // the spelling that starts where the border b does, read on from `end`
        let q = end;
        for (let k = b; k < n && q !== -1; k++) {
          if (--budget < 0) break;
          q = stepOf(t, q, this.chars[k]!);
          next[k + 1] = q;
        }
        if (budget < 0) {
          out.push({ start: at[(o + n - b) % m]!, end: t.length });
          return out;
        }
        if (q === -1) {
          b = this.border(b);
          continue;
        }
        out.push({ start: at[(o + n - b) % m]!, end: q });
        // its characters 0..b are the last b + 1 places, its others those just read
        o = (o + n - b) % m;
        for (let i = b + 1; i <= n; i++) at[(o + i) % m] = next[i]!;
        end = q;
        b = this.border(n);
      }
      covered = Math.max(covered, end);
    }
    return out;
  }

  /** The longest border of the value's first `k` characters (their last ones that are also their first), shorter than `k`. */
  private border(k: number): number {
    if (this.borders === null) {
      // the failure table of Knuth-Morris-Pratt over the value's characters
      const c = this.chars;
      const f = new Int32Array(c.length);
      for (let i = 1, j = 0; i < c.length; i++) {
        while (j > 0 && c[i]!.self !== c[j]!.self) j = f[j - 1]!;
        if (c[i]!.self === c[j]!.self) j++;
        f[i] = j;
      }
      this.borders = f;
    }
    return k > 0 ? this.borders[k - 1]! : 0;
  }

  /** Whether the first character of the value can start at `s`, as itself, `%XX` or "+". */
  private mayStartAt(t: string, s: number): boolean {
    const c = t.charCodeAt(s);
    const first = this.chars[0]!;
    return (
      c === first.self.charCodeAt(0) ||
      (c === 0x25 && first.bytes !== null) ||
      (c === 0x2b && first.space) ||
      (c === 0x5c && first.escaped.length > 0)
    );
  }

  /** Every place after one spelling of `ch` starting at one of `from` (no place twice). */
  private stepsOf(t: string, from: number[], ch: PercentChar): number[] {
    const next: number[] = [];
    const add = (p: number) => {
      if (!next.includes(p)) next.push(p);
    };
    for (const p of from) {
      if (t.startsWith(ch.self, p)) add(p + ch.self.length);
      if (ch.bytes !== null && percentBytesAt(t, p, ch.bytes)) add(p + 3 * ch.bytes.length);
      if (ch.space && t.charCodeAt(p) === 0x2b) add(p + 1);
      for (const e of ch.escaped) if (t.startsWith(e, p)) add(p + e.length);
    }
    return next;
  }
}

/**
 * The place after the one spelling of `ch` at `p` (-1: none), for a character other than "%" and
 * "\": as itself it starts with neither, so at most one of its spellings is there (an escape of
 * it is a run of backslashes and then itself, one level for each length of the run).
 */
function stepOf(t: string, p: number, ch: PercentChar): number {
  const c = t.charCodeAt(p);
  if (c === 0x25) return ch.bytes !== null && percentBytesAt(t, p, ch.bytes) ? p + 3 * ch.bytes.length : -1;
  if (ch.space && c === 0x2b) return p + 1;
  if (c === 0x5c && ch.self !== "\\") {
    for (const e of ch.escaped) if (t.startsWith(e, p)) return p + e.length;
    return -1;
  }
  if (c !== ch.self.charCodeAt(0)) return -1;
  if (ch.self.length === 2 && t.charCodeAt(p + 1) !== ch.self.charCodeAt(1)) return -1;
  return p + ch.self.length;
}

/** Whether `t` has `bytes` at `at`, each written `%XX` with hex digits of either case. */
function percentBytesAt(t: string, at: number, bytes: number[]): boolean {
  if (at + 3 * bytes.length > t.length) return false;
  for (let i = 0; i < bytes.length; i++) {
    const p = at + 3 * i;
    if (t.charCodeAt(p) !== 0x25) return false;
    if (
      hexValue(t.charCodeAt(p + 1)) !== bytes[i]! >> 4 ||
      hexValue(t.charCodeAt(p + 2)) !== (bytes[i]! & 15)
    )
      return false;
  }
  return true;
}

function hexValue(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 65 && c <= 70) return c - 55;
  if (c >= 97 && c <= 102) return c - 87;
  return -1;
}
