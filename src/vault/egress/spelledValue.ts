/**
 * A released value with each of its characters written as itself or escaped, any mix (Spelled:
 * the spelling echo.ts's spellingsOf makes of a value itself, and of each base64 form with its
 * `+`, `/`, `=` spelled so); how one character may be written is in charSpelling.ts. Split out of
 * echo.ts, no behaviour of its own.
 */

import { pairHasName } from "../htmlNames.js";
import { eachNestedReference, nestedReferenceEnd } from "../htmlReferences.js";
import {
  ampersandMayStart,
  type Char,
  eachUrlEscapedReference,
  JSON_SHORT,
  jsonSpelled,
  jsonSpelledTwice,
  mayStart,
  spelledDepth,
  urlEscapedReferenceEnd,
  urlSpelled,
} from "./charSpelling.js";
import {
  AMPERSAND,
  BACKSLASH,
  LONGEST_CHAR,
  type Match,
  mayStartUrlEscapedReference,
  PERCENT,
  PLUS,
  type Spelling,
  URL_DEPTH,
} from "./echoSpelling.js";

/** The URL escapes' depth of the name of two characters the last pairEnd found. */
let pairDepth = 0;

/** What a walk that found nothing says (shared: most places tried find nothing). */
const NOT_HERE = { match: null, unfinished: false } as const;
const UNFINISHED = { match: null, unfinished: true } as const;

/**
 * A value with each of its characters written as itself or escaped, any mix (see the module
 * comment): found by trying each place where its first character can start, a walk that keeps
 * every place the value read so far can end (a character may be read two ways at one place: `%`
 * itself, or `%25`), so nothing is tried twice and no choice is undone.
 */
export class Spelled implements Spelling {
  readonly longest: number;
  private readonly chars: Char[];
  private readonly raw: Buffer;
  /** the placeholder URL-escaped once, twice… (placeholder), by depth, as they are needed */
  private readonly encodedAt: Buffer[] = [];
  /** 1 for each byte an occurrence can start with */
  private readonly startTable = new Uint8Array(256);
  /**
   * whether the value as written is the only reading of its bytes at a place: it has no `%`,
   * `\\` or `&`, which it could also be read to hold escaped (`%25`, `\\\\`, `&amp;`), longer
   */
  private readonly unambiguous: boolean;
  /** the bytes of its first characters that are only ever themselves (plain), when it starts with one */
  private readonly plainStart: Buffer | null;
  /**
   * when it starts with characters that may be escaped and has plain ones after them: the bytes
   * of those plain ones (written as they are in every occurrence), and how many come before
   */
  private readonly anchor: { bytes: Buffer; after: number } | null;

  /**
   * `value` spelled any way, replaced by `plain`, or by `encoded` where a URL escape was read;
   * each character that `plainChars` matches only as itself (base64's letters and digits: an
   * occurrence is then found from where its first ones are, by indexOf, not a scan of every
   * byte); found only in bytes holding one of `needsOneOf`, when given (usableIn).
   */
  constructor(
    value: string,
    private readonly plain: Buffer,
    private readonly encoded: Buffer,
    readonly needsOneOf?: readonly number[],
    plainChars?: RegExp,
  ) {
    this.raw = Buffer.from(value, "utf8");
    this.unambiguous = !/[%\\&]/.test(value);
    this.chars = [];
    for (const c of value) {
      const code = c.codePointAt(0)!;
      const units = [c.charCodeAt(0)];
      if (c.length === 2) units.push(c.charCodeAt(1));
      const plainChar = plainChars?.test(c) ?? false;
      const names = code < 0x80 ? "ascii" : "all";
      this.chars.push({
        code,
        bytes: Buffer.from(c, "utf8"),
        units,
        plain: plainChar,
        names,
        pairsWithNext: false,
      });
    }
    for (let k = 0; k + 1 < this.chars.length; k++) {
      const c = this.chars[k]!;
      const next = this.chars[k + 1]!;
      c.pairsWithNext = !c.plain && !next.plain && pairHasName(c.code, next.code);
    }
    this.longest = LONGEST_CHAR * this.chars.length;
    let n = 0;
    while (n < this.chars.length && this.chars[n]!.plain) n++;
    const chars = [...value];
    this.plainStart = n > 0 ? Buffer.from(chars.slice(0, n).join(""), "utf8") : null;
    let k = n;
    if (plainChars !== undefined && n === 0) while (k < this.chars.length && !this.chars[k]!.plain) k++;
    let e = k;
    while (e < this.chars.length && this.chars[e]!.plain) e++;
    this.anchor =
      n === 0 && e > k ? { bytes: Buffer.from(chars.slice(k, e).join(""), "utf8"), after: k } : null;
    const first = this.chars[0]!;
    const starts = first.plain
      ? [first.bytes[0]!]
      : [first.bytes[0]!, PERCENT, BACKSLASH, AMPERSAND, ...(first.code === 0x20 ? [PLUS] : [])];
    for (const b of starts) this.startTable[b] = 1;
  }

