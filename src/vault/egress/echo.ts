/**
 * What an answer echoes of the values released for its request, put back as their placeholders.
 * An upstream may hand a request's credential back in its answer: an error that quotes it
 * ("invalid token sk-live-…"), an echo service (httpbin's `/headers`, a Basic auth echo), a
 * `Set-Cookie` or a `Content-Location` built from the request's query, a redirect's `Location`
 * keeping the query. The server reads the answer, and whatever it reads it may pass to the agent:
 * so in every answer from a host a value was released to (exchange.ts says which answers), each
 * value is replaced by its placeholder in the status line, every header and the body, in the
 * spellings the gateway's own scrubber of server output (src/vault/scrub.ts) knows and a stream
 * can be searched for (docs/security.md lists them):
 * - each character of the value as itself or escaped, any mix, escapes in either hex case: URL
 *   escapes of its UTF-8 bytes, once (`%2F`, `%2f`; `+` for a space) or twice, as a redirect
 *   that carries a URL in its query writes them (`%252F`), JSON escapes of its UTF-16 units
 *   (`\u002F`, `\u002f`, `\/`, `\"`, `\\`, `\n`…), HTML character references, numeric with
 *   up to 16 digits, leading zeros included (`&#47;`, `&#x2F;`, `&#X002f;`), or named, every
 *   name HTML defines for an ASCII character (`&sol;`, `&plus;`, `&equals;`, `&amp;`…:
 *   src/vault/htmlReferences.ts) and, for a character outside ASCII, every name HTML defines for
 *   it (`&eacute;`: src/vault/htmlNames.ts, read only for such characters, Char.names), or such a
 *   reference URL-escaped (`%26%2343%3B`, as a URL built from HTML-escaped text carries it:
 *   eachUrlEscapedReference);
 * - its base64, standard and URL-safe, padded or not, and the base64 characters the value alone
 *   determines inside longer base64 at each of the three alignments (`base64("user:" + value)`,
 *   as a Basic auth echo writes it), 8 characters or more; each also as encoders that escape
 *   base64's `+`, `/` and `=` write it (escapedForms: `\/` in JSON, once or twice, `\u002B`, and
 *   URL escapes), and with each of its `+`, `/`, `=` (`-`, `_`) as itself or escaped in any of
 *   the ways above, any mix (`&#43;` of an HTML template, `\u002b`, `%252B`), its letters and
 *   digits as themselves; and any of its characters escaped, letters and digits too (`\u0041`,
 *   `%41`, `&#65;`: EscapedBase64 in escapedBase64.ts, on one reading of the answer's escapes);
 * - its UTF-8 bytes in hex, lower and upper case, 8 characters or more.
 * Searched as bytes (Buffer.indexOf and a walk over the value's characters), never by a regular
 * expression built from a value: a value may be 64 KiB, a size V8 refuses for one.
 */

import { allNames } from "../htmlNames.js";
import {
  eachNestedReference,
  NAMED,
  type Names,
  nestedReferenceEnd,
  REFERENCE_READINGS,
} from "../htmlReferences.js";
import {
  AMPERSAND,
  BACKSLASH,
  ESCAPE_STARTS,
  eachUrlEscapedReading,
  hexDigit,
  hexPairAt,
  isAmpName,
  LONGEST_CHAR,
  type Match,
  mayStartUrlEscapedReference,
  PERCENT,
  PLUS,
  type Spelling,
  URL_DEPTH,
  urlEscaped,
} from "./echoSpelling.js";
import { EscapedBase64 } from "./escapedBase64.js";

export type { Match, Spelling } from "./echoSpelling.js";

/** A spelling of fixed bytes (base64, hex forms): found by Buffer.indexOf. */
class Literal implements Spelling {
  readonly longest: number;
  constructor(
    readonly from: Buffer,
    readonly to: Buffer,
    readonly needs?: number,
  ) {
    this.longest = from.length;
  }

