/**
 * HTML character references and URL escapes escaped again, read back, with where each character
 * came from (as src/vault/jsonSpelling.ts reads JSON escapes). An HTML template writes a
 * character as a reference (`&#43;`, `&#x2B;`, `&plus;`: src/vault/htmlReferences.ts); a URL
 * carried in another URL's query is escaped twice (`%252F`: its `%` written `%25`). Scrubbing
 * (src/vault/scrub.ts) searches the text these spell as it searches the text itself: a value with
 * a character written as a reference is the value, and `%252F` read once is `%2F`, which the
 * search of percent spellings reads as `/`.
 *
 * Read: each reference (src/vault/htmlReferences.ts, every name HTML defines: `&eacute;` too,
 * src/vault/htmlNames.ts), as the character it stands for, or the two a name of two stands for
 * (`&fjlig;` as "fj", `&nvlt;` as `<` and U+20D2, as an HTML reader decodes them); each `%25`
 * before two hex digits (a URL escape escaped again: `%252F`, and `%2525` for `%`) as `%`. One
 * reading is one pass over the text; what it gives is read again while a reading reads something,
 * up to REFERENCE_READINGS readings (eachReading): a reference written with references (`&amp;#43;`)
 * reads `&#43;` and then `+`, a URL escape escaped four times (`%2525252F`) `%2F` in three, which
 * the search of percent spellings reads as `/`, and the two mixed (`&#37;252F`) alike.
 */

import { type Bare, eachNestedReference, REFERENCE_READINGS, referenceAt } from "./htmlReferences.js";
import type { Decoded } from "./jsonSpelling.js";

/**
 * Whether `text` holds a URL escape escaped again, or a reference to a character that `wanted`
 * marks (by UTF-16 code unit; the first of a surrogate pair; either of a name of two characters),
 * at any of its readings (a
 * reference written with references, `&amp;#43;`, as `&` and as `+`): only then is it read
 * (readReferences). A form holds only characters of its own, so a reference to any other (an
 * HTML page's `&amp;`, `&lt;`, `&#169;` beside values without those) can be in none, and a text
 * whose references are all such is not read.
 */
export function mayHoldReferences(text: string, wanted: Uint8Array): boolean {
  for (let p = text.indexOf("%25"); p !== -1; p = text.indexOf("%25", p + 1))
    if (twiceEscapedAt(text, p)) return true;
  let found = false;
  const want = (char: number, _end: number, second: number) => {
    found ||=
      wanted[char > 0xffff ? 0xd800 + ((char - 0x10000) >> 10) : char] === 1 ||
      (second >= 0 && wanted[second] === 1);
  };
  for (let at = text.indexOf("&"); at !== -1; at = text.indexOf("&", at + 1)) {
    // (most `&` of a URL's query are followed by neither `#` nor a name's two letters: `&y=2`)
    const next = text.charCodeAt(at + 1);
    if (next !== 0x23 && !(isLetter(next) && isLetter(text.charCodeAt(at + 2)))) continue;
    eachNestedReference(text, at, want, "all");
    if (found) return true;
  }
  return false;
}

/**
 * Each reading of `input` (readReferences, with places: mapped to `input`), one after another,
 * while one reads something and its text may hold more (mayHoldReferences), up to
 * REFERENCE_READINGS: `on` gets each, and stops them by returning true. Twice over: as HTML's
 * parser reads references, and then, where the text holds one without its `;`, as a stricter
 * reader does, only those with it. Each reading can take a character the other leaves: text
 * before a value can end in a reference without `;` that the value's first character lengthens
 * (`&#x` before `a&#97;…` reads `&#xa`, a newline, then `&#97;`; a reader of `;` references alone
 * shows `&#xaa…`, the value whole), so neither reading alone is enough. And a third time, where
 * the first read one, as a reader of legacy names without `;` (`&amp`) but of numbers only with
 * it: text before a value ending `&amp#` reads `&#` at the first reading, and the value's first
 * digit then lengthens that into a number without `;` at the next (`&amp#9&amp#x26;#38;#97;…` is
 * `&#9aaaa` to such a reader, and neither of the other two shows `9aaaa`).
 */
