/**
 * Scrubbing of released credential values. Once the vault has handed a value to a server (in
 * its environment at spawn, or to a declared host by the egress proxy), the server may echo it:
 * in a tool result, in an error, on stderr. Everything the server says passes through here
 * before it goes anywhere (the client, the catalog in the store, the gateway's own stderr and
 * logs), and every form of every released value is replaced by `[redacted:<scope>]`.
 *
 * Forms of a value V, each also as it appears inside a JSON string, once or twice (JSON text in a
 * JSON string), as the common encoders escape it (jsonEscapes in valueForms.ts), and three to six times as
 * JSON.stringify writes it (JSON text in a string of JSON text in a JSON string…, JSON_LEVELS):
 *   - V itself;
 *   - base64 of V, standard and URL-safe, padded and unpadded;
 *   - the base64 characters that V alone determines when V sits inside longer data, at each of
 *     the three byte offsets modulo 3 (so `base64("Authorization: Basic " + V)` is caught too);
 *     a fragment shorter than MIN_FRAGMENT characters is left out: it would match everywhere;
 *   - each of those base64 forms URL-escaped (`%2B`, `%2F`, `%3D`, upper- or lower-case hex), as
 *     a query string carries a Basic credential (`?auth=` + encodeURIComponent(base64(...))): all
 *     three escaped, or as Python's quote() (not `/`) and Go's PathEscape (`/` alone) write it;
 *   - URL-encoded V: encodeURIComponent, encodeURI, form encoding (URLSearchParams, spaces as
 *     "+"), each also with lower-case percent escapes; and beyond these lists, any mix of
 *     characters as themselves and as `%XX` (src/vault/percentSpelling.ts: Python's quote(), Go's
 *     PathEscape, …);
 *   - the hex of V's UTF-8 bytes, lower- and upper-case.
 * * And any other JSON spelling of a form (`\u0053` for "S", in either hex case, any mix): the
 * text's escapes are read (src/vault/jsonSpelling.ts), twice, and what they spell is searched.
 * * And any spelling of a form with HTML character references (`&#43;` as Go's html/template
 * writes "+", `&#x2b;`, `&plus;`, `&#43` without its `;`) or URL escapes escaped again (`%252F`,
 * as a redirect writes a URL carried in a query): the text's references and `%25` are read, and
 * what that gives read again, up to four readings (`&amp;#43;`, `%2525252F`:
 * src/vault/referenceSpelling.ts), as written and after each reading of its JSON escapes, and
 * what they spell is searched (so `%252F` is searched as `%2F`, a percent spelling). A text is
 * read so only if it holds a complete reference or a `%25`, and searched whole only if a form
 * occurs around what was read. Every name HTML defines for a character is read, `&eacute;` too
 * (src/vault/htmlNames.ts).
 * * And all of these for each Unicode normalization of V that differs from it (NORMALIZATIONS in valueForms.ts: a
 * server that normalizes what it echoes writes `é` as `e` and U+0301).
 *
 * How they are searched: the forms of a value of up to LONG_VALUE characters by one regex
 * alternation, and its percent spellings by a regex of its own; a longer value (up to the vault's
 * 64 KiB, or a `run --url --header` value of any length), for which V8 could not compile or run
 * such regexes, without one (src/vault/longValues.ts), each of its forms just the same.
 *
 * Limits (docs/security.md): a server that wants to leak a value can always transform it some
 * other way (reverse it, split it across messages, encrypt it); this catches echoes and the
 * encodings that libraries apply on their own. A short value (under 8 characters) is scrubbed
 * too, but it can collide with ordinary text, which is then redacted as well.
 */

import type { Id } from "../relay/jsonrpc.js";
import { serializeWithId, writtenIdOf } from "../relay/rawSplice.js";
import { parsedNestsDeeperThan } from "../util/jsonDepth.js";
import {
  decodeAgain,
  decodedText,
  decodeEscapes,
  escapeBoundaryBefore,
  mayEscapeOddly,
  ODD_ESCAPE,
} from "./jsonSpelling.js";
import { type Found, LONG_VALUE, LongValue, WrittenForm } from "./longValues.js";
import { escapeRegExp, percentPattern } from "./percentSpelling.js";
import { referencePattern } from "./referencePattern.js";
import { eachReading, mayHoldReferences, throughSource } from "./referenceSpelling.js";
import {
  hexForms,
  JSON_LEVELS,
  jsonLevelsOf,
  listedForms,
  MIN_FRAGMENT,
  normalizationsOf,
} from "./valueForms.js";

/**
 * The most characters of regex source (forms and percent patterns) the regexes of the values
 * searched by regex may hold together; a value that would take them past it is searched as a long
 * one (src/vault/longValues.ts), as a value over LONG_VALUE characters is.
 */
const REGEX_SOURCE_BUDGET = 1_000_000;

/**
 * The most characters scrubbing may add to a text (markers longer than what they replace: a
 * one-character value under a 128-character name grows each of its occurrences 139 times). Past
 * it, scrubbing throws instead of writing the text: its callers fail closed (a server's message is
 * dropped, a line shows NOT_SCRUBBED, src/util/log.ts). Without it a line of a few megabytes
 * went past V8's longest string (a RangeError, wherever scrubbing was not wrapped) or held
 * hundreds of megabytes of markers.
 */
export const MAX_GROWTH = 16 * 1024 * 1024;

/** How every marker starts (redactionMarker). */
const MARKER_START = "[redacted:";

/** A regex that matches nothing: the alternation when every value is a long one. */
const NOTHING = "(?!)";

/**
 * The most characters one character takes when spelled by escapes read twice: `\uXXXX` with
 * each of its six characters spelled `\uXXXX` again.
 */
const SPELLING_STRETCH = 36;

/** A stretch of text that spells a form of a value released under `scope`. */
interface Span {
  start: number;
  end: number;
  scope: string;
}

/**
 * The code units every set of released values' forms may hold whatever the values: those of
 * percent spellings (`%`, hex digits in either case, `+` for a space) and of hex forms.
 */
function initialFormChars(): Uint8Array {
  const chars = new Uint8Array(0x10000);
  for (const c of "%+0123456789abcdefABCDEF") chars[c.charCodeAt(0)] = 1;
  return chars;
}

/** The marker that replaces a value: JSON-safe whatever the scope name it is given. */
export function redactionMarker(scope: string): string {
  return `[redacted:${scope.replace(/[^A-Za-z0-9._-]/g, "_")}]`;
}

export class ReleasedValues {
  /** value → scope */
  private readonly values = new Map<string, string>();
  /** the scopes of `values`: with one, a match's scope is known without looking for its value */
  private readonly scopes = new Set<string>();
  /** form → scope, every form of every value */
  private readonly forms = new Map<string, string>();
  /** value → the regex source of its every percent-encoding (src/vault/percentSpelling.ts) */
  private readonly percent = new Map<string, string>();
  private pattern: RegExp | null = null;
  private percentRegex: RegExp | null = null;
  /** value → the regex source of its every spelling with HTML references (src/vault/referencePattern.ts) */
  private readonly referenceSources = new Map<string, string>();
  private referenceRegex: RegExp | null = null;
  /** a percent or reference spelling's source → its regex matching a whole text (scopeOf) */
  private readonly wholeRegexes = new Map<string, RegExp>();
  private caseless: RegExp | null = null;
  /** every MIN_FRAGMENT-character piece of every value, for scrubPieces; null when stale */
  private pieceIndex: PieceIndex | null = null;
  /** text the gateway shows anyway (alsoShown): its pieces are not a value's to take out */
  private readonly shown: string[] = [];
  /** hex form → scope (hexForms) */
  private readonly hex = new Map<string, string>();
  /** the hex forms, each searched once found by KMP (a value that repeats itself has a hex form that does) */
  private readonly hexSearch: { form: WrittenForm; scope: string }[] = [];
  /**
   * the values searched by regex, each also as a long one is (src/vault/longValues.ts): what a
   * search falls back on when text that repeats a value would make the regexes read each
   * occurrence whole from every place inside the ones before it (matchesOf); null when stale
   */
  private linear: LongValue[] | null = null;
  /** whether some value has a space (which form encoding writes as "+") */
  private spaced = false;
  /**
   * whether some value has "[" or "]": only then can a form run into a marker (which starts with
   * "[" and ends with "]", and holds neither elsewhere), and scrubbing settles (settled)
   */
  private bracketed = false;
  /** the values searched without a regex built from them (src/vault/longValues.ts) */
  private readonly long: LongValue[] = [];
  /** characters of regex source the values searched by regex take (REGEX_SOURCE_BUDGET) */
  private regexSource = 0;
  /** the length of the longest form */
  private longest = 0;
  /**
   * 1 for each UTF-16 code unit some form or percent spelling holds: a text's HTML references to
   * any other character are not read (src/vault/referenceSpelling.ts)
   */
  private readonly formChars = initialFormChars();
  /**
   * Every marker this set writes (each scope's, and the one of a match whose scope is not known):
   * text already scrubbed is scrubbed again around them (aroundMarkers), never inside one.
   */
  private readonly markers = new Set<string>([redactionMarker("credential")]);
  /** the length of the longest of them */
  private longestMarker = redactionMarker("credential").length;

