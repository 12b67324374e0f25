/**
 * The elements of a JSON array as their sender wrote them. A server reached by URL may answer
 * with a batch (the 2025-03-26 revision allowed them); each of its messages goes on to the
 * gateway as its own text, never as `JSON.stringify` of the parsed element, which would respell
 * an id (`9007199254740993` becomes …992, `1e2` becomes 100, `1e400` becomes null) and so answer
 * or relay under another id than the server's. Each element is then read by the same checks as
 * any message (parseLine: the shared id check `isId`, the depth limit).
 */

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

/**
 * Each element's text, trimmed of JSON whitespace, in order. `text` must already have parsed
 * as a JSON array (this is a split, not a validation); null when it does not even look like one.
 */
export function elementTexts(text: string): string[] | null {
  let i = text.search(/\S/);
  if (i < 0 || text.charCodeAt(i) !== 0x5b /* [ */) return null;
  const out: string[] = [];
  let start = i + 1;
  let depth = 0;
  for (i = start; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      for (i++; i < text.length && text.charCodeAt(i) !== QUOTE; i++)
        if (text.charCodeAt(i) === BACKSLASH) i++;
      continue;
    }
    if (c === 0x7b || c === 0x5b) depth++;
    else if ((c === 0x7d || c === 0x5d) && depth > 0) depth--;
    else if (depth === 0 && (c === 0x2c /* , */ || c === 0x5d) /* ] */) {
      const element = text.slice(start, i).trim();
      if (element !== "") out.push(element);
      if (c === 0x5d) return out;
      start = i + 1;
    }
  }
  return null;
}