  first(buf: Buffer, from: number, before: number): Match | null {
    if (this.plainStart !== null) {
      // every occurrence starts with these bytes as written
      const end = Math.min(before, buf.length);
      for (
        let at = buf.indexOf(this.plainStart, from);
        at >= 0 && at < end;
        at = buf.indexOf(this.plainStart, at + 1)
      ) {
        const m = this.walk(buf, at, null).match;
        if (m) return m;
      }
      return null;
    }
    if (this.anchor !== null) return this.anchored(buf, from, before, this.anchor);
    // a scan with a table of the starting bytes: text full of `&`, `%` or `\\` (URLs, escaped
    // JSON) made one indexOf per place tried, a call into C++ each, cost more than this loop
    const starts = this.startTable;
    const end = Math.min(before, buf.length);
    const first = this.chars[0]!;
    for (let at = from; at < end; at++) {
      const b = buf[at]!;
      if (starts[b] === 0) continue;
      // most `&` and `\\` in text begin no reference or escape of the first character: skipped
      // here without a walk (`&` must be followed by `#` or a name of it, perhaps after `&amp;`
      // written for its `&`: ampersandMayStart; `\\` by `u`, a short escape or `\\`, escaped again)
      if (b !== first.bytes[0]) {
        const after = buf[at + 1]!;
        if (
          b === AMPERSAND &&
          after !== PERCENT &&
          !ampersandMayStart(buf, at, first.code, first.pairsWithNext)
        )
          continue;
        if (b === BACKSLASH && after !== 0x75 && after !== BACKSLASH && after !== JSON_SHORT[first.code])
          continue;
      }
      // the common case: the value as written (and the whole of any other spelling in `buf`)
      if (
        this.unambiguous &&
        buf[at] === this.raw[0] &&
        // (Buffer.compare is a call into C++: made only where the first two bytes are the value's)
        (this.raw.length < 2 || buf[at + 1] === this.raw[1]) &&
        buf.length - at >= this.raw.length &&
        buf.compare(this.raw, 0, this.raw.length, at, at + this.raw.length) === 0
      )
        return { at, end: at + this.raw.length, to: this.plain };
      const m = this.walk(buf, at, null).match;
      if (m) return m;
    }
    return null;
  }

  /**
   * first() of a value that starts with `anchor.after` characters that may be escaped and then
   * the plain `anchor.bytes`: an occurrence starts at most LONGEST_CHAR bytes a character before
   * where those bytes are, and at least one, so only those places are tried, each once and in
   * order (the places before one anchor's were tried with the anchors before it), where an
   * occurrence may start. Without it, a base64 form that starts with `+` or `/` was looked for
   * from every `&`, `%` and `\\` of an HTML page (3.6 times the time of the whole check).
   */
  private anchored(
    buf: Buffer,
    from: number,
    before: number,
    anchor: { bytes: Buffer; after: number },
  ): Match | null {
    const end = Math.min(before, buf.length);
    const starts = this.startTable;
    let tried = from; // every place before it was tried
    for (
      let q = buf.indexOf(anchor.bytes, from + anchor.after);
      q >= 0 && tried < end;
      q = buf.indexOf(anchor.bytes, q + 1)
    ) {
      const last = Math.min(q - anchor.after, end - 1);
      for (let at = Math.max(tried, q - LONGEST_CHAR * anchor.after); at <= last; at++) {
        if (starts[buf[at]!] === 0) continue;
        const m = this.walk(buf, at, null).match;
        if (m) return m;
      }
      tried = Math.max(tried, last + 1);
    }
    return null;
  }