  first(buf: Buffer, from: number, before: number): Match | null {
    const at = buf.indexOf(this.from, from);
    return at < 0 || at >= before ? null : { at, end: at + this.from.length, to: this.to };
  }

  unfinished(buf: Buffer, from: number, before: number, work: { left: number }): number {
    // a start that the end of `buf` cuts: the bytes to the end are the first bytes of this form
    let p = buf.indexOf(this.from[0]!, Math.max(from, buf.length - this.from.length + 1));
    for (; p >= 0 && p < before; p = buf.indexOf(this.from[0]!, p + 1)) {
      const n = buf.length - p;
      work.left -= n;
      if (work.left < 0) return from;
      if (buf.compare(this.from, 0, n, p, buf.length) === 0) return p;
    }
    return -1;
  }
}

/** The JSON short escapes, by the character they stand for. */
const JSON_SHORT: Record<number, number> = {
  34: 0x22, // \"
  92: 0x5c, // \\
  47: 0x2f, // \/
  8: 0x62, // \b
  12: 0x66, // \f
  10: 0x6e, // \n
  13: 0x72, // \r
  9: 0x74, // \t
};

/** Each byte that can follow `&` in a named reference of the character, by character code. */
const NAME_STARTS = new Map<number, Uint8Array>(
  [...NAMED].map(([c, names]) => {
    const starts = new Uint8Array(256);
    for (const n of names) starts[n.charCodeAt(0)] = 1;
    return [c.charCodeAt(0), starts] as const;
  }),
);

/** As NAME_STARTS, for characters outside ASCII (every name HTML defines: src/vault/htmlNames.ts), made when first needed. */
let nonAsciiNameStarts: Map<number, Uint8Array> | null = null;

function nameStarts(code: number): Uint8Array | undefined {
  if (code < 0x80) return NAME_STARTS.get(code);
  if (nonAsciiNameStarts === null) {
    nonAsciiNameStarts = new Map();
    for (const [name, c] of allNames()) {
      if (c < 0x80) continue;
      const starts = nonAsciiNameStarts.get(c) ?? new Uint8Array(256);
      starts[name.charCodeAt(0)] = 1;
      nonAsciiNameStarts.set(c, starts);
    }
  }
  return nonAsciiNameStarts.get(code);
}

/** One character of a value, and how it may be written. */
interface Char {
  code: number;
  /** its UTF-8 bytes */
  bytes: Uint8Array;
  /** its UTF-16 code units */
  units: number[];
  /** written only as itself (a letter or digit of base64: no encoder escapes those) */
  plain: boolean;
  /**
   * the HTML names read for it: those of ASCII characters, or for a character outside ASCII
   * every name HTML defines (`&eacute;`, as PHP's htmlentities writes `é`)
   */
  names: Names;
}

/**
 * A value with each of its characters written as itself or escaped, any mix (see the module
 * comment): found by trying each place where its first character can start, a walk that keeps
 * every place the value read so far can end (a character may be read two ways at one place: `%`
 * itself, or `%25`), so nothing is tried twice and no choice is undone.
 */
class Spelled implements Spelling {
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
      this.chars.push({ code, bytes: Buffer.from(c, "utf8"), units, plain: plainChar, names });
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
        if (b === AMPERSAND && after !== PERCENT && !ampersandMayStart(buf, at, first.code)) continue;
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
    for (; k < chars.length; k++) {
      const c = chars[k]!;
      const nextEnds: number[] = [];
      const nextEscaped: number[] = [];
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
          eachNestedReference(buf, p, (char, end) => char === c.code && add(end, url), c.names);
        if (mayStartUrlEscapedReference(buf, p))
          eachUrlEscapedReference(buf, p, c.code, c.names, (end, depth) => add(end, Math.max(url, depth)));
      }
      if (nextEnds.length === 0) return unfinished ? UNFINISHED : NOT_HERE;
      ends = nextEnds;
      escaped = nextEscaped;
    }
    let best = 0;
    for (let i = 1; i < ends.length; i++) if (ends[i]! > ends[best]!) best = i;
    return { match: { at, end: ends[best]!, to: this.placeholder(escaped[best]!) }, unfinished };
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

