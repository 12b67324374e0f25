/**
 * The `byte` format (base64) of ajv-formats, checked by a loop. Its regex,
 * `/^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/gm`, keeps a backtracking
 * entry per group of four, and V8 throws RangeError ("Maximum call stack size exceeded") past 64
 * MiB of them: a base64 argument of 8 MiB, a file a tool takes as `format: "byte"`, could not be
 * checked and every such call was refused. This gives the same verdict on every string, in one
 * pass: with the `m` flag the regex accepts a string when any one of its lines (split at \n, \r,
 * U+2028 and U+2029) is base64, an empty line included, as ajv-formats has it.
 */
export function isBase64Lines(s: string): boolean {
  let start = 0;
  for (let i = 0; i <= s.length; i++) {
    const c = i < s.length ? s.charCodeAt(i) : -1;
    if (c !== -1 && c !== 10 && c !== 13 && c !== 0x2028 && c !== 0x2029) continue;
    if (isBase64Line(s, start, i)) return true;
    start = i + 1;
  }
  return false;
}

/** Whether s[start, end) is whole groups of four base64 characters, the last perhaps padded with `=` or `==`. */
function isBase64Line(s: string, start: number, end: number): boolean {
  if ((end - start) % 4 !== 0) return false;
  let body = end;
  if (end - start >= 2 && s.charCodeAt(end - 1) === 61)
    body = s.charCodeAt(end - 2) === 61 ? end - 2 : end - 1;
  for (let i = start; i < body; i++) if (!isBase64Char(s.charCodeAt(i))) return false;
  return true;
}

/** `[A-Za-z0-9+/]` */
function isBase64Char(c: number): boolean {
  return (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || (c >= 48 && c <= 57) || c === 43 || c === 47;
}