  /**
   * A value the vault released under `scope`: from now on none of its forms passes, nor any of
   * the forms of its Unicode normalizations (NORMALIZATIONS, valueForms.ts).
   */
  add(scope: string, value: string): void {
    for (const v of normalizationsOf(value)) this.addWritten(scope, v);
  }

  /** A value as written (add): every form of it. */
  private addWritten(scope: string, value: string): void {
    if (value === "" || this.values.has(value)) return;
    this.values.set(value, scope);
    this.scopes.add(scope);
    const marker = redactionMarker(scope);
    this.markers.add(marker);
    this.longestMarker = Math.max(this.longestMarker, marker.length);
    this.spaced ||= value.includes(" ");
    this.bracketed ||= value.includes("[") || value.includes("]");
    this.pattern = null;
    this.percentRegex = null;
    this.referenceRegex = null;
    this.caseless = null;
    this.pieceIndex = null;
    const listed = listedForms(value);
    for (const f of [value, ...listed])
      for (let i = 0; i < f.length; i++) this.formChars[f.charCodeAt(i)] = 1;
    const source = listed.reduce((n, f) => n + f.length, 0);
    const encoded = value.length <= LONG_VALUE ? percentPattern(value, JSON_LEVELS) : null;
    if (encoded === null || this.regexSource + source + encoded.source.length > REGEX_SOURCE_BUDGET) {
      // too long for a regex built from it: every form searched without one
      const long = new LongValue(value, scope, [...listed, ...hexForms(value)], jsonLevelsOf(value));
      this.long.push(long);
      const longestListed = listed.reduce((n, f) => Math.max(n, f.length), 0);
      this.longest = Math.max(
        this.longest,
        longestListed,
        2 * Buffer.byteLength(value, "utf8"),
        long.percentLongest,
      );
      return;
    }
    for (const f of listed) {
      if (f === "" || this.forms.has(f)) continue;
      this.forms.set(f, scope);
      this.longest = Math.max(this.longest, f.length);
    }
    for (const h of hexForms(value))
      if (!this.hex.has(h)) {
        this.hex.set(h, scope);
        this.hexSearch.push({ form: new WrittenForm(h), scope });
      }
    this.linear = null;
    this.longest = Math.max(this.longest, 2 * Buffer.byteLength(value, "utf8"));
    this.percent.set(value, encoded.source);
    this.referenceSources.set(value, referencePattern(value));
    this.regexSource += source + encoded.source.length;
    this.longest = Math.max(this.longest, encoded.longest);
  }

  /** The scope of a value whose form (or percent-encoding) is `match`. */
  private scopeOf(match: string): string {
    const scope = this.forms.get(match);
    if (scope !== undefined) return scope;
    // Every match is a spelling of a released value: when they all share one scope, that is the
    // match's, and no whole-text regex (some hundred characters of source per character of a
    // value, compiled at first use) need be built to find which value it spells.
    if (this.scopes.size === 1) return this.scopes.values().next().value as string;
    for (const [value, source] of this.percent)
      if (this.whole(source).test(match)) return this.values.get(value)!;
    for (const [value, source] of this.referenceSources)
      if (this.whole(source).test(match)) return this.values.get(value)!;
    return "credential";
  }

  /**
   * The regex of `source` matching a whole text, built once. Built again for each match, a
   * spelling's regex (some hundred characters of source for each character of its value) was
   * parsed again for each value written with a reference: a 2 KB line with one took three times
   * what it took before that spelling was searched (docs/security.md).
   */
  private whole(source: string): RegExp {
    let re = this.wholeRegexes.get(source);
    if (re === undefined) {
      re = new RegExp(`^(?:${source})$`);
      this.wholeRegexes.set(source, re);
    }
    return re;
  }

  /**
   * The longest stretch of text scrubText can replace at once (0 when nothing is released), with
   * room for the escape a cut must not split: what a cut must keep back. A form spelled with JSON
   * escapes, once or within JSON text inside a JSON string, takes up to SPELLING_STRETCH
   * characters for each of its own.
   */
  longestForm(): number {
    return this.longest === 0 ? 0 : (this.longest + 2) * SPELLING_STRETCH;
  }

  /**
   * Where `text` can be cut at or after `at` so that scrubbing each side on its own replaces
   * what scrubbing the whole would: `at` itself, or past what scrubText would replace across it,
   * and never inside a JSON escape (read on its own, the rest would spell other characters).
   * Exact only when `text` runs on for at least longestForm() - 1 characters past `at` (every
   * form across `at` then ends inside it).
   */
  cutPoint(text: string, at: number, pieces = false): number {
    return this.cutter(text, pieces)(at);
  }

  /**
   * cutPoint for many cuts of one text: the text is searched once, here, and each cut asked of
   * the function returned is answered from what was found (a binary search, then a walk past
   * split escapes). A caller cutting a long text into pieces pays one scan of it, not one per
   * piece: with a long value released, what a cut must keep back (longestForm) runs to millions
   * of characters. `pieces`: the sides are scrubbed by scrubPieces after scrubText (a server's
   * stderr), and a cut must not split what scrubPieces replaces around a marker either.
   */
  cutter(text: string, pieces = false): (at: number) => number {
    if (this.values.size === 0) return (at) => at;
    if (!text.includes("\\") && !this.mayHoldUnlisted(text) && !this.referencesSpell(text)) {
      // the regex's matches, overlapping ones joined, and the markers already in the text (a cut
      // inside one would leave parts that scrubbing no longer knows for a marker): in order and
      // apart, so at most one is across a cut
      const found = this.withMarkers(text, this.replacedBy(text, pieces));
      return (at) => {
        const across = lastStartingBefore(found, at);
        return across && across.end > at ? across.end : at;
      };
    }
    const spans = this.withMarkers(text, this.replacedBy(text, pieces));
    // the places where both readings of the escapes are between two characters
    const between = new Uint8Array(text.length + 1);
    for (const p of decodeAgain(decodeEscapes(text)).source) between[p] = 1;
    return (at) => {
      let cut = at;
      for (;;) {
        // spans are in order and apart (spansOf merges those that overlap)
        const across = lastStartingBefore(spans, cut);
        if (across && across.end > cut) cut = across.end;
        else if (cut < text.length && (between[cut] === 0 || splitsPair(text, cut))) cut += 1;
        else return cut;
      }
    };
  }

  /**
   * The stretches of `text` that scrubText replaces, in order and apart: each occurrence (fitted
   * to the markers already written), and then what its marker takes round after round (settled:
   * `][[` for the value `][` is one marker, the second `[` with the first marker's `]` an
   * occurrence again). A cut at the end of the first occurrence left that `[` to the piece after
   * it, a part of the value shown that scrubbing the whole line took.
   */
  private replacedBy(text: string, pieces: boolean): Span[] {
    const spans = this.aroundMarkers(text, this.textSpans(text));
    if (!this.bracketed) return spans;
    const once = this.settledSpans(text, spans, this.textSpans);
    if (!pieces || once.placed.length === 0) return once.replaced;
    // scrubPieces after it: a piece that runs into a marker scrubText wrote (`][[[[[[[` of the
    // value `[][[[[[[[`, its `]` the marker's) is taken with the marker, and what that marker
    // stands for grows by what the piece holds of the text; a piece of the text alone is the
    // caller's to look for (the pieces of a value as written, src/supervisor/stderrLines.ts)
    const written = once.out;
    const more = this.settledSpans(
      written,
      this.aroundMarkers(written, this.indexedPieces(written)),
      this.pieceSpans,
    );
    // those that take some of a marker (both in order: one pass over the two)
    const grown: Span[] = [];
    let p = 0;
    for (const m of more.replaced) {
      while (p < once.placed.length && once.placed[p]!.end <= m.start) p++;
      if (p < once.placed.length && once.placed[p]!.start < m.end)
        grown.push({
          start: sourceOf(once.placed, m.start, "start"),
          end: sourceOf(once.placed, m.end, "end"),
          scope: m.scope,
        });
    }
    return joined([...once.replaced, ...grown].sort((a, b) => a.start - b.start || b.end - a.end));
  }

