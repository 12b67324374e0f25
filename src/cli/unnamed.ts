/**
 * A name given on the command line that names nothing (a secret to `vault rm`, a label to
 * `catalog` or `egress`) is not repeated in the sentence that refuses it: a word typed where a
 * name belongs is often a value (a token pasted in the wrong place looks like a name), and
 * stderr ends up in scrollback, CI logs and an agent's transcript. What the sentence names
 * instead are the names that do exist here, which is what the person needs to fix it.
 */
import { safeText } from "../catalog/text.js";

export const NOT_REPEATED = "the name given is not repeated, in case it is a secret typed in the wrong place";

/** `label: a, b, c` (at most `max`, then how many more), terminal-safe; `none` when there are none. */
export function namesHere(label: string, names: readonly string[], none: string, max = 12): string {
  if (names.length === 0) return none;
  const shown = names.slice(0, max).map((n) => safeText(n));
  const more = names.length > max ? ` and ${names.length - max} more` : "";
  return `${label}: ${shown.join(", ")}${more}`;
}
