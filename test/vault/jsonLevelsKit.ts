// What the property tests of values inside levels of JSON text share (scrub-three-levels,
// scrub-deep-escapes, scrub-percent-kept-escaped): a value holding a character JSON.stringify
// escapes, and the reading of each level of a message's string back with JSON.parse.
import fc from "fast-check";

/** The characters JSON.stringify escapes (each level doubles their backslashes). */
export const JSON_ESCAPED = fc.constantFrom('"', "\\", "\n", "\t", "\u0001", "\u001f");

/**
 * A value with at least one character JSON.stringify escapes, between characters of `plain` (a
 * value that is only JSON's syntax, `"` alone, is in every message as its syntax).
 */
export function valueWithEscaped(plain: fc.Arbitrary<string>): fc.Arbitrary<string> {
  return fc
    .tuple(
      fc.string({ unit: plain, minLength: 2, maxLength: 10 }),
      JSON_ESCAPED,
      fc.string({ unit: fc.oneof(plain, JSON_ESCAPED), maxLength: 10 }),
      plain,
    )
    .map(([a, e, b, z]) => a + e + b + z);
}

/**
 * Each level of `line`'s `result.text` (a message, or a stderr line of one), read with JSON.parse
 * as deep as it goes, up to `levels`: the string, then the `text` of the JSON in it, and so on.
 */
export function levelsOf(line: string, levels: number): string[] {
  let t: unknown = (JSON.parse(line) as { result: { text: string } }).result.text;
  const texts: string[] = [];
  for (let k = 1; typeof t === "string"; k++) {
    texts.push(t);
    if (k >= levels) break;
    try {
      t = (JSON.parse(t) as { text: unknown }).text;
    } catch {
      break; // a marker where JSON syntax was: no deeper level to read
    }
  }
  return texts;
}

/** A message whose `result.text` holds `text` inside `levels` JSON strings: levels - 1 of JSON text, the message's last. */
export function inLevels(text: string, levels: number): string {
  let inner = text;
  for (let k = 1; k < levels; k++) inner = JSON.stringify({ text: inner });
  return JSON.stringify({ jsonrpc: "2.0", id: 1, result: { text: inner } });
}