  /** How many distinct values were released. */
  get size(): number {
    return this.values.size;
  }

  /**
   * Text (a stderr line, a log line) with every form of every released value replaced, as
   * written and as its JSON escapes spell it (src/vault/jsonSpelling.ts): read once, and once
   * more for JSON text inside a JSON string. Only the characters that spell a form are replaced;
   * every other one stays as written. Occurrences that overlap are replaced together (`aaa` for a
   * value `aa` leaves no `a`). Text scrubbed already comes out the same: a marker is never scrubbed
   * inside (aroundMarkers), so scrubbing it again, as every log line is, never grows it, and a form
   * that runs into a marker written here is taken with it (settled). Throws past MAX_GROWTH, and
   * for text built against a value's markers past SETTLE_WORK.
   */
  scrubText(text: string): string {
    if (this.values.size === 0) return text;
    return this.settled(text, this.aroundMarkers(text, this.textSpans(text)), this.textSpans);
  }

  /** Where forms occur in `text` as written and as its escapes spell them (scrubText), joined. */
  private readonly textSpans = (text: string): Span[] =>
    // no escape: the text spells nothing but itself
    !text.includes("\\") && !this.mayHoldUnlisted(text) && !this.referencesSpell(text)
      ? this.listedSpans(text)
      : this.spansOf(text, [[0, text.length]]);

  /**
   * `text` with `spans` (fitted to its markers: aroundMarkers) replaced, and then with every
   * occurrence that the markers written form with the text beside them replaced too, until none
   * is left: scrubbed text scrubbed again comes out the same. A form of a value that holds "[" or
   * "]" can run into a marker written here (the value `s]x` in `s]xx`: `[redacted:s]x` ends in
   * `s]x` again), and a marker takes such an occurrence with it as it takes one a server wrote
   * across a marker; before, it was left to the next scrubbing, so what one scrubbing wrote still
   * held the value across a marker's edge. A new occurrence holds characters of a marker written
   * last (the rest of the text was searched already), so only around those is the text searched
   * again, as far as the longest form reaches (settledAround). `find` gives the occurrences in a
   * stretch of text.
   */
  private settled(text: string, spans: Span[], find: (t: string) => Span[]): string {
    return this.settledSpans(text, spans, find).out;
  }

  /**
   * settled, and (`replaced`) the stretches of `text` that its markers stand for, in order and
   * apart: the spans given, each widened by what its marker then took round after round. A cut of
   * `text` outside them splits nothing that scrubbing the whole replaces (cutter).
   */
  private settledSpans(
    text: string,
    spans: Span[],
    find: (t: string) => Span[],
  ): { out: string; replaced: Span[]; placed: Placed[] } {
    if (!this.bracketed) return { out: replacedSpans(text, spans), replaced: spans, placed: [] };
    const { out, written } = replacedAt(text, spans, true);
    if (written.length === 0) return { out, replaced: spans, placed: [] };
    const settled = this.settledAround(out, written, find, SETTLE_WORK * text.length + SETTLE_SLACK);
    tooLong(settled.text.length - text.length);
    return {
      out: settled.text,
      replaced: settled.placed.map((p) => ({ start: p.from, end: p.to, scope: p.scope })),
      placed: settled.placed,
    };
  }

  /**
   * How far around a marker written in `out` an occurrence that runs into it can reach, in
   * characters of `out`. Without an escape, the longest form. With escapes a form is spelled
   * longer, up to SPELLING_STRETCH characters for each of its own (longestForm), but only by as
   * much as the escapes take: each backslash of the text makes what it spells at most
   * ESCAPE_SHRINK characters shorter than as written (5 as it is read, `\uXXXX` for one
   * character, and 5 more as the result is read again). So the longest form, with a character's
   * spelling more (an escape cut at the stretch's start), and ESCAPE_SHRINK for each backslash in
   * the text reach as far, and text with few escapes (one `\n` in a line) is settled over
   * stretches as narrow as text without; only text dense with them gets longestForm's.
   */
  private settleReach(out: string): number {
    // a form spelled with HTML references takes up to 18 characters for each of its own
    if (mayHoldReferences(out, this.formChars)) return this.longestForm();
    if (!out.includes("\\")) return this.longest;
    const wide = this.longestForm();
    const base = this.longest + SPELLING_STRETCH;
    let backslashes = 0;
    for (let at = out.indexOf("\\"); at !== -1; at = out.indexOf("\\", at + 1))
      if (base + ESCAPE_SHRINK * ++backslashes >= wide) return wide;
    return base + ESCAPE_SHRINK * backslashes;
  }

  /**
   * `out` with the occurrences that run into `marks` (the markers just written in it, in order,
   * apart) taken with them, round after round, each round over a stretch of `out` alone: from the
   * longest form's reach before the markers written last to its reach after them. Text built to
   * make a marker take a few characters a round (`s]xxxx…`) costs a round per step, each over that
   * stretch only, not the whole text again; past `budget` characters searched, scrubbing throws,
   * and its callers fail closed (src/util/log.ts), as past MAX_GROWTH.
   */
  private settledAround(
    out: string,
    marks: Placed[],
    find: (t: string) => Span[],
    budget: number,
  ): { text: string; placed: Placed[] } {
    // as far as the longest form reaches from a marker written, and then as far as a whole marker:
    // an occurrence there may overlap one written before (by the text, or an earlier pass), which
    // aroundMarkers can widen it to only if the whole of it lies in the stretch
    const reach = this.settleReach(out) + this.longestMarker + SETTLE_MARGIN;
    // the text done with, from which a stretch takes back what comes before it
    const done = new TextTail();
    // every marker written in the text done with and the stretch (which together are the start of
    // the text scrubbed so far), where it lies there and what of `text` it stands for: so that
    // what a marker takes in a round is known as a stretch of `text` too (settledSpans)
    const placed: Placed[] = [];
    let at = 0; // out[0, at) is done, or in the stretch
    let k = 0; // the next of `marks` not yet in a stretch
    while (k < marks.length) {
      const from = Math.max(at, marks[k]!.start - reach);
      done.push(out.slice(at, from));
      let stretch = "";
      at = from;
      // the markers of the stretch written last (or taken in from `out`), where it is searched
      let fresh: Span[] = [];
      for (;;) {
        // reach after the last fresh marker, read on from `out`, with the markers written there
        // taken in (fresh: they were not searched around either)
        for (;;) {
          const last = fresh.at(-1);
          const until = last ? at + reach - (stretch.length - last.end) : Number.POSITIVE_INFINITY;
          if (k < marks.length && marks[k]!.start < until) {
            const m = marks[k++]!;
            const shift = stretch.length - at;
            stretch += out.slice(at, m.end);
            at = m.end;
            fresh.push({ start: m.start + shift, end: m.end + shift, scope: m.scope });
            placed.push({ ...m, start: done.length + m.start + shift, end: done.length + m.end + shift });
            continue;
          }
          const to = Math.min(out.length, until);
          if (to > at) {
            stretch += out.slice(at, to);
            at = to;
          }
          break;
        }
        // reach before the first, taken back from the text done with
        const short = reach - fresh[0]!.start;
        if (short > 0 && done.length > 0) {
          const back = done.take(short);
          stretch = back + stretch;
          fresh = fresh.map((f) => ({
            start: f.start + back.length,
            end: f.end + back.length,
            scope: f.scope,
          }));
        }
        budget -= stretch.length;
        if (budget < 0)
          throw new RangeError("scrubbing would not settle: text built against a value's markers");
        const found: Span[] = [];
        for (const f of find(stretch)) {
          const near = lastStartingBefore(fresh, f.end);
          if (near && near.end > f.start) found.push(f);
        }
        found.sort((a, b) => a.start - b.start || b.end - a.end);
        const more = this.aroundMarkers(stretch, joined(found));
        if (more.length === 0) break;
        const round = replacedAt(stretch, more, true);
        replacePlaced(placed, done.length, round.written);
        stretch = round.out;
        fresh = round.written;
      }
      done.push(stretch);
    }
    done.push(out.slice(at));
    return { text: done.text(), placed };
  }