/**
 * Whether the `&` at `at` may start a reference to `code`, read at once or after the `&amp;`
 * (`&AMP;`, `&amp` without its `;`) written for its `&` at each reading but the last
 * (`&amp;#43;`): then `#` or a name of `code` follows. An HTML page's `&amp;` before a space or a
 * word is no start, and is skipped without a walk (a walk at every one of them made the check of
 * an HTML page 2.6 times as long).
 */
function ampersandMayStart(buf: Buffer, at: number, code: number): boolean {
  let q = at + 1;
  for (let k = 1; k < REFERENCE_READINGS && isAmpName(buf, q); k++) q += buf[q + 3] === 0x3b ? 4 : 3;
  const after = buf[q]!;
  return after === 0x23 || nameStarts(code)?.[after] === 1;
}

/** What a walk that found nothing says (shared: most places tried find nothing). */
const NOT_HERE = { match: null, unfinished: false } as const;
const UNFINISHED = { match: null, unfinished: true } as const;

/** Whether byte `b` can start a spelling of `c`: itself, or an escape (URL, JSON, HTML), or `+` for a space. */
function mayStart(b: number, c: Char): boolean {
  return (
    b === c.bytes[0] || b === PERCENT || b === BACKSLASH || b === AMPERSAND || (b === PLUS && c.code === 0x20)
  );
}

/** The most times a URL escape read by the last urlSpelled was escaped (0: none read). */
let spelledDepth = 0;

/**
 * Where `c` ends when written at `p` as its UTF-8 bytes, each as itself or URL-escaped, once
 * (`%2F`, `%2f`; a space also as `+`) or escaped again up to URL_DEPTH times in all (`%252F`, as
 * a redirect that carries a URL in its query writes it, `%25252F` a redirect of that), or -1;
 * sets spelledDepth. (Not for the byte `%` itself, which reads several ways at one place: the walk
 * reads those.)
 */
function urlSpelled(buf: Buffer, p: number, c: Char): number {
  let q = p;
  const bytes = c.bytes;
  spelledDepth = 0;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i]!;
    if (buf[q] === b) q += 1;
    else if (buf[q] === PERCENT) {
      // `%`, then `25` for each time the escape was escaped again, then the byte's two digits
      let d = 1;
      while (d < URL_DEPTH && buf[q + 2 * d - 1] === 0x32 && buf[q + 2 * d] === 0x35) d++;
      // (a byte of 0x25 is the `%` of a value's own, which the walk reads)
      if (hexPairAt(buf, q + 2 * d - 1) !== b) return -1;
      q += 1 + 2 * d;
      spelledDepth = Math.max(spelledDepth, d);
    } else if (b === 0x20 && buf[q] === PLUS) q += 1;
    else return -1;
  }
  return q;
}

/**
 * Each place where an HTML reference to `code` that is URL-escaped ends, when it starts at `p`:
 * its bytes (its `&`, `#`, `;`, digits, name) each as itself or URL-escaped once or again up to
 * URL_DEPTH times in all (`%26%2343%3B` for `+`, as a URL built from HTML-escaped text carries
 * it; `%2526%252343%253B`), read as references are (eachNestedReference), with `on` given the end
 * and the most times one of its escapes was escaped. Only a reference with an escape in it, and
 * only within LONGEST_CHAR bytes of `p` (one character's longest spelling, which the stream keeps:
 * a longer one is not read).
 */
function eachUrlEscapedReference(
  buf: Buffer,
  p: number,
  code: number,
  names: Names,
  on: (end: number, depth: number) => void,
): void {
  eachUrlEscapedReading(buf, p, (char, end, depth) => char === code && on(end, depth), names);
}

/**
 * The deepest end eachUrlEscapedReference gives for `code` at `p`, or -1; sets spelledDepth to
 * the times its escapes were escaped.
 */
