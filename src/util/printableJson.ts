import { markHidden } from "../catalog/text.js";

/**
 * JSON text for a terminal: what JSON.stringify writes, with every character a terminal would act
 * on or that a reader cannot see (markHidden's: C1 controls, bidi overrides, zero-width and tag
 * characters) written as its `\uXXXX` escape, which every JSON reader decodes back to the same
 * string. JSON.stringify escapes only C0 controls, so a path or a name holding `\u009b` (a C1
 * CSI) or a right-to-left override went to the terminal as it was. The newlines of the
 * indentation are the only raw ones left: inside a string, JSON.stringify has escaped them.
 */
export function printableJson(value: unknown, indent = 2): string {
  return markHidden(JSON.stringify(value, null, indent), (cp) => (cp === 0x0a ? "\n" : jsonEscape(cp)));
}

/** `\u0085`; beyond the BMP, its UTF-16 surrogate pair, as JSON spells such a character. */
function jsonEscape(cp: number): string {
  const units = String.fromCodePoint(cp);
  return [...Array(units.length).keys()]
    .map((i) => `\\u${units.charCodeAt(i).toString(16).padStart(4, "0")}`)
    .join("");
}