  /**
   * Where the one alternation matches `text`, as written: every match, overlapping ones too (a
   * global regex would go on past each match's end, and replace only part of an occurrence that
   * overlaps it), joined where they overlap.
   */
  private listedSpans(text: string): Span[] {
    const found: Span[] = [];
    this.matchesOf(this.regex(), "written", text, (start, end, scope) => found.push({ start, end, scope }));
    found.sort((a, b) => a.start - b.start || b.end - a.end);
    return joined(found);
  }

  /**
   * Every match of `re` (the one alternation of written forms, or the percent patterns: `kind`)
   * in `t`, overlapping ones too, with the scope of its value, in order of start. By eachMatch
   * while that stays within its work; past it (text that repeats a value that repeats itself:
   * every place starts a match, each read whole), by the search of the long values instead, value
   * by value, over the whole text: each written form by indexOf and a KMP pass, each percent
   * spelling from the value's borders, in time linear in the text. Before, the rest of the text
   * from there was taken as one occurrence: nothing let through, but the server's text after such
   * a run was lost.
   */
  private matchesOf(
    re: RegExp,
    kind: "written" | "percent",
    t: string,
    on: (start: number, end: number, scope: string) => void,
  ): void {
    const found: Span[] = [];
    if (eachMatch(re, t, (start, end, m) => found.push({ start, end, scope: this.scopeOf(m) }))) {
      for (const f of found) on(f.start, f.end, f.scope);
      return;
    }
    this.linear ??= [...this.percent.keys()].map((v) => {
      const scope = this.values.get(v)!;
      return new LongValue(v, scope, listedForms(v), JSON_LEVELS);
    });
    for (const l of this.linear) {
      const at = kind === "written" ? l.writtenOccurrences(t, [], true) : l.percentOccurrences(t);
      for (const f of at) on(f.start, f.end, l.scope);
    }
  }

  /**
   * `spans` (in order, apart) fitted to the markers already written in `text` (a line the gateway
   * logs was scrubbed before, and a marker holds letters a value may be made of: a value "a" is
   * in every one): a span inside a marker is dropped, and a span partly in one takes the whole
   * marker with it. A known marker is fixed text that says nothing of any value, so leaving it
   * is safe; scrubbing inside it made a marker of markers, each pass many times longer. In order
   * and apart.
   */
  private aroundMarkers(text: string, spans: Span[]): Span[] {
    if (spans.length === 0 || !text.includes(MARKER_START)) return spans;
    const marks = this.markersIn(text);
    if (marks.length === 0) return spans;
    const out: Span[] = [];
    let k = 0;
    for (const s of spans) {
      while (k < marks.length && marks[k]!.end <= s.start) k++;
      let { start, end } = s;
      // the marker that holds the span's first character, then the one that holds its last
      if (k < marks.length && marks[k]!.start <= start) {
        if (end <= marks[k]!.end) continue;
        start = marks[k]!.start;
      }
      let j = k;
      while (j < marks.length && marks[j]!.end < end) j++;
      if (j < marks.length && marks[j]!.start < end) end = marks[j]!.end;
      const last = out.at(-1);
      if (last && start < last.end) last.end = Math.max(last.end, end);
      else out.push({ start, end, scope: s.scope });
    }
    return out;
  }

  /** `spans` and the markers in `text` together, joined: where a cut must not fall. */
  private withMarkers(text: string, spans: Span[]): Span[] {
    if (!text.includes(MARKER_START)) return spans;
    const marks = this.markersIn(text);
    if (marks.length === 0) return spans;
    return joined([...spans, ...marks].sort((a, b) => a.start - b.start || b.end - a.end));
  }

  /** Every marker this set writes that is written in `text`, in order (markers never overlap). */
  private markersIn(text: string): Span[] {
    const marks: Span[] = [];
    // the first "]" at or after `at`: searched again only once `at` is past it, so that text of
    // many marker starts before one "]" is read once, not once for each start
    let close = -1;
    for (let at = text.indexOf(MARKER_START); at !== -1; at = text.indexOf(MARKER_START, at + 1)) {
      if (close < at) close = text.indexOf("]", at);
      if (close === -1) break;
      if (close + 1 - at <= this.longestMarker && this.markers.has(text.slice(at, close + 1)))
        marks.push({ start: at, end: close + 1, scope: "" });
    }
    return marks;
  }

  /**
   * `text` is shown by the gateway whatever a server does (its server label, which names every
   * line of its log): a piece of a value that is also a piece of it is not taken out by
   * scrubPieces, which would otherwise cut the gateway's own words (a label `inventory-api-demo`
   * beside a key `demo-inventory-key-…`). Whole values and their forms are still scrubbed
   * (scrubText), and every piece that is not in such text too.
   */
  alsoShown(text: string): void {
    if (text.length < MIN_FRAGMENT || this.shown.includes(text)) return;
    this.shown.push(text);
    this.pieceIndex = null;
  }

  /**
   * `text` with every stretch made of pieces of released values (MIN_FRAGMENT characters or more, as
   * written) replaced by the marker: for a text that may quote a value cut short, which scrubText
   * does not recognise (a JSON parse error quotes ten characters either side of where it failed,
   * so a value that starts there shows its first ten). Every position is tried against every
   * value (in one pass: indexedPieces), and ordinary text that is also part of a value is taken
   * too: only for text no JSON reader gets, after scrubText: the process's last words
   * (src/cli/lastResort.ts) and a server's stderr lines (src/supervisor/stderrLines.ts), where a
   * careless server logs a key's start, or an error of its own quotes the start of the value it
   * failed on.
   */
  scrubPieces(text: string): string {
    if (this.values.size === 0) return text;
    // the markers written here can form a form with the text beside them too, not only a piece:
    // the log scrubs with scrubText and then this, and scrubbed again it must come out the same
    return this.settled(text, this.aroundMarkers(text, this.indexedPieces(text)), this.pieceSpans);
  }

  /** What scrubPieces replaces in a stretch as it settles: pieces, and forms (scrubText's). */
  private readonly pieceSpans = (t: string): Span[] =>
    joined(
      [...this.indexedPieces(t), ...this.textSpans(t)].sort((a, b) => a.start - b.start || b.end - a.end),
    );

  /**
   * scrubPieces' spans at MIN_FRAGMENT characters, in one pass over `text` whatever the number of
   * values (a server's stderr goes through it, a flood of it too): a rolling hash of each
   * MIN_FRAGMENT characters is looked up among those of every piece, and only a hit is read as
   * text. A piece's scope is that of the first value released that has it, as the search value by
   * value gives.
   */
  private indexedPieces(text: string): Span[] {
    if (this.pieceIndex === null) this.pieceIndex = pieceIndexOf(this.values, this.shown);
    const index = this.pieceIndex;
    const spans: Span[] = [];
    if (index.size === 0) return spans;
    let h = 0;
    let last: Span | null = null;
    for (let i = 0; i < text.length; i++) {
      h = (Math.imul(h, HASH_BASE) + text.charCodeAt(i)) | 0;
      if (i >= MIN_FRAGMENT) h = (h - Math.imul(text.charCodeAt(i - MIN_FRAGMENT), index.top)) | 0;
      const start = i + 1 - MIN_FRAGMENT;
      if (start < 0) continue;
      const key = h & HASH_MASK;
      let slot = key & index.mask;
      while (index.keys[slot] !== key && index.keys[slot] !== -1) slot = (slot + 1) & index.mask;
      if (index.keys[slot] === -1) continue;
      const candidates = index.slots[slot]!;
      let scope: string | null = null;
      for (const c of candidates)
        if (startsAt(text, start, c.piece)) {
          scope = c.scope;
          break;
        }
      if (scope === null) continue;
      if (last && start < last.end) last.end = i + 1;
      else {
        last = { start, end: i + 1, scope };
        spans.push(last);
      }
    }
    return spans;
  }

