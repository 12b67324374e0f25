/**
 * Where a credential taken as "the rest of the word" ends and the text's own punctuation starts:
 * shared by the free-text rules (text.ts) and URLs' queries (urlQueries.ts).
 */

/** Marks that end a sentence or a clause: `see https://h/?k=S.` — the `.` is not the key's. */
const SENTENCE_MARKS = ".,;:!?";

/** Closing brackets and what opens each. */
const OPENERS = new Map([
  [")", "("],
  ["]", "["],
  ["}", "{"],
  [">", "<"],
]);

/**
 * How many characters at the end of s[start, end), a credential that a rule took as "the rest of
 * the word" (a URL, a `name=value` pair's value, a bearer token, a JWT), are the text's
 * punctuation rather than the credential's, to be kept after REDACTED: at most one of
 * SENTENCE_MARKS and at most one closing bracket that closes nothing opened in s[start, end)
 * (`(see https://h/?k=S).`: `).`; but `https://h/wiki/A_(b)` keeps its `)`), in either order,
 * and only when the word ends there, at a space or the end of the text, perhaps after marks the
 * rule did not take (WORD_END: `?k=S.x&y` is the value `S.x`; `token=S!@x` keeps the `!`
 * hidden). At least one character is left to the credential. A credential that itself ends in
 * such characters shows those (two at most), never more. O(end - start).
 */
export function trailingPunctuation(s: string, start: number, end: number): number {
  WORD_END.lastIndex = end;
  if (!WORD_END.test(s)) return 0;
  let n = 0;
  let mark = false;
  let bracket = false;
  while (end - n - 1 > start) {
    const at = end - n - 1;
    const c = s[at]!;
    if (!mark && SENTENCE_MARKS.includes(c)) mark = true;
    else if (!bracket && OPENERS.has(c) && !closesOne(s, start, at, OPENERS.get(c)!, c)) bracket = true;
    else break;
    n++;
  }
  return n;
}

/**
 * Where a word ends: a space or the end of the text, perhaps after two more marks or brackets
 * that the rule did not take (`password=S),` reads the value `S)`: its `,` ends the sentence).
 */
const WORD_END = /[.,;:!?)\]}>'"]{0,2}(?:\s|$)/y;

/** Whether `close` at `at` closes an `open` of s[start, at). */
function closesOne(s: string, start: number, at: number, open: string, close: string): boolean {
  let depth = 0;
  for (let i = start; i < at; i++) {
    if (s[i] === open) depth++;
    else if (s[i] === close && depth > 0) depth--;
  }
  return depth > 0;
}
