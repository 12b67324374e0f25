import { markHidden } from "../catalog/text.js";

/**
 * A word (a path, a KEY=LABEL) as one word of a POSIX shell command printed for a human to paste:
 * as it is when nothing in it needs quoting, else in single quotes. A word holding a character a
 * terminal would act on or hide (a newline, an escape sequence, a bidi override: any of
 * `markHidden`'s) is never printed raw: it is written in the `$'…'` form bash and zsh read, each
 * such character as its escape (`$'/tmp/a\x1b[2Jb'`), so the line shows what the word is and
 * still pastes as that word.
 */
export function shellWord(s: string): string {
  // plain: not empty and no character outside the safe set (a search for one such character,
  // not a run over the word: a run loop keeps a backtracking entry per character when compiled
  // unoptimized, test/unit/regex-loops.test.ts)
  if (s !== "" && !/[^\w@%+=:,./-]/.test(s)) return s;
  // removing what is hidden changes the word only when it holds something hidden
  if (markHidden(s, () => "") === s) return `'${s.replace(/'/g, "'\\''")}'`;
  return `$'${markHidden(
    s.replace(/[\\']/g, (c) => `\\${c}`),
    ansiEscape,
  )}'`;
}

/** One character in `$'…'`: `\xHH` below 0x80, `\uHHHH` in the BMP, `\UHHHHHHHH` beyond. */
function ansiEscape(cp: number): string {
  const hex = cp.toString(16);
  if (cp < 0x80) return `\\x${hex.padStart(2, "0")}`;
  return cp > 0xffff ? `\\U${hex.padStart(8, "0")}` : `\\u${hex.padStart(4, "0")}`;
}