  /**
   * Where forms occur in `text`: as written anywhere, and as the escapes inside each of
   * `stretches` spell them (read once and twice); as stretches of `text`, in order, overlapping
   * ones joined. Each stretch is read on its own, without positions first: those are worked out
   * only where a form is found.
   */
  private spansOf(text: string, stretches: [number, number][]): Span[] {
    const re = this.regex();
    const found: Span[] = [];
    // `decodes`: how many times the JSON escapes of `text` were read to give `t` (at most twice,
    // as everywhere: a reading's escapes are read after it only below that, or the same text gave
    // a third reading where the line held a reference elsewhere and not without it)
    const search = (
      t: string,
      source: ArrayLike<number> | null,
      offset: number,
      references = true,
      decodes = 0,
    ) => {
      // every match, overlapping ones too (eachMatch): `{{%7b` is `{{` and then `{%7b`
      const place = (at: number, end: number, scope: string) =>
        found.push(
          source
            ? { start: offset + source[at]!, end: offset + source[end]!, scope }
            : { start: at, end, scope },
        );
      this.matchesOf(re, "written", t, place);
      const spelled = (start: number, end: number, scope: string) => {
        if (this.percentSpelled(t, start, end)) place(start, end, scope);
      };
      if (this.mayPercentEncode(t)) this.matchesOf(this.percentPatterns(), "percent", t, spelled);
      const hexAt: Found[] = [];
      for (const { form, scope } of this.hexSearch) {
        form.occurrencesIn(t, hexAt, true);
        for (const f of hexAt) place(f.start, f.end, scope);
        hexAt.length = 0;
      }
      // the long values, without a regex: every written form, and the percent spelling where
      // the text may hold one (without "%" or "+" it is the value as written, a written form)
      const percent = this.mayPercentEncode(t);
      for (const l of this.long) {
        for (const f of l.writtenOccurrences(t, [], true)) place(f.start, f.end, l.scope);
        if (percent) for (const f of l.percentOccurrences(t)) spelled(f.start, f.end, l.scope);
      }
      // and what its HTML references and twice-escaped URL escapes spell (`&#43;`, `&plus;`,
      // `%252F`: src/vault/referenceSpelling.ts), at each reading in turn, up to
      // REFERENCE_READINGS (`&amp;#43;` reads `&#43;`, then `+`), and with each reading's JSON
      // escapes read after it (`&amp;#\u0031;`: `&#\u0031;`, then `&#1;`); searched whole, with
      // places, only where a form occurs around what was read (most text with a `&` holds none)
      // and every spelling of a value with references as written, wherever it is: text before it
      // can take its first character into a reference of its own at some reading
      // (src/vault/referencePattern.ts)
      if (references && this.referenceSources.size > 0 && t.includes("&")) {
        const all = eachMatch(this.referencePatterns(), t, (start, end, m) =>
          place(start, end, this.scopeOf(m)),
        );
        // (text that repeats a value that repeats itself, past the search's work: all of it)
        if (!all) place(0, t.length, "credential");
      }
      if (references)
        eachReading(t, this.formChars, true, (r) => {
          const places = source ? throughSource(r.source, source) : r.source;
          if (this.occursAround(r.text, r.escaped)) search(r.text, places, offset, false);
          if (decodes < 2 && r.text.includes("\\")) {
            const d = decodeEscapes(r.text);
            if (d.text !== r.text && this.occursIn(d.text))
              search(d.text, throughSource(d.source, places), offset, false);
          }
          return false;
        });
    };
    search(text, null, 0);
    for (const [from, to] of stretches) {
      const part = text.slice(from, to);
      const once = decodedText(part);
      const twice = decodedText(once);
      if (
        (once !== part && this.occursInReadings(once)) ||
        (twice !== once && this.occursInReadings(twice))
      ) {
        const d1 = decodeEscapes(part);
        search(d1.text, d1.source, from, true, 1);
        const d2 = decodeAgain(d1);
        search(d2.text, d2.source, from, true, 2);
      }
    }
    found.sort((a, b) => a.start - b.start || b.end - a.end);
    return joined(found);
  }

  /**
   * The stretches of a JSON line that can spell a form otherwise than JSON.stringify would:
   * around each `\u` and `\/` (a spelling without them is JSON.stringify's, which the regex has),
   * as far as the longest form can reach, each starting where no escape is cut.
   */
  private oddStretches(line: string): [number, number][] {
    const reach = this.longestForm();
    const out: [number, number][] = [];
    ODD_ESCAPE.lastIndex = 0;
    for (let m = ODD_ESCAPE.exec(line); m !== null; m = ODD_ESCAPE.exec(line)) {
      const to = Math.min(line.length, m.index + 2 + reach);
      const last = out.at(-1);
      if (last && m.index - reach <= last[1]) {
        last[1] = to;
        continue;
      }
      out.push([escapeBoundaryBefore(line, Math.max(0, m.index - reach)), to]);
    }
    return out;
  }

  /**
   * One JSON-RPC line. Unchanged when no form occurs in it, written or spelled by its escapes
   * (the common case, a line with no `\u` and no `\/`, costs one regex scan). Otherwise each occurrence is replaced in place, which keeps every other byte as the
   * server wrote it. Only when that would not parse any more (a value echoed as a bare number,
   * say) or would change the message's `id` (which routes it, and never reaches the client: the
   * gateway answers with its own ids) is the message parsed, scrubbed value by value with its
   * `id` kept, and written again.
   */
  scrubLine(jsonLine: string): string {
    if (this.values.size === 0) return jsonLine;
    const re = this.regex();
    re.lastIndex = 0;
    // a line whose escapes are all JSON.stringify's spells each form as the regex has it
    const odd = mayEscapeOddly(jsonLine);
    if (
      !re.test(jsonLine) &&
      !odd &&
      !this.mayHoldUnlisted(jsonLine) &&
      !this.referencesSpellInJson(jsonLine)
    )
      return jsonLine;
    // a line with HTML references (or `%25XX`) is read whole, its JSON escapes too: a reference
    // spells a character that JSON.stringify escapes (`&#34;` for `"`) beside one it wrote as
    // JSON does (`\\`), so neither reading alone holds a form
    const references = mayHoldReferences(jsonLine, this.formChars);
    const stretches: [number, number][] = references
      ? [[0, jsonLine.length]]
      : odd
        ? this.oddStretches(jsonLine)
        : [];
    const found = this.aroundMarkers(jsonLine, this.spansOf(jsonLine, stretches));
    if (found.length === 0) return jsonLine;
    let original: unknown;
    try {
      original = JSON.parse(jsonLine);
    } catch {
      return this.settled(jsonLine, found, this.textSpans); // not JSON: the gateway drops it, and logs it scrubbed
    }
    // A message's own key "id" (a value "i", "d" or "id" is in it) is the frame's, not the
    // server's words: it says nothing of a value, and every message written again from its
    // parsed form has it (serializeWithId). Replaced in place, the id it keys was lost, and the
    // message written again kept the key as a member of its own, which the next scrubbing moved:
    // scrubbed again, the message changed.
    // (only a short occurrence can lie inside a key of at most `"\u0069\u0064"`'s 14 characters:
    // a line is not read for its keys otherwise)
    const keys = found.some((f) => f.end - f.start <= ID_KEY_LONGEST) ? idKeys(jsonLine) : [];
    const spans =
      keys.length === 0 ? found : found.filter((f) => !keys.some(([a, b]) => a <= f.start && f.end <= b));
    if (spans.length === 0) return jsonLine;
    const replaced = this.settled(jsonLine, spans, this.textSpans);
    // Too deep to walk value by value: the gateway drops it unread (src/util/jsonDepth.ts), and
    // only its scrubbed text can ever be shown.
    if (parsedNestsDeeperThan(jsonLine, original)) return replaced;
    try {
      if (sameIds(original, JSON.parse(replaced))) return replaced;
    } catch {
      /* no longer JSON: a form in a bare number, or across a string's end */
    }
    // A form inside a bare number: the whole number becomes the marker, as a string. Rewriting
    // from the parsed message instead would scrub the number as JSON.parse reads it, and a
    // number of more than 15-17 digits is read rounded: the value's digits would no longer be
    // found, and all but its last few would go out as a number.
    const quoted = quotedInNumbers(jsonLine, spans);
    let base: unknown = original;
    if (quoted !== null) {
      try {
        base = JSON.parse(quoted);
        if (sameIds(original, base)) return quoted;
      } catch {
        base = original; // still not JSON: rewrite from the parsed original
      }
    }
    // The id changed: it holds a value itself. The message is written again from the parsed line
    // with its numbers that hold a value already markers (from `quoted`: parsed, a number of
    // more than 15-17 digits would be read rounded, and its leading digits go out), and its id
    // as the server wrote it (it routes the message; every log line is scrubbed as text).
    // In a batch, where each element's id text is not at hand, an id that holds a value is
    // scrubbed like the rest (a server's batch element with such an id routes to nothing anyway).
    if (Array.isArray(original))
      return JSON.stringify(
        original.map((m, i) => {
          const b = Array.isArray(base) ? base[i] : m;
          const clean = isObject(m) && isObject(b) && b.id === m.id && this.scrubValue(m.id) === m.id;
          return clean ? this.scrubMessage(m, b) : this.scrubValue(b);
        }),
      );
    const out = this.scrubMessage(original, base);
    return isObject(original) && isId(original.id) && isObject(out)
      ? serializeWithId(out, writtenIdOf(jsonLine, original.id))
      : JSON.stringify(out);
  }

