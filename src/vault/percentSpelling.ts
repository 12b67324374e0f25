/**
 * Every percent-encoding of a value as one regex. URL encoders differ in which characters they
 * leave as they are: encodeURIComponent escapes "/", Python's `quote()` keeps it, Go's
 * `PathEscape` keeps "+" and "=", form encoding writes a space as "+"; and the hex digits may be
 * upper- or lower-case. Listing each encoder's output misses the next encoder, so the pattern lets
 * each character be itself or its UTF-8 bytes as `%XX` (either case of each digit), and a space
 * also "+".
 */

/** A regex source matching `value` with each character written as itself or percent-encoded, and its longest match. */
export function percentPattern(value: string): { source: string; longest: number } {
  let source = "";
  let longest = 0;
  for (const c of value) {
    const bytes = Buffer.from(c, "utf8");
    const ways = [escapeRegExp(c)];
    // a lone surrogate has no UTF-8 bytes of its own (it would be encoded as U+FFFD); "%" is read
    // as "%25" first, the longer reading, as itself only when that does not complete
    if (!isLoneSurrogate(c)) ways[c === "%" ? "unshift" : "push"]([...bytes].map(percentByte).join(""));
    if (c === " ") ways.push("\\+");
    source += `(?:${ways.join("|")})`;
    longest += Math.max(c.length, 3 * bytes.length);
  }
  return { source, longest };
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