  unfinished(buf: Buffer, from: number, before: number, work: { left: number }): number {
    // (an occurrence that starts before buf.length - longest ends inside `buf`)
    const starts = this.startTable;
    for (let at = Math.max(from, buf.length - this.longest + 1); at < before; at++) {
      if (starts[buf[at]!] === 0) continue;
      if (this.walk(buf, at, work).unfinished) return work.left < 0 ? from : at;
      if (--work.left < 0) return from;
    }
    return -1;
  }

  /**
   * The occurrence that starts at `at` (the longest, when it can end at several places), if any;
   * and whether bytes after `buf` could make one there, or a longer one (`unfinished`): a way of
   * reading it reached the end of `buf`, or a character may start within the last LONGEST_CHAR
   * bytes (said of any byte that can start one of its spellings: a stream keeps a few bytes more
   * than it must, never fewer). `work.left` runs down by the places tried; when it runs out, the
   * answer is unfinished (null: a search of whole bytes, without a budget).
   */
  private walk(
    buf: Buffer,
    at: number,
    work: { left: number } | null,
  ): { match: Match | null; unfinished: boolean } {
    const chars = this.chars;
    const len = buf.length;
    // while there is one way to read the value so far (the common case), without arrays: most
    // places tried fail at their first or second character
    let p = at;
    let url = 0; // the most times a URL escape read so far was escaped
    let k = 0;
    for (; k < chars.length; k++) {
      const c = chars[k]!;
      // near the end of `buf`: the general walk, which says what may be unfinished
      if (len - p < LONGEST_CHAR) break;
      if (work !== null && --work.left < 0) return UNFINISHED;
      if (c.plain) {
        if (buf[p] !== c.bytes[0]) return NOT_HERE;
        p += 1;
        continue;
      }
      // `%` is read several ways at a `%25` (itself, escaped, escaped twice…), and `&` at an
      // `&amp;` (itself, or the start of the reference it writes): the general walk
      if ((c.code === PERCENT && buf[p] === PERCENT) || (c.code === AMPERSAND && buf[p] === AMPERSAND)) break;
      // it and the next character written as one name (`&fjlig;`): the general walk, which reads
      // both ways (two references, or one name for both)
      if (c.pairsWithNext && this.pairEnd(buf, p, k, 0) >= 0) break;
      const byURL = urlSpelled(buf, p, c);
      const depth = spelledDepth;
      // (`\\\\` is a `\` escaped once, or the start of one escaped twice: the general walk)
      if (c.code === BACKSLASH && buf[p] === BACKSLASH) break;
      const byJson = buf[p] === BACKSLASH ? jsonSpelled(buf, p, c) : -1;
      const byHtml = buf[p] === AMPERSAND ? nestedReferenceEnd(buf, p, c.code, c.names) : -1;
      const byUrlRef = urlEscapedReferenceEnd(buf, p, c.code, c.names);
      const refDepth = spelledDepth;
      const ways =
        (byURL >= 0 ? 1 : 0) + (byJson >= 0 ? 1 : 0) + (byHtml >= 0 ? 1 : 0) + (byUrlRef >= 0 ? 1 : 0);
      if (ways === 0) return NOT_HERE;
      if (ways > 1) break;
      if (byURL >= 0) {
        url = Math.max(url, depth);
        p = byURL;
      } else if (byUrlRef >= 0) {
        url = Math.max(url, refDepth);
        p = byUrlRef;
      } else p = byJson >= 0 ? byJson : byHtml;
    }
    if (k === chars.length) return { match: { at, end: p, to: this.placeholder(url) }, unfinished: false };
    let unfinished = false;
    // the places the value read so far can end, each with the most times a URL escape read on
    // the way there was escaped
    let ends: number[] = [p];
    let escaped: number[] = [url];
    // the places past the next character that a name of two read at this one ends (`&fjlig;`
    // for `f` and `j`), and their URL escapes' depth: where the next character's walk starts from
    let ahead: number[] = [];
    let aheadEscaped: number[] = [];
    for (; k < chars.length; k++) {
      const c = chars[k]!;
      // (past this character: where the walk reaches, and where a name of it and the one before ended)
      const nextEnds: number[] = ahead;
      const nextEscaped: number[] = aheadEscaped;
      ahead = [];
      aheadEscaped = [];
      const add = (end: number, url: number) => {
        const i = nextEnds.indexOf(end);
        if (i < 0) {
          nextEnds.push(end);
          nextEscaped.push(url);
        } else nextEscaped[i] = Math.max(nextEscaped[i]!, url);
      };
      if (work !== null) {
        work.left -= ends.length;
        if (work.left < 0) return UNFINISHED;
      }
      for (let i = 0; i < ends.length; i++) {
        const p = ends[i]!;
        const url = escaped[i]!;
        if (p >= len) {
          unfinished = true;
          continue;
        }
        if (c.plain) {
          if (buf[p] === c.bytes[0]) add(p + 1, url);
          continue;
        }
        if (len - p < LONGEST_CHAR && mayStart(buf[p]!, c)) unfinished = true;
        if (c.code === PERCENT) {
          // `%` itself, and escaped d times: `%` and then `25` d times (`%25`, `%2525`, …)
          if (buf[p] === PERCENT) {
            add(p + 1, url);
            for (let d = 1; d <= URL_DEPTH && buf[p + 2 * d - 1] === 0x32 && buf[p + 2 * d] === 0x35; d++)
              add(p + 1 + 2 * d, Math.max(url, d));
          }
        } else {
          const byURL = urlSpelled(buf, p, c);
          if (byURL >= 0) add(byURL, Math.max(url, spelledDepth));
        }
        const byJson = jsonSpelled(buf, p, c);
        if (byJson >= 0) add(byJson, url);
        if (c.code === BACKSLASH) {
          const twice = jsonSpelledTwice(buf, p, c);
          if (twice >= 0) add(twice, url);
        }
        if (buf[p] === AMPERSAND)
          // (a name of two characters is this one only with the next: pairEnd reads it)
          eachNestedReference(
            buf,
            p,
            (char, end, second) => char === c.code && second < 0 && add(end, url),
            c.names,
          );
        if (mayStartUrlEscapedReference(buf, p))
          eachUrlEscapedReference(buf, p, c.code, c.names, (end, depth) => add(end, Math.max(url, depth)));
        if (c.pairsWithNext) {
          const end = this.pairEnd(buf, p, k, url);
          const i = end >= 0 ? ahead.indexOf(end) : -1;
          if (end >= 0 && i < 0) {
            ahead.push(end);
            aheadEscaped.push(pairDepth);
          } else if (i >= 0) aheadEscaped[i] = Math.max(aheadEscaped[i]!, pairDepth);
        }
      }
      if (nextEnds.length === 0 && ahead.length === 0) return unfinished ? UNFINISHED : NOT_HERE;
      ends = nextEnds;
      escaped = nextEscaped;
    }
    let best = 0;
    for (let i = 1; i < ends.length; i++) if (ends[i]! > ends[best]!) best = i;
    return { match: { at, end: ends[best]!, to: this.placeholder(escaped[best]!) }, unfinished };
  }