  /**
   * `base` (`msg`, or `msg` with its numbers that hold a value made markers) scrubbed, `msg`'s
   * top-level id kept when it is one (a string or a number: anything else routes nothing).
   */
  private scrubMessage(msg: unknown, base: unknown): unknown {
    if (!isObject(msg) || !isObject(base) || !isId(msg.id)) return this.scrubValue(base);
    // the key "id" is the frame's, written again as it is (serializeWithId): scrubbed as a key
    // too (a value "i" makes it "[redacted:s]d"), it added a member that the next scrubbing put
    // elsewhere, so that scrubbed text scrubbed again changed
    // (and in its place: a batch's elements are written as JSON.stringify orders them)
    return Object.fromEntries(
      Object.entries(base).map(([k, x]) =>
        k === "id" ? [k, msg.id] : [this.scrubText(k), this.scrubValue(x)],
      ),
    );
  }

  /** `v` with every string in it (keys too) scrubbed as text. */
  scrubValue(v: unknown): unknown {
    if (typeof v === "string") return this.scrubText(v);
    if (typeof v === "number") {
      const s = String(v);
      const t = this.scrubText(s);
      return t === s ? v : t;
    }
    if (Array.isArray(v)) return v.map((x) => this.scrubValue(x));
    if (typeof v === "object" && v !== null) {
      // defined, not assigned: assigning a key "__proto__" (JSON.parse makes it an own key) would
      // set the prototype instead, and the key and its value would vanish from the message
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [this.scrubText(k), this.scrubValue(x)]));
    }
    return v;
  }

  /**
   * A hostname with every form of every value replaced, in any case: a server can put a value
   * into the name of a host it contacts (`<value>.example.com`), which arrives lower-cased, and
   * the egress record keeps hosts where no passphrase is needed to read them.
   */
  scrubHost(host: string): string {
    if (this.values.size === 0) return host;
    if (!this.caseless) {
      const all = [...this.forms.keys(), ...this.hex.keys()].sort((a, b) => b.length - a.length);
      this.caseless = new RegExp(all.map(escapeRegExp).join("|"), "gi");
    }
    const scopes = new Map<string, string>();
    for (const [f, scope] of [...this.forms, ...this.hex]) scopes.set(f.toLowerCase(), scope);
    const cased = this.scrubText(host);
    const found: Span[] = [];
    const whole = eachMatch(this.caseless, cased, (start, end, m) =>
      found.push({ start, end, scope: scopes.get(m.toLowerCase()) ?? "credential" }),
    );
    // a host name that repeats a value that repeats itself, past the work of the search: all of it
    if (!whole) return redactionMarker("credential");
    const scrubbed = replacedSpans(cased, this.aroundMarkers(cased, joined(found)));
    // a long value's forms, in any case: a host name that holds one (it would have to be as
    // long) is replaced whole
    const lower = scrubbed.toLowerCase();
    const long = this.long.find((l) => l.caselessIn(lower));
    return long ? redactionMarker(long.scope) : scrubbed;
  }

  /**
   * Whether `text` may hold a percent-encoding of a value that is not one of its listed forms:
   * only with a "%" (or a "+", for a value with a space). The percent patterns are a regex of
   * their own, searched only then: in the one alternation they would slow every scan.
   */
  private mayPercentEncode(text: string): boolean {
    return text.includes("%") || (this.spaced && text.includes("+"));
  }

  /**
   * Whether `t`'s stretch [start, end) is a percent spelling (holds a "%", or a "+" for a value
   * with a space). The percent patterns also match a value with its JSON-escaped characters each at
   * a level of its own and no "%" at all (`\\\\` beside `\[`), which only a line holding a "%"
   * somewhere had searched: a long line cut before that "%" was then scrubbed otherwise than whole.
   * Only what decides in the spelling itself counts.
   */
  private percentSpelled(t: string, start: number, end: number): boolean {
    // (read from start to end only: indexOf would read past the end, for every match)
    for (let i = start; i < end; i++) {
      const c = t.charCodeAt(i);
      if (c === 0x25 || (c === 0x2b && this.spaced)) return true;
    }
    return false;
  }

  /**
   * Whether `text` may hold what the one alternation does not search: a percent-encoding, a hex
   * form, or a form of a long value (which the alternation does not hold).
   */
  private mayHoldUnlisted(text: string): boolean {
    if (this.mayPercentEncode(text)) return true;
    for (const l of this.long) if (l.writtenIn(text)) return true;
    for (const h of this.hex.keys()) if (text.includes(h)) return true;
    return false;
  }

  /** occursIn `text`, or in what its references and `%25` escapes spell (src/vault/referenceSpelling.ts). */
  private occursInReadings(text: string): boolean {
    return this.occursIn(text) || this.referencesSpell(text);
  }

  /** referencesSpell of a JSON line, as written and with its escapes read once and twice. */
  private referencesSpellInJson(line: string): boolean {
    if (!mayHoldReferences(line, this.formChars)) return false;
    if (this.referencesSpell(line)) return true;
    if (!line.includes("\\")) return false;
    const once = decodedText(line);
    return this.referencesSpell(once) || (once.includes("\\") && this.referencesSpell(decodedText(once)));
  }

  /**
   * Whether what the HTML references and `%25` escapes of `text` spell, at any of their readings
   * (up to REFERENCE_READINGS), holds a form
   * (src/vault/referenceSpelling.ts): a text with none is not read (most text with a `&` holds
   * none), and one whose reading holds no form is searched as before.
   */
  private referencesSpell(text: string): boolean {
    if (!mayHoldReferences(text, this.formChars)) return false;
    if (this.referenceSources.size > 0 && matches(this.referencePatterns(), text)) return true;
    let spelled = false;
    eachReading(text, this.formChars, false, (r) => {
      // (and its JSON escapes read after it, as spansOf reads them)
      spelled =
        this.occursAround(r.text, r.escaped) || (r.text.includes("\\") && this.occursIn(decodedText(r.text)));
      return spelled;
    });
    return spelled;
  }

  /**
   * Whether a form occurs in `read` (text with its references read) that takes a character read
   * from an escape (`escaped`: where they are, in order). One that takes none is in the text as
   * written, which is searched anyway: so only around those characters is `read` searched, as
   * far as a form reaches (a 2 KB line with one `&amp;` is not searched again whole).
   */
  private occursAround(read: string, escaped: readonly number[]): boolean {
    const reach = this.longest;
    let from = -1;
    let to = -1;
    for (const i of escaped) {
      // (what one escape reads takes at most 2 code units: a surrogate pair, or `&fjlig;`'s "fj")
      if (from !== -1 && i - reach <= to) {
        to = i + 2 + reach;
        continue;
      }
      if (from !== -1 && this.occursIn(read.slice(from, to))) return true;
      from = Math.max(0, i - reach);
      to = i + 2 + reach;
    }
    return from !== -1 && this.occursIn(read.slice(from, to));
  }

  /** Whether some form, or percent-encoding, of some value occurs in `text`. */
  private occursIn(text: string): boolean {
    if (matches(this.regex(), text)) return true;
    for (const h of this.hex.keys()) if (text.includes(h)) return true;
    for (const l of this.long) if (l.writtenIn(text)) return true;
    if (!this.mayPercentEncode(text)) return false;
    if (this.long.some((l) => l.percentOccurrences(text).length > 0)) return true;
    return matches(this.percentPatterns(), text);
  }

  /** Every spelling of every value with HTML references (src/vault/referencePattern.ts), longest value first. */
  private referencePatterns(): RegExp {
    if (!this.referenceRegex) {
      const all = [...this.referenceSources.entries()]
        .sort((a, b) => b[0].length - a[0].length)
        .map(([, p]) => p);
      this.referenceRegex = compiledToMachineCode(new RegExp(all.length > 0 ? all.join("|") : NOTHING, "g"));
    }
    return this.referenceRegex;
  }

  /** Every percent-encoding of every value (src/vault/percentSpelling.ts), longest value first. */
  private percentPatterns(): RegExp {
    if (!this.percentRegex) {
      const all = [...this.percent.entries()].sort((a, b) => b[0].length - a[0].length).map(([, p]) => p);
      this.percentRegex = new RegExp(all.length > 0 ? all.join("|") : NOTHING, "g");
    }
    return this.percentRegex;
  }

  /** One alternation of every form, longest first (so a longer form wins where two start). */
  private regex(): RegExp {
    if (!this.pattern) {
      const all = [...this.forms.keys()].sort((a, b) => b.length - a.length).map(escapeRegExp);
      this.pattern = new RegExp(all.length > 0 ? all.join("|") : NOTHING, "g");
    }
    return this.pattern;
  }
}

