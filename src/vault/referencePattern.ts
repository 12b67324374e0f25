/**
 * Every spelling of a value with HTML references as one regex, as src/vault/percentSpelling.ts
 * has every percent spelling: each character as itself or as any reference to it (decimal or hex
 * in either case with leading zeros, with its `;` or without, any name HTML defines for it, a
 * legacy name without `;`), the reference's `&` itself written with references up to three times
 * (`&amp;#43;`, `&#38;#x2b;`: four readings in all, REFERENCE_READINGS), or its UTF-8 bytes
 * URL-escaped, escaped again up to REFERENCE_READINGS times, the `%` itself or a reference
 * (`%2561`, `&#37;2561`); and two adjacent characters that a name of two stands for as that name
 * too (`fj` as `&fjlig;`).
 *
 * Why, beside the readings of src/vault/referenceSpelling.ts: those read the text as a whole, and
 * text before a value can end in an unfinished reference that takes the value's first character
 * at some reading (`&amp` before `;&#97;…` reads `&aaaa`, the value's `;` taken into `&amp;`; `&#`
 * before `&#49&amp;#97;…` reads `&#1` at the second reading, the value's `1` taken), and so can a
 * value that holds the start of a reference itself (`aa&#0` before `&#97;`). A reader of numeric
 * references alone, or one that reads once, or a person, still reads the value there. Searching
 * the spelling itself finds it wherever it is written, whatever comes before it, and whatever
 * after it finishes a reference its end starts (`aaaa&` before `#xab`). URL escapes are mixed in
 * too: before, a value with some characters URL-escaped beside references after such text
 * (`&amp` before `;%2561a&#97;…`) or before it was not found; `\u` escapes are read before the
 * spelling is searched (src/vault/scrub.ts), and a space written `+` is not looked for here.
 */

import { allNames, allPairNames, LEGACY_NAMES } from "./htmlNames.js";
import { REFERENCE_READINGS } from "./htmlReferences.js";
import { escapeRegExp } from "./percentSpelling.js";

/**
 * What a reference's `&` may be written as, up to three times more (a reading each).
 *
 * The empty alternative last never matches: an iteration of a `{0,n}` loop that reads nothing
 * fails (ECMAScript's RepeatMatcher), so the loop tries the same spellings in the same order as
 * `(?:…){0,3}` and finds the same matches. It is there for V8: a loop of at most three whose body
 * cannot be empty it unrolls into nested copies, and this group sits in every character's pattern
 * (once more for each further UTF-8 byte): the first search after three 40-character ASCII keys
 * were released, which compiles the regex, took 0.5-0.7 s of CPU (a loaded 2-core machine), a
 * stall of the gateway at the first line holding a reference to one of their characters; with a
 * body that may be empty V8 keeps the loop, and it takes 70-100 ms
 * (docs/performance-history.md). Same matches: test/vault/reference-pattern-loop.property.test.ts.
 */
export const AMPERSAND = "&(?:(?:amp|AMP);?|#0*38;?|#[xX]0*26;?|){0,3}";

/**
 * What a URL escape's `%` may be written as: itself, or any reference to it (`&#37;`, `&percnt;`,
 * HTML's one name for it), its `&` written with references too.
 */
const PERCENT_BODY = "(?:#0*37;?|#[xX]0*25;?|percnt;)";
const PERCENT = `(?:%|${AMPERSAND}${PERCENT_BODY})`;

let namesOf: Map<number, string[]> | null = null;
/** the names of two characters, by the two (`fj`: `fjlig`) */
let pairNamesOf: Map<string, string[]> | null = null;

/**
 * A regex source matching `value` with each character itself, any reference to it, or URL-escaped,
 * and each two that a name of two characters stands for also as that name. (No character is the
 * first of one such name and the second of another, src/vault/htmlNames.ts, so the pairs of a
 * value never overlap and each is one alternation.)
 */
export function referencePattern(value: string): string {
  if (namesOf === null || pairNamesOf === null) {
    namesOf = new Map();
    for (const [name, cp] of allNames()) namesOf.set(cp, [...(namesOf.get(cp) ?? []), name]);
    pairNamesOf = new Map();
    for (const [name, [a, b]] of allPairNames()) {
      const two = String.fromCodePoint(a, b);
      pairNamesOf.set(two, [...(pairNamesOf.get(two) ?? []), name]);
    }
  }
  const chars = [...value];
  let source = "";
  for (let i = 0; i < chars.length; i++) {
    const pair = i + 1 < chars.length ? pairNamesOf.get(chars[i]! + chars[i + 1]!) : undefined;
    if (pair !== undefined) {
      source += `(?:${charPattern(chars[i]!)}${charPattern(chars[i + 1]!)}|${AMPERSAND}(?:${pair.join("|")});)`;
      i++;
    } else source += charPattern(chars[i]!);
  }
  return source;
}

/** A regex source matching the character `c` itself, any reference to it, or URL-escaped. */
function charPattern(c: string): string {
  const cp = c.codePointAt(0)!;
  const hex = [...cp.toString(16)].map((d) => (/[a-f]/.test(d) ? `[${d}${d.toUpperCase()}]` : d)).join("");
  const bodies = [`#0*${cp};?`, `#[xX]0*${hex};?`];
  const names = namesOf?.get(cp) ?? [];
  if (names.length > 0) bodies.push(`(?:${names.join("|")});`);
  const legacy = names.filter((n) => LEGACY_NAMES.includes(n));
  if (legacy.length > 0) bodies.push(`(?:${legacy.join("|")})`);
  // and a URL escape of each of its UTF-8 bytes (a lone surrogate has none of its own), the
  // first one's `%` itself or a reference (one `&` for both kinds of reference: each way of
  // reading a text's `&` is tried once, not once for each)
  let url = "";
  if (!isLoneSurrogate(c)) {
    const [first, ...rest] = [...Buffer.from(c, "utf8")].map(urlEscaped);
    url = `${first}${rest.map((b) => PERCENT + b).join("")}`;
    bodies.push(`${PERCENT_BODY}${url}`);
    url = `|%${url}`;
  }
  return `(?:${escapeRegExp(c)}${url}|${AMPERSAND}(?:${bodies.join("|")}))`;
}

/**
 * A URL escape of one byte after its `%`: escaped again up to REFERENCE_READINGS times (`%252F`),
 * the hex in either case; what the readings of src/vault/referenceSpelling.ts and the search of
 * percent spellings read as the byte.
 */
function urlEscaped(b: number): string {
  const hex = [...b.toString(16).padStart(2, "0")].map((d) =>
    /[a-f]/.test(d) ? `[${d}${d.toUpperCase()}]` : d,
  );
  return `(?:25){0,${REFERENCE_READINGS}}${hex.join("")}`;
}

function isLoneSurrogate(c: string): boolean {
  const code = c.charCodeAt(0);
  return c.length === 1 && code >= 0xd800 && code <= 0xdfff;
}
