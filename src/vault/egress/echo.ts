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
 *   eachUrlEscapedReference); and two adjacent characters as the one name HTML defines for both
 *   (`&fjlig;` for `fj`, `&nvlt;` for `<` and U+20D2: Char.pairsWithNext), so written too;
 * - its base64, standard and URL-safe, padded or not, and the base64 characters the value alone
 *   determines inside longer base64 at each of the three alignments (`base64("user:" + value)`,
 *   as a Basic auth echo writes it), 8 characters or more; each also as encoders that escape
 *   base64's `+`, `/` and `=` write it (escapedForms: `\/` in JSON, once or twice, `\u002B`, and
 *   URL escapes), and with each of its `+`, `/`, `=` (`-`, `_`) as itself or escaped in any of
 *   the ways above, any mix (`&#43;` of an HTML template, `\u002b`, `%252B`), its letters and
 *   digits as themselves; and any of its characters escaped, letters and digits too (`\u0041`,
 *   `%41`, `&#65;`), its `fj` as the one name of both (`&fjlig;`): EscapedBase64 in
 *   escapedBase64.ts, on one reading of the answer's escapes;
 * - its UTF-8 bytes in hex, lower and upper case, 8 characters or more.
 * Searched as bytes (Buffer.indexOf and a walk over the value's characters: Spelled in
 * spelledValue.ts, each character's spellings in charSpelling.ts), never by a regular expression
 * built from a value: a value may be 64 KiB, a size V8 refuses for one.
 */

import {
  AMPERSAND,
  BACKSLASH,
  ESCAPE_STARTS,
  type Match,
  PERCENT,
  type Spelling,
  urlEscaped,
} from "./echoSpelling.js";
import { EscapedBase64 } from "./escapedBase64.js";
import { Spelled } from "./spelledValue.js";

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