/** The pieces of the released values scrubPieces looks for, and their rolling hashes. */
interface PieceIndex {
  /** how many distinct pieces */
  size: number;
  /**
   * An open-addressing table (a Map's lookup costs several times the rest of the search): the
   * hashes of the pieces (-1: an empty slot), and in the same slot the pieces of that hash, each
   * with the scope of the first value released that has it.
   */
  keys: Int32Array;
  slots: { piece: string; scope: string }[][];
  mask: number;
  /** HASH_BASE ** MIN_FRAGMENT, as a 32-bit integer: what the character leaving the window weighed */
  top: number;
}

const HASH_BASE = 0x01000193;
/** the hashes are cut to 30 bits: never -1, the table's empty slot */
const HASH_MASK = 0x3fffffff;

function pieceIndexOf(values: Map<string, string>, shown: readonly string[]): PieceIndex {
  const pieces = new Map<string, string>();
  for (const [value, scope] of values)
    for (let i = 0; i + MIN_FRAGMENT <= value.length; i++) {
      const piece = value.slice(i, i + MIN_FRAGMENT);
      if (!pieces.has(piece) && !shown.some((t) => t.includes(piece))) pieces.set(piece, scope);
    }
  // at most half full: a lookup that misses ends within a few slots
  let size = 16;
  while (size < 2 * pieces.size) size *= 2;
  const mask = size - 1;
  const keys = new Int32Array(size).fill(-1);
  const slots: { piece: string; scope: string }[][] = [];
  for (const [piece, scope] of pieces) {
    let h = 0;
    for (let i = 0; i < piece.length; i++) h = (Math.imul(h, HASH_BASE) + piece.charCodeAt(i)) | 0;
    const key = h & HASH_MASK;
    let slot = key & mask;
    while (keys[slot] !== key && keys[slot] !== -1) slot = (slot + 1) & mask;
    if (keys[slot] === key) slots[slot]!.push({ piece, scope });
    else {
      keys[slot] = key;
      slots[slot] = [{ piece, scope }];
    }
  }
  let top = 1;
  for (let i = 0; i < MIN_FRAGMENT; i++) top = Math.imul(top, HASH_BASE);
  return { size: pieces.size, keys, slots, mask, top };
}

/** Whether `text` has `piece` at `at`, compared in place. */
function startsAt(text: string, at: number, piece: string): boolean {
  for (let i = 0; i < piece.length; i++) if (text.charCodeAt(at + i) !== piece.charCodeAt(i)) return false;
  return true;
}

/** A marker written in a text (start, end) and the stretch of the text scrubbed it stands for (from, to). */
interface Placed extends Span {
  from: number;
  to: number;
}

/**
 * Where position `p` of the text written so far (`placed`: the markers in it, in order) lies in
 * the text scrubbed: a position inside a marker is where what it stands for starts (`side`
 * "start") or ends ("end"); any other, as far past the marker before it as it is in the text.
 */
function sourceOf(placed: readonly Placed[], p: number, side: "start" | "end"): number {
  let lo = 0;
  let hi = placed.length; // placed[0..lo) start before p (or at it, for "start"), placed[hi..) do not
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const s = placed[mid]!.start;
    if (s < p || (side === "start" && s === p)) lo = mid + 1;
    else hi = mid;
  }
  const e = placed[lo - 1];
  if (!e) return p;
  if (p < e.end || (side === "end" && p === e.end)) return side === "start" ? e.from : e.to;
  return e.to + (p - e.end);
}

/**
 * `placed` (markers written in the text so far) after the stretch of it from `base` had the
 * spans `written` stands for (its from, to: positions in the stretch) replaced by the markers
 * `written` (positions in the new stretch): the markers those spans took are gone, each new one
 * stands for what the stretch it replaced stood for, and the markers after them move by what was
 * added before. One pass over the markers of the stretch, which are the last of `placed`.
 */
function replacePlaced(placed: Placed[], base: number, written: readonly Placed[]): void {
  // what each span stands for, from where its start and its end stood
  const sources = written.map((w) => [
    sourceOf(placed, base + w.from, "start"),
    sourceOf(placed, base + w.to, "end"),
  ]);
  // the markers ending in the stretch, or past its start (one the stretch starts inside)
  let first = placed.length;
  while (first > 0 && placed[first - 1]!.end > base) first--;
  const tail = placed.splice(first);
  let t = 0;
  let growth = 0;
  const moved = (e: Placed) => {
    e.start += growth;
    e.end += growth;
    placed.push(e);
  };
  written.forEach((w, i) => {
    for (; t < tail.length && tail[t]!.end - base <= w.from; t++) moved(tail[t]!);
    // the markers the span took
    while (t < tail.length && tail[t]!.start - base < w.to) t++;
    placed.push({
      start: base + w.start,
      end: base + w.end,
      scope: w.scope,
      from: sources[i]![0]!,
      to: sources[i]![1]!,
    });
    growth += w.end - w.start - (w.to - w.from);
  });
  for (; t < tail.length; t++) moved(tail[t]!);
}

/** `text` with each of `spans` (in order, apart) replaced by its scope's marker; throws past MAX_GROWTH. */
function replacedSpans(text: string, spans: Span[]): string {
  return replacedAt(text, spans, false).out;
}

/** replacedSpans, and (`places`) where each marker it wrote lies in what it gives (in order, apart). */
function replacedAt(text: string, spans: Span[], places: boolean): { out: string; written: Placed[] } {
  if (spans.length === 0) return { out: text, written: [] };
  const out: string[] = [];
  const written: Placed[] = [];
  let from = 0;
  let growth = 0;
  let at = 0;
  for (const s of spans) {
    const marker = redactionMarker(s.scope);
    growth += marker.length - (s.end - s.start);
    out.push(text.slice(from, s.start), marker);
    if (places) {
      at += s.start - from;
      written.push({ start: at, end: at + marker.length, scope: s.scope, from: s.start, to: s.end });
      at += marker.length;
    }
    from = s.end;
  }
  tooLong(growth);
  out.push(text.slice(from));
  return { out: out.join(""), written };
}

/**
 * Characters settledAround may search per character of the text (plus SETTLE_SLACK) before it
 * throws: a round over the stretch around one marker (twice the reach of the longest form, and
 * the marker) for each character a marker takes, for forms of a few characters.
 */
const SETTLE_WORK = 64;
const SETTLE_SLACK = 1 << 20;
/**
 * The most characters one backslash of a text can make what it spells shorter than the text:
 * `\uXXXX` is one character (5 fewer), and read again, a backslash it spells starts another.
 */
const ESCAPE_SHRINK = 10;
/** Characters past the longest form a stretch of settledAround reaches: an escape cut at its start reads otherwise. */
const SETTLE_MARGIN = 8;

