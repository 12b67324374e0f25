/**
 * Text cut at a length. Lengths are in UTF-16 units (what String#length and HTML's maxlength
 * count), and a cut between the two halves of a surrogate pair leaves a lone surrogate: not a
 * character, written as U+FFFD or refused by whatever encodes it next (a signed decision, the
 * audit's canonical JSON, a terminal). Every cut of text at a length goes through cutText.
 */

const LONE_SURROGATES = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** `s` cut to at most `max` UTF-16 units, never between the two halves of a surrogate pair. */
export function cutText(s: string, max: number): string {
  if (s.length <= max) return s;
  const last = s.charCodeAt(max - 1);
  return s.slice(0, last >= 0xd800 && last <= 0xdbff ? max - 1 : max);
}

/** `s` with every lone surrogate (one a JSON body can carry: `"\ud83d"`) replaced by U+FFFD. */
export function wellFormed(s: string): string {
  return s.replace(LONE_SURROGATES, "\uFFFD");
}

/** The longest reason a decision made on the console keeps (its form's maxlength). */
export const MAX_REASON = 500;

/** A denial's reason as typed on the console: trimmed, lone surrogates replaced, cut at MAX_REASON. */
export function decisionReason(given: string): string {
  return cutText(wellFormed(given.trim()), MAX_REASON);
}

/**
 * `text` cut to 80 characters (an ellipsis says so), not quoted: for JSON text, an id as written.
 * What a peer wrote (an id, a method, a name) is repeated in a log line through it: a peer's
 * thousands of characters would flood the developer's terminal and push the line's point out of
 * view.
 */
export function cutShort(text: string): string {
  return text.length > 80 ? `${cutText(text, 80)}…` : text;
}