  /**
   * Where a name HTML defines for the characters `k` and `k + 1` of the value ends when it starts
   * at `p` (`&fjlig;` for `f` and `j`, as an HTML reader decodes it to both), read as a reference
   * to one character is: written with references (`&amp;fjlig;`), or URL-escaped (`%26fjlig%3B`);
   * the deepest, or -1. Sets pairDepth to `url` or the most times its URL escapes were escaped.
   */
  private pairEnd(buf: Buffer, p: number, k: number, url: number): number {
    const c = this.chars[k]!;
    const second = this.chars[k + 1]!.code;
    pairDepth = url;
    if (buf[p] === AMPERSAND) {
      const end = nestedReferenceEnd(buf, p, c.code, "all", second);
      if (end >= 0) return end;
    }
    const end = urlEscapedReferenceEnd(buf, p, c.code, "all", second);
    if (end >= 0) pairDepth = Math.max(url, spelledDepth);
    return end;
  }

  /**
   * The placeholder for an occurrence whose URL escapes were escaped up to `depth` times: as
   * written (0), or with its URL escapes escaped as many times (`%3A`, `%253A`, …), so that what
   * reads the answer reads back the placeholder as many times as it read the value (before, one
   * found escaped twice got the placeholder escaped once, which reads `portcullis-placeholder:`
   * one reading too early).
   */
  private placeholder(depth: number): Buffer {
    if (depth === 0) return this.plain;
    let out = this.encodedAt[depth];
    if (out === undefined) {
      let s = this.encoded.toString("latin1");
      for (let d = 1; d < depth; d++) s = s.replaceAll("%", "%25");
      out = Buffer.from(s, "latin1");
      this.encodedAt[depth] = out;
    }
    return out;
  }
}