/**
 * Text written in pieces, whose last characters can be taken back (settledAround): pieces are
 * kept as they are, so that taking a few characters back costs as many, not the whole text.
 */
class TextTail {
  private readonly pieces: string[] = [];
  length = 0;

  push(piece: string): void {
    if (piece === "") return;
    this.pieces.push(piece);
    this.length += piece.length;
  }

  /** The last `n` characters (fewer if there are not as many), taken off. */
  take(n: number): string {
    const taken: string[] = [];
    let left = n;
    while (left > 0 && this.pieces.length > 0) {
      const last = this.pieces.pop()!;
      if (last.length <= left) {
        taken.push(last);
        left -= last.length;
      } else {
        taken.push(last.slice(last.length - left));
        this.pieces.push(last.slice(0, last.length - left));
        left = 0;
      }
    }
    const out = taken.reverse().join("");
    this.length -= out.length;
    return out;
  }

  text(): string {
    return this.pieces.join("");
  }
}

/** Throws when scrubbing would grow a text by more than MAX_GROWTH characters. */
function tooLong(growth: number): void {
  if (growth > MAX_GROWTH)
    throw new RangeError(`scrubbing would add ${growth} characters of markers (at most ${MAX_GROWTH})`);
}

/**
 * Calls `on` for every match of the global `re` in `t`, overlapping ones too: after a match the
 * search goes on from the place after its start, not from its end as a global regex's does, so an
 * occurrence that starts inside an earlier one is found too. Costs nothing more where nothing
 * matches (the common case): each match is one more search from there. A value that repeats
 * itself (`aaaa…`) matches at every place of text that repeats it, each match read whole (1 MB of
 * "a" with a value of 200 "a" took 1.5 s): past MATCH_WORK characters matched per character of
 * `t` (plus MATCH_SLACK) it stops and returns false, and its caller searches otherwise
 * (ReleasedValues.matchesOf); true when every match was given.
 */
function eachMatch(re: RegExp, t: string, on: (start: number, end: number, m: string) => void): boolean {
  let budget = MATCH_WORK * t.length + MATCH_SLACK;
  re.lastIndex = 0;
  for (let m = re.exec(t); m !== null; m = re.exec(t)) {
    budget -= m[0].length;
    if (budget < 0) return false;
    on(m.index, m.index + m[0].length, m[0]);
    re.lastIndex = m.index + 1;
  }
  return true;
}

/** Characters eachMatch may read in matches per character of the text (plus MATCH_SLACK). */
const MATCH_WORK = 2;
const MATCH_SLACK = 4096;

/** `found` (in order of start) with the spans that overlap joined into one (the first one's scope). */
function joined(found: Span[]): Span[] {
  const spans: Span[] = [];
  for (const f of found) {
    const last = spans.at(-1);
    if (last && f.start < last.end) last.end = Math.max(last.end, f.end);
    else spans.push({ ...f });
  }
  return spans;
}

const NUMBER_CHAR = /[0-9eE.+-]/;

/**
 * A JSON line with each of `spans` replaced by its marker, as a JSON string (in quotes) and
 * widened to the whole number where the span lies in a bare number (outside every string, only
 * number characters); spans inside strings are replaced as replacedSpans does. Null when no span
 * lies in a number.
 */
function quotedInNumbers(line: string, spans: Span[]): string | null {
  // whether each position is inside a string
  const inString = new Uint8Array(line.length);
  for (let i = 0, open = false; i < line.length; i++) {
    const c = line[i];
    if (open) {
      inString[i] = 1;
      if (c === "\\") {
        inString[i + 1] = 1;
        i++;
      } else if (c === '"') open = false;
    } else if (c === '"') {
      inString[i] = 1;
      open = true;
    }
  }
  const out: string[] = [];
  let from = 0;
  let any = false;
  let growth = 0;
  for (const s of spans) {
    if (s.end <= from) continue; // inside a number already widened and replaced
    if (s.start < from) return null; // across its end: left to the rewrite
    let { start, end } = s;
    let quote = inString[start] === 0 && start < end;
    for (let i = start; quote && i < end; i++) quote = inString[i] === 0 && NUMBER_CHAR.test(line[i]!);
    if (quote) {
      while (start > from && NUMBER_CHAR.test(line[start - 1]!) && inString[start - 1] === 0) start--;
      while (end < line.length && NUMBER_CHAR.test(line[end]!) && inString[end] === 0) end++;
      any = true;
    }
    const marker = quote ? `"${redactionMarker(s.scope)}"` : redactionMarker(s.scope);
    growth += marker.length - (end - start);
    out.push(line.slice(from, start), marker);
    from = end;
  }
  tooLong(growth);
  out.push(line.slice(from));
  return any ? out.join("") : null;
}

/** The longest a message's key "id" is written: `"\u0069\u0064"`, quotes included. */
const ID_KEY_LONGEST = 14;

/**
 * Where the key "id" of a message is written in `line` (JSON text): of the object, or of each
 * object of a batch; as [start, end) of the key's string, quotes included.
 */
function idKeys(line: string): [number, number][] {
  const out: [number, number][] = [];
  // the containers open at each place: "{" expecting a key, "}" expecting a value, "["
  const open: string[] = [];
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (c === '"') {
      const start = i;
      for (i++; i < line.length && line[i] !== '"'; i++) if (line[i] === "\\") i++;
      if (open.at(-1) !== "{") continue; // a string, not a key
      open[open.length - 1] = "}";
      const ofMessage = open.length === 1 || (open.length === 2 && open[0] === "[");
      const key = line.slice(start, i + 1);
      // a key may spell "id" with escapes ("\u0069d")
      if (ofMessage && (key === '"id"' || (key.includes("\\") && JSON.parse(key) === "id")))
        out.push([start, i + 1]);
    } else if (c === "{" || c === "[") open.push(c);
    else if (c === "}" || c === "]") open.pop();
    else if (c === "," && open.at(-1) === "}") open[open.length - 1] = "{";
  }
  return out;
}

/** The last of `spans` (in order, apart) that starts before `at`, if any. */
function lastStartingBefore(spans: readonly Span[], at: number): Span | undefined {
  let lo = 0;
  let hi = spans.length; // spans[0..lo) start before `at`, spans[hi..) do not
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (spans[mid]!.start < at) lo = mid + 1;
    else hi = mid;
  }
  return lo > 0 ? spans[lo - 1] : undefined;
}

/**
 * A text long enough that V8 compiles a regex searching it straight to machine code (its tier-up
 * for subjects of 1,000 characters or more), of two-byte characters (as text outside Latin-1 is).
 */
const LONG_SUBJECT = "\u0100".repeat(1000);

/**
 * `re`, searched once in LONG_SUBJECT so that V8 compiles it to machine code now. Otherwise V8
 * compiles a regex to bytecode for its first search and to machine code for its second, and for
 * the spelling of values with references (some kilobytes of source per value) the bytecode cost
 * the most: about 2.5 µs of CPU per character of source, most of it the bytecode's peephole pass,
 * against 0.7 for the machine code. The scrubber searches with it again on every line holding a
 * reference to a value's character, so the machine code is compiled either way; what is saved is
 * the bytecode, once per set of released values (docs/performance-history.md). Only the time
 * depends on V8 doing so: the search's result is dropped, and `lastIndex` put back.
 */
function compiledToMachineCode(re: RegExp): RegExp {
  re.lastIndex = 0;
  re.exec(LONG_SUBJECT);
  re.lastIndex = 0;
  return re;
}

function matches(re: RegExp, text: string): boolean {
  re.lastIndex = 0;
  return re.test(text);
}

/** Whether cutting `text` at `at` would split a surrogate pair. */
function splitsPair(text: string, at: number): boolean {
  const before = text.charCodeAt(at - 1);
  const after = text.charCodeAt(at);
  return before >= 0xd800 && before <= 0xdbff && after >= 0xdc00 && after <= 0xdfff;
}

function isId(v: unknown): v is Id {
  return typeof v === "string" || typeof v === "number";
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Whether two parsed messages (or batches) carry the same ids, in the same places. */
function sameIds(a: unknown, b: unknown): boolean {
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    return a.every((m, i) => sameIds(m, b[i]));
  }
  if (!isObject(a) || !isObject(b)) return isObject(a) === isObject(b);
  return Object.hasOwn(a, "id") === Object.hasOwn(b, "id") && a.id === b.id;
}