function urlEscapedReferenceEnd(buf: Buffer, p: number, code: number, names: Names): number {
  if (!mayStartUrlEscapedReference(buf, p)) {
    spelledDepth = 0;
    return -1;
  }
  let end = -1;
  let depth = 0;
  eachUrlEscapedReference(buf, p, code, names, (e, d) => {
    if (e > end) {
      end = e;
      depth = d;
    }
  });
  spelledDepth = depth;
  return end;
}

/**
 * Where `c` ends when written at `p` as JSON escapes (`\u002f` in either case, `\/`, `\n`…), or as
 * those escapes escaped again, as JSON text inside a JSON string writes them (`\\u002f`, `\\/`,
 * `\\\"` for `"`, `\\\\` for `\`), or -1.
 */
function jsonSpelled(buf: Buffer, p: number, c: Char): number {
  if (buf[p] !== BACKSLASH) return -1;
  const short = c.units.length === 1 ? JSON_SHORT[c.code] : undefined;
  // (`\\` is `\` escaped once, and the start of it escaped twice: jsonSpelledTwice gives that)
  if (short !== undefined && buf[p + 1] === short) return p + 2;
  const once = unitEscapes(buf, p, c, 1);
  return once >= 0 ? once : jsonSpelledTwice(buf, p, c);
}

/**
 * Where `c` ends when written at `p` as a JSON escape escaped again (JSON text inside a JSON
 * string: `\\u002f`, `\\/`, `\\\"` for `"`, `\\\\` for `\`), or -1.
 */
function jsonSpelledTwice(buf: Buffer, p: number, c: Char): number {
  if (buf[p] !== BACKSLASH || buf[p + 1] !== BACKSLASH) return -1;
  const short = c.units.length === 1 ? JSON_SHORT[c.code] : undefined;
  // its backslash written `\\`, and then `"` and `\` written `\"` and `\\`
  if (short !== undefined) {
    const rest = short === 0x22 || short === BACKSLASH ? [BACKSLASH, short] : [short];
    if (rest.every((b, i) => buf[p + 2 + i] === b)) return p + 2 + rest.length;
  }
  return unitEscapes(buf, p, c, 2);
}

/** Where `c` ends when written at `p` as `\uXXXX` escapes of its units, each `\` written `backslashes` times, or -1. */
function unitEscapes(buf: Buffer, p: number, c: Char, backslashes: number): number {
  let q = p;
  for (const u of c.units) {
    for (let i = 0; i < backslashes; i++) if (buf[q + i] !== BACKSLASH) return -1;
    q += backslashes;
    if (buf[q] !== 0x75 || q + 5 > buf.length) return -1;
    let n = 0;
    for (let i = 1; i < 5; i++) {
      const d = hexDigit(buf[q + i]!);
      if (d < 0) return -1;
      n = n * 16 + d;
    }
    if (n !== u) return -1;
    q += 5;
  }
  return q;
}

/** Base64 and hex forms shorter than this are not looked for: they would match ordinary text. */
const MIN_FORM = 8;

/**
 * The base64 characters that depend on `bytes` alone when they start at byte offset 0, 1 or 2
 * (mod 3) of longer data: the characters whose six bits all fall inside `bytes` (as scrub.ts).
 */
function alignedFragment(bytes: Buffer, offset: number): string {
  const encoded = Buffer.concat([Buffer.alloc(offset), bytes]).toString("base64");
  const start = Math.ceil((8 * offset) / 6);
  const end = Math.floor((8 * (offset + bytes.length)) / 6);
  return end > start ? encoded.slice(start, end) : "";
}

const urlSafe = (b64: string) => b64.replaceAll("+", "-").replaceAll("/", "_");

