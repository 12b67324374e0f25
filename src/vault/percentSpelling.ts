/**
 * Every percent-encoding of a value as one regex. URL encoders differ in which characters they
 * leave as they are: encodeURIComponent escapes "/", Python's `quote()` keeps it, Go's
 * `PathEscape` keeps "+" and "=", form encoding writes a space as "+"; and the hex digits may be
 * upper- or lower-case. Listing each encoder's output misses the next encoder, so the pattern lets
 * each character be itself or its UTF-8 bytes as `%XX` (either case of each digit), and a space
 * also "+". A character kept as itself that JSON.stringify escapes (`"`, `\`, a control) is
 * written escaped inside a JSON string, and more so at each level of JSON text inside one
 * (`\"`, `\\\"`…): it may be so written too (jsonLevels), up to `levels` levels. Before, `Zq7%22w"…`
 * (one `"` escaped, one kept) was caught on stderr, whose escapes are read, but not in a JSON
 * message as the server wrote it (`Zq7%22w\"…`), where a line with no `\u` is not read.
 */

/** A regex source matching `value` with each character written as itself or percent-encoded, and its longest match. */
export function percentPattern(value: string, levels = 0): { source: string; longest: number } {
  let source = "";
  let longest = 0;
  for (const c of value) {
    const bytes = Buffer.from(c, "utf8");
    const escaped = jsonLevels(c, levels);
    const ways = [escapeRegExp(c), ...escaped.map(escapeRegExp)];
    // a lone surrogate has no UTF-8 bytes of its own (it would be encoded as U+FFFD); "%" is read
    // as "%25" first, the longer reading, as itself only when that does not complete
    if (!isLoneSurrogate(c)) ways[c === "%" ? "unshift" : "push"]([...bytes].map(percentByte).join(""));
    if (c === " ") ways.push("\\+");
    source += `(?:${ways.join("|")})`;
    longest += Math.max(c.length, 3 * bytes.length, ...escaped.map((e) => e.length));
  }
  return { source, longest };
}

/**
 * `c` as JSON.stringify writes it inside a JSON string, and inside JSON text inside that, one
 * level after another up to `levels`: none for a character it writes as itself; each level
 * doubles the backslashes of one it escapes (`"`: `\"`, `\\\"`, …).
 */
export function jsonLevels(c: string, levels: number): string[] {
  const out: string[] = [];
  let s = c;
  for (let k = 0; k < levels; k++) {
    const next = JSON.stringify(s).slice(1, -1);
    if (next === s) break;
    out.push(next);
    s = next;
  }
  return out;
}

/** `%XX` for one byte, each hex letter in either case. */
function percentByte(b: number): string {
  const hex = b.toString(16).toUpperCase().padStart(2, "0");
  return `%${[...hex].map((d) => (/[A-F]/.test(d) ? `[${d}${d.toLowerCase()}]` : d)).join("")}`;
}

function isLoneSurrogate(c: string): boolean {
  const code = c.charCodeAt(0);
  return c.length === 1 && code >= 0xd800 && code <= 0xdfff;
}

export function escapeRegExp(s: string): string {
  return s.replace(/[\\^$.*+?()[\]{}|/]/g, "\\$&");
}
