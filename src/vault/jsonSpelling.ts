/**
 * JSON escapes read back, with where each character came from. JSON lets a writer spell any
 * character of a string as `\uXXXX` (either hex case) and some as short escapes (`\/`, `\"`, …),
 * in any mix: `"\u0053ecret"` is the string `Secret`. Scrubbing (src/vault/scrub.ts) searches the
 * text these escapes spell, and maps what it finds back to the characters that spelled it, so it
 * can replace exactly those and keep every other byte as it was written.
 *
 * The reading is lenient, as a reader of any text might be: anything that is not a complete
 * escape is taken as written (a lone `\`, `\x`, `\u12`), so it works on a JSON line, on the
 * text of a JSON string that is itself JSON, and on a stderr line alike.
 */

export interface Decoded {
  text: string;
  /**
   * `source[i]`: where the escape (or plain character) that gives `text[i]` starts in the
   * input; `source[text.length]` is the input's length. Character i came from
   * `input.slice(source[i], source[i + 1])`.
   */
  source: Int32Array;
}

const SHORT: Partial<Record<string, string>> = {
  '"': '"',
  "\\": "\\",
  "/": "/",
  b: "\b",
  f: "\f",
  n: "\n",
  r: "\r",
  t: "\t",
};

/**
 * The escapes JSON.stringify does not write for a character JSON lets it write otherwise: it
 * writes \uXXXX only for controls and lone surrogates, and never writes "\/"; every other escape
 * it writes is the only one JSON allows for that character. Global: reset lastIndex before use.
 */
export const ODD_ESCAPE = /\\[u/]/g;

/** Whether a JSON line may spell some character otherwise than JSON.stringify would. */
export function mayEscapeOddly(jsonLine: string): boolean {
  return jsonLine.includes("\\u") || jsonLine.includes("\\/");
}

/**
 * The nearest place at or before `at` where no escape of `text` is cut, at either reading: one
 * with no backslash in the six characters before it (an escape is at most six characters, and a
 * backslash read once comes from one written).
 */
export function escapeBoundaryBefore(text: string, at: number): number {
  let p = at;
  for (;;) {
    if (p <= 0) return 0;
    const b = text.lastIndexOf("\\", p - 1);
    if (b === -1 || b < p - 6) return p;
    p = b;
  }
}

/** `input` with every complete JSON escape read (see the module comment), without positions. */
export function decodedText(input: string): string {
  return read(input, null);
}

/** decodedText, with where each character came from. */
export function decodeEscapes(input: string): Decoded {
  const source = new Int32Array(input.length + 1);
  const text = read(input, source);
  return { text, source: source.subarray(0, text.length + 1) };
}

/**
 * Reads the escapes of `input`; with `source`, fills it in (see Decoded). A plain loop over the
 * backslashes: a line with thousands of `\n` escapes is read in tens of microseconds.
 */
function read(input: string, source: Int32Array | null): string {
  let i = input.indexOf("\\");
  if (i === -1 && source === null) return input;
  const parts: string[] = [];
  let n = 0; // characters of output so far
  let from = 0; // start of the plain run not yet copied
  for (; i !== -1; i = input.indexOf("\\", i)) {
    const next = input[i + 1];
    let char: string | undefined;
    let len = 2;
    if (next === "u" && isHex4(input, i + 2)) {
      char = String.fromCharCode(Number.parseInt(input.slice(i + 2, i + 6), 16));
      len = 6;
    } else if (next !== undefined) char = SHORT[next];
    if (char === undefined) {
      i += 1; // a lone backslash: taken as written
      continue;
    }
    parts.push(input.slice(from, i), char);
    if (source) {
      for (let k = from; k < i; k++) source[n++] = k;
      source[n++] = i;
    }
    i += len;
    from = i;
  }
  parts.push(input.slice(from));
  if (source) {
    for (let k = from; k < input.length; k++) source[n++] = k;
    source[n] = input.length;
  }
  return parts.join("");
}

/** Decoded text read once more, its positions mapped through to the first input. */
export function decodeAgain(d: Decoded): Decoded {
  const again = decodeEscapes(d.text);
  const source = new Int32Array(again.source.length);
  for (let i = 0; i < source.length; i++) source[i] = d.source[again.source[i]!]!;
  return { text: again.text, source };
}

function isHex4(s: string, at: number): boolean {
  if (at + 4 > s.length) return false;
  for (let k = at; k < at + 4; k++) {
    const c = s.charCodeAt(k);
    if (!((c >= 48 && c <= 57) || (c >= 65 && c <= 70) || (c >= 97 && c <= 102))) return false;
  }
  return true;
}