/**
 * How encoders write base64 that they escape, whole: in a JSON string with `/` escaped (`\/`:
 * PHP's json_encode, some Java encoders, as the gateway's output scrubber knows it), and that
 * JSON string inside another (`\\/`, or `\\\/` where the outer encoder escapes `/` too); in
 * a JSON string with `+` written `\u002B` (.NET's System.Text.Json, by default); URL-escaped
 * (`%2B`, `%2F`, `%3D`: encodeURIComponent, Python's quote_plus, form encoding, Go's QueryEscape), in
 * either hex case, and the two partial escapings common encoders write: Python's quote() (`+` and
 * `=` escaped, `/` kept) and Go's PathEscape (`/` alone escaped), as the gateway's output scrubber
 * looks for them too (src/vault/scrub.ts). Other mixes are not looked for. A form with none of
 * these characters is the same in all of them, and looked for once.
 */
const escapedForms: readonly [(b64: string) => string, number][] = [
  [(b64) => b64.replaceAll("/", "\\/"), BACKSLASH],
  [(b64) => b64.replaceAll("/", "\\\\/"), BACKSLASH],
  [(b64) => b64.replaceAll("/", "\\\\\\/"), BACKSLASH],
  [(b64) => b64.replaceAll("+", "\\u002B"), BACKSLASH],
  [urlEscaped(true, /[+/=]/g), PERCENT],
  [urlEscaped(false, /[+/=]/g), PERCENT],
  [urlEscaped(true, /[+=]/g), PERCENT],
  [urlEscaped(false, /[+=]/g), PERCENT],
  [urlEscaped(true, /\//g), PERCENT],
  [urlEscaped(false, /\//g), PERCENT],
];

/**
 * Every spelling of each released value, with the placeholder that goes in its place: the value
 * spelled character by character (the plain placeholder, or the URL-encoded one where a URL
 * escape was read); its base64 and hex forms, each replaced by the same form of the placeholder
 * (so a `Basic` echo decodes to the placeholder; inside longer base64 the characters at the edges,
 * which hold bits of the data around it, stay as they were).
 */
export function spellingsOf(released: Iterable<readonly [string, string]>): Spelling[] {
  const out: Spelling[] = [];
  const seen = new Set<string>();
  const spelledForms = new Set<string>();
  const add = (from: string, to: string, needs?: number) => {
    if (seen.has(from)) return;
    seen.add(from);
    out.push(new Literal(Buffer.from(from, "latin1"), Buffer.from(to, "latin1"), needs));
  };
  // a base64 or hex form, and each way an encoder that escapes the characters of base64 writes
  // it, all of them or none (an encoder is consistent): hex digits and the URL-safe alphabet are
  // never escaped, `+`, `/` and `=` may be (escapedForms)
  const escaped = new EscapedBase64();
  const literal = (from: string, to: string, base64 = true) => {
    if (from.length < MIN_FORM) return;
    add(from, to);
    if (base64) escaped.add(from, to);
    for (const [write, needs] of escapedForms) {
      const f = write(from);
      if (f !== from) add(f, write(to), needs);
    }
    // and any other mix: each of its `+`, `/`, `=` (`-`, `_`) as itself or escaped, as the
    // characters of the value itself are (an HTML template's `&#43;` or `&plus;`, `\u002b`,
    // `%252F` of a redirect…), its letters and digits as themselves (no encoder escapes them);
    // looked for only in bytes that hold an escape's first byte
    if (spelledForms.has(from) || !/[^A-Za-z0-9]/.test(from)) return;
    spelledForms.add(from);
    out.push(
      new Spelled(
        from,
        Buffer.from(to, "latin1"),
        Buffer.from(urlEscaped(true, /[+/=]/g)(to), "latin1"),
        ESCAPE_STARTS,
        /[A-Za-z0-9]/,
      ),
    );
  };
  for (const [scope, value] of released) {
    if (value === "") continue;
    const placeholder = `portcullis-placeholder:${scope}`;
    out.push(
      new Spelled(
        value,
        Buffer.from(placeholder, "latin1"),
        Buffer.from(`portcullis-placeholder%3A${scope}`, "latin1"),
      ),
    );
    const bytes = Buffer.from(value, "utf8");
    const marker = Buffer.from(placeholder, "latin1");
    const b64 = bytes.toString("base64");
    const to64 = marker.toString("base64");
    // (base64's padding is at most two "=")
    const bare = (b: string) => (b.endsWith("==") ? b.slice(0, -2) : b.endsWith("=") ? b.slice(0, -1) : b);
    // (where the value's base64 needs no padding, a standard one is taken to pad the
    // placeholder's and a URL-safe one not to, as each is most often written)
    literal(b64, to64);
    literal(urlSafe(bare(b64)), urlSafe(bare(to64)));
    literal(bare(b64), bare(to64));
    literal(urlSafe(b64), urlSafe(to64));
    for (let offset = 0; offset < 3; offset++) {
      const from = alignedFragment(bytes, offset);
      const to = alignedFragment(marker, offset);
      literal(from, to);
      literal(urlSafe(from), urlSafe(to));
    }
    const hex = bytes.toString("hex");
    literal(hex, marker.toString("hex"), false);
    literal(hex.toUpperCase(), marker.toString("hex").toUpperCase(), false);
  }
  if (!escaped.empty) out.push(escaped);
  return out;
}

/**
 * The first occurrence of any spelling in `buf` from `from` that starts before `limit`: the
 * earliest, the longest of those at one place. Made for one pass over one `buf` (replaceUpTo),
 * whose `from` only grows: each spelling's next occurrence is kept until a chosen occurrence passes
 * over it, since it is still the first at or after any later `from` below it, and a spelling with
 * none has none further on. Asked afresh at each `from`, a spelling absent from the body was looked
 * for to its end once per echo replaced: an answer of k echoes cost k times its length (16,000
 * echoes in 528 KB held the event loop 2.4 to 3.8 s).
 */
function firstOccurrences(
  buf: Buffer,
  limit: number,
  spellings: readonly Spelling[],
): (from: number) => Match | null {
  // per spelling: its first occurrence at or after the `from` it was last asked at (null: none)
  const next: (Match | null | undefined)[] = new Array(spellings.length);
  // (a spelling that keeps its reading through a pass is asked through a search of this pass)
  const asks = spellings.map((s) =>
    s.pass !== undefined ? s.pass(buf, limit) : (from: number) => s.first(buf, from, limit),
  );
  return (from) => {
    let best: Match | null = null;
    for (let j = 0; j < spellings.length; j++) {
      let m = next[j];
      if (m === undefined || (m !== null && m.at < from)) {
        m = asks[j]!(from);
        next[j] = m;
      }
      if (m === null) continue;
      if (best === null || m.at < best.at || (m.at === best.at && m.end > best.end)) best = m;
    }
    return best;
  };
}

/** What EchoScrubber.push may spend looking for unfinished occurrences, beyond 4 per byte. */
const UNFINISHED_SLACK = 1 << 16;

/** The most bytes one occurrence of any of `spellings` takes. */
export function longestOf(spellings: readonly Spelling[]): number {
  let n = 0;
  for (const s of spellings) n = Math.max(n, s.longest);
  return n;
}

/** `buf` with every spelling replaced by its placeholder; the same buffer when there is none. */
export function withoutValues(buf: Buffer, spellings: readonly Spelling[]): Buffer {
  if (spellings.length === 0) return buf;
  return replaceUpTo(buf, buf.length, usableIn(buf, spellings)).out;
}

/**
 * The spellings that can occur in `buf`: one that `needs` a byte (an escaped form of base64,
 * whose escapes all start with `\` or `%`) only where that byte is. Its unfinished occurrences
 * are kept all the same: one cut before its first escape is, to there, the unescaped form's,
 * which is always looked for (and keeps it); one cut after holds the byte. Most answers have no
 * `\` or no `%`, and each escaped form is one more search of every read.
 */
function usableIn(buf: Buffer, spellings: readonly Spelling[]): readonly Spelling[] {
  let some = false;
  for (const s of spellings) if (s.needs !== undefined || s.needsOneOf !== undefined) some = true;
  if (!some) return spellings;
  const held = new Uint8Array(256);
  for (const b of [BACKSLASH, PERCENT, AMPERSAND]) held[b] = buf.indexOf(b) >= 0 ? 1 : 0;
  if (held[BACKSLASH] && held[PERCENT] && held[AMPERSAND]) return spellings;
  return spellings.filter(
    (s) =>
      (s.needs === undefined || held[s.needs] === 1) &&
      (s.needsOneOf === undefined || s.needsOneOf.some((b) => held[b] === 1)),
  );
}

/**
 * Replaces the occurrences that start before `limit` (each whole, since `buf` holds it through
 * its end); returns the bytes up to `cut` (the end of the last one replaced, or `limit`,
 * whichever is later) with them replaced, and `cut`.
 */
function replaceUpTo(
  buf: Buffer,
  limit: number,
  spellings: readonly Spelling[],
): { out: Buffer; cut: number } {
  const firstAt = firstOccurrences(buf, limit, spellings);
  let m = firstAt(0);
  if (m === null) return { out: limit === buf.length ? buf : buf.subarray(0, limit), cut: limit };
  const parts: Buffer[] = [];
  let at = 0;
  while (m !== null) {
    parts.push(buf.subarray(at, m.at), m.to);
    at = m.end;
    m = firstAt(at);
  }
  const cut = Math.max(at, limit);
  parts.push(buf.subarray(at, cut));
  return { out: Buffer.concat(parts), cut };
}

/**
 * A response head (latin1, CRLF lines, as read) with the released values taken out of its status
 * line and every header: the same buffer when there is nothing to take. Values are compared as
 * bytes, so a value written into a header as UTF-8 (latin1 characters, one per byte) is found.
 */
export function headWithoutEchoes(head: Buffer, spellings: readonly Spelling[]): Buffer {
  return withoutValues(head, spellings);
}

/**
 * Takes the released values out of a body that arrives in pieces, whatever the pieces: of each
 * piece, what can no longer be the start of a value is given back at once, the last (longest
 * spelling − 1) bytes kept until the next piece or the end, so a value split across pieces is
 * found whole. Nothing is given back of a body whose end never came (`end` not called): the kept
 * bytes are dropped with the answer.
 */
export class EchoScrubber {
  private kept: Buffer = Buffer.alloc(0);
  private readonly keep: number;

  constructor(private readonly spellings: readonly Spelling[]) {
    this.keep = longestOf(spellings) - 1;
  }

  /** The bytes of `piece` (after those kept) that can be given on, the values replaced. */
  push(piece: Buffer): Buffer {
    if (this.spellings.length === 0) return piece;
    const buf = this.kept.length === 0 ? piece : Buffer.concat([this.kept, piece]);
    // what is kept: from the first place where an occurrence may start that the next bytes could
    // finish or make longer (so a stream gives on what a whole body would give), at most the
    // last (longest spelling - 1) bytes; the place looked for only there, within a budget past
    // which all of those are kept (a value that repeats itself, in text that repeats it)
    const from = Math.max(0, buf.length - this.keep);
    const work = { left: 4 * buf.length + UNFINISHED_SLACK };
    let limit = buf.length;
    const spellings = usableIn(buf, this.spellings);
    for (const s of spellings) {
      const at = s.unfinished(buf, from, limit, work);
      if (at >= 0) limit = at;
    }
    if (limit <= 0) {
      this.kept = buf;
      return Buffer.alloc(0);
    }
    const { out, cut } = replaceUpTo(buf, limit, spellings);
    // (a copy: the kept bytes must outlive the piece's buffer, which its owner may reuse)
    this.kept = cut === buf.length ? Buffer.alloc(0) : Buffer.from(buf.subarray(cut));
    return out;
  }

  /** The kept bytes, the values in them replaced: the body's end came. */
  end(): Buffer {
    const last = withoutValues(this.kept, this.spellings);
    this.kept = Buffer.alloc(0);
    return last;
  }
}
