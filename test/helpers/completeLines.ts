// Text a child is still writing, read as lines.
//
// A pipe hands output over in chunks, and a chunk can end inside a line: a test that splits what
// has come so far on "\n" sees a last line cut short (a prefix that startsWith() accepts, a pid or
// port cut after its first digits, JSON cut right after a nested `}` that looks whole). Only the
// text up to the last newline is lines; the rest is still being written.

/** `text` up to and with its last newline: the lines written whole, as text a pattern can scan. */
export function wholeLines(text: string): string {
  return text.slice(0, text.lastIndexOf("\n") + 1);
}

/** The lines of `text` that a newline has ended, without their "\n"; the unended tail is left out. */
export function completeLines(text: string): string[] {
  const ended = wholeLines(text);
  return ended === "" ? [] : ended.slice(0, -1).split("\n");
}

/** The non-blank lines of `text` that a newline has ended, each parsed as JSON. */
export function completeJsonLines<T>(text: string): T[] {
  return completeLines(text)
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l) as T);
}