export function eachReading(
  input: string,
  wanted: Uint8Array,
  places: boolean,
  on: (r: Decoded & { escaped: number[] }) => boolean,
): void {
  let bareRead = false; // whether the first chain read a reference without `;`
  for (const bare of [true, false, "names"] as const) {
    if (bare !== true && !bareRead) return;
    let text = input;
    let source: Int32Array | null = null;
    for (let k = 0; k < REFERENCE_READINGS; k++) {
      if (!mayHoldReferences(text, wanted)) break;
      const r = readReferences(text, places, bare);
      if (r.escaped.length === 0) break;
      bareRead ||= r.bare;
      if (places && source !== null) r.source = throughSource(r.source, source);
      if (on(r)) return;
      text = r.text;
      source = places ? r.source : null;
    }
  }
}

/** Whether the `%25` at `p` is followed by two hex digits (a URL escape escaped again). */
function twiceEscapedAt(text: string, p: number): boolean {
  return isHex(text.charCodeAt(p + 3)) && isHex(text.charCodeAt(p + 4));
}

function isLetter(c: number): boolean {
  return (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);
}

function isHex(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66);
}

/**
 * `input` with every reference and every `%25` read, and where each character came from (with
 * `places`; otherwise `source` is left empty); and (`escaped`) where in the text read each
 * character read from an escape is, in order. References without their `;` too, unless `bare`
 * is false; and (`bare`) whether one was read.
 */
export function readReferences(
  input: string,
  places = true,
  bare: Bare = true,
): Decoded & { escaped: number[]; bare: boolean } {
  const parts: string[] = [];
  const escaped: number[] = [];
  // (what is read is never longer than what was written)
  const source = new Int32Array(places ? input.length + 1 : 0);
  let n = 0; // characters read so far
  let from = 0; // the start of the plain run not yet copied
  let at = input.indexOf("&");
  let p = input.indexOf("%25");
  let bareRead = false; // whether a reference without its `;` was read
  while (at !== -1 || p !== -1) {
    // the escape read next: a reference at `at`, or a `%25` at `p`
    let start: number;
    let char: string;
    let end: number;
    if (p === -1 || (at !== -1 && at < p)) {
      const ref = referenceAt(input, at, bare, "all");
      if (ref === null) {
        at = input.indexOf("&", at + 1);
        continue;
      }
      start = at;
      // (a name of two characters reads both: `&fjlig;`, "fj"; the second is never astral)
      char = ref.second < 0 ? String.fromCodePoint(ref.char) : String.fromCodePoint(ref.char, ref.second);
      end = ref.end;
      bareRead ||= input.charCodeAt(end - 1) !== 0x3b;
    } else {
      if (!twiceEscapedAt(input, p)) {
        p = input.indexOf("%25", p + 1);
        continue;
      }
      start = p;
      char = "%";
      end = p + 3;
    }
    parts.push(input.slice(from, start), char);
    if (places) {
      for (let k = from; k < start; k++) source[n++] = k;
      for (let k = 0; k < char.length; k++) source[n + k] = start;
    } else n += start - from;
    escaped.push(n);
    n += char.length;
    from = end;
    // the next of each after what was read (a `%25` inside a reference is the reference's)
    if (at !== -1 && at < from) at = input.indexOf("&", from);
    if (p !== -1 && p < from) p = input.indexOf("%25", from);
  }
  parts.push(input.slice(from));
  if (!places) return { text: parts.join(""), source, escaped, bare: bareRead };
  for (let k = from; k < input.length; k++) source[n++] = k;
  source[n] = input.length;
  return { text: parts.join(""), source: source.subarray(0, n + 1), escaped, bare: bareRead };
}

/** `inner` (places in a text read from another) mapped through `outer` (places in that other). */
export function throughSource(inner: Int32Array, outer: ArrayLike<number>): Int32Array {
  const out = new Int32Array(inner.length);
  for (let i = 0; i < inner.length; i++) out[i] = outer[inner[i]!]!;
  return out;
}
