/**
 * Where a value lies in a JSON message (`["params", "arguments", "xs", 1]`), printed for a refusal
 * or a log line. The keys are the peer's: a hostile one can be megabytes long or hold control
 * characters (a newline that starts a forged log line, an escape that repaints a terminal), so
 * every key over MAX_KEY_SHOWN characters is shortened with an ellipsis and its length, every
 * control character is escaped, and a path deeper than MAX_SEGMENTS_SHOWN shows its first and
 * last segments around a count of the rest. The printed path is never longer than MAX_PATH_TEXT.
 *
 * Two styles, one per reader:
 * - "field": the validator's style, for the guard's refusals to the client (`notify.when`,
 *   `pair[1]`; a key as it is, dotted): the empty path is "";
 * - "member": for the server's words in a log line or a refusal (`result.structuredContent.id`,
 *   `params.data[1]`, a key that is no identifier quoted in brackets: `["a b"]`): the empty path
 *   is "the top".
 */
import { cutText } from "./cut.js";

export type PathSegment = string | number;
export type PathStyle = "field" | "member";

/** A key longer than this (in UTF-16 code units) is shown cut to it: `abc… (70000 characters)`. */
export const MAX_KEY_SHOWN = 64;
/** At most this many segments are shown: the first and last halves, the rest counted between. */
export const MAX_SEGMENTS_SHOWN = 16;
/**
 * The longest printed path: MAX_SEGMENTS_SHOWN segments of at most a shortened key each, every
 * character of it escaped (`\u0000`: 6 characters), with its brackets, quotes and length, and the
 * count of the segments left out.
 */
export const MAX_PATH_TEXT = MAX_SEGMENTS_SHOWN * (MAX_KEY_SHOWN * 6 + 48) + 48;

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;
/** C0, DEL and C1 controls: JSON.stringify leaves DEL and C1 as they are. */
const CONTROL = /\p{Cc}/gu;

export function pathText(path: readonly PathSegment[], style: PathStyle): string {
  let shown: (PathSegment | { left: number })[] = [...path];
  if (path.length > MAX_SEGMENTS_SHOWN) {
    const half = MAX_SEGMENTS_SHOWN / 2;
    shown = [...path.slice(0, half), { left: path.length - 2 * half }, ...path.slice(-half)];
  }
  let out = "";
  for (const seg of shown) {
    if (typeof seg === "number") out += `[${Number.isInteger(seg) ? seg : JSON.stringify(seg)}]`;
    else if (typeof seg === "object") out += `[… ${seg.left} more]`;
    else if (style === "field") out += `${out === "" ? "" : "."}${escapeControls(shortKey(seg))}`;
    else if (seg.length <= MAX_KEY_SHOWN && IDENTIFIER.test(seg)) out += `${out === "" ? "" : "."}${seg}`;
    else out += `[${escapeControls(JSON.stringify(shortKey(seg)))}]`;
  }
  return out === "" && style === "member" ? "the top" : out;
}

/** `key`, or its first MAX_KEY_SHOWN characters (a surrogate pair never cut) with an ellipsis and its length. */
function shortKey(key: string): string {
  if (key.length <= MAX_KEY_SHOWN) return key;
  return `${cutText(key, MAX_KEY_SHOWN)}… (${key.length} characters)`;
}

function escapeControls(s: string): string {
  return s.replace(CONTROL, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}
