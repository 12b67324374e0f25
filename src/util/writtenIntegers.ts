/**
 * Integers a peer wrote that the gateway would pass on as another integer. The gateway reads a
 * message with JSON.parse (doubles) and sends what it read, re-serialised: an integer literal
 * beyond 2^53 is rounded (`9007199254740993` goes out as `9007199254740992`), and one that is a
 * double exactly is written by its shortest digits (`12345678901234567168` goes out as
 * `12345678901234567000`, `10000000000000000000000` as `1e+22`). A server that reads integers
 * exactly (Python's int, Rust's u64, Go's json.Number) would act on another number than the one
 * its client asked for, under a digest and an approval of the gateway's reading.
 */

/** Where such an integer lies in a parsed value (keys and indexes), and the integer as written. */
export interface RespelledInteger {
  path: (string | number)[];
  written: string;
}

/** Integer literals of 15 digits or fewer are doubles exactly, and written back as they were. */
const LONG_DIGITS = /[0-9]{16}/;

/**
 * Whether `text` holds a run of 16 digits anywhere: when it does not (nearly every message), no
 * integer in it can be respelled, and nothing else is looked for.
 */
export function mayHoldLongInteger(text: string): boolean {
  return LONG_DIGITS.test(text);
}

/** `-?[0-9]+` read by a loop: a token is as long as a message (a regular expression's `+` keeps an entry per character). */
function isIntegerText(s: string): boolean {
  let i = s.charCodeAt(0) === 0x2d /* - */ ? 1 : 0;
  if (i >= s.length) return false;
  for (; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x30 || c > 0x39) return false;
  }
  return true;
}

/**
 * The first integer literal of `text` (one valid JSON value) that JSON.stringify of the parsed
 * value would not write as the same integer, with where it lies in `value` (`text` parsed), or
 * null when there is none. Strings are skipped: only number tokens count.
 */
export function respelledIntegerIn(text: string, value: unknown): RespelledInteger | null {
  if (!LONG_DIGITS.test(text)) return null;
  const respelled = new Map<number, string>();
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      for (i++; i < n; i++) {
        const s = text.charCodeAt(i);
        if (s === 0x5c /* \ */) i++;
        else if (s === 0x22) break;
      }
      continue;
    }
    if (c !== 0x2d /* - */ && (c < 0x30 || c > 0x39)) continue;
    let j = i + 1;
    for (; j < n; j++) {
      const d = text.charCodeAt(j);
      if (!((d >= 0x30 && d <= 0x39) || d === 0x2e || d === 0x2d || d === 0x2b || d === 0x65 || d === 0x45))
        break;
    }
    const token = text.slice(i, j);
    i = j - 1;
    if (token.length < 16 || !isIntegerText(token)) continue;
    const read = Number(token);
    const out = String(read);
    if (!isIntegerText(out) || BigInt(out) !== BigInt(token)) {
      if (!respelled.has(read)) respelled.set(read, token);
    }
  }
  if (respelled.size === 0) return null;
  const path: (string | number)[] = [];
  const found = find(value, respelled, path, 0);
  // not found in the value (it cannot be: the token is in it), still named: at the top
  return found ?? { path: [], written: respelled.values().next().value as string };
}

function find(
  v: unknown,
  respelled: Map<number, string>,
  path: (string | number)[],
  depth: number,
): RespelledInteger | null {
  if (typeof v === "number") {
    const written = respelled.get(v);
    return written === undefined ? null : { path: [...path], written };
  }
  if (typeof v !== "object" || v === null || depth > 2000) return null;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      path.push(i);
      const found = find(v[i], respelled, path, depth + 1);
      path.pop();
      if (found !== null) return found;
    }
    return null;
  }
  const o = v as Record<string, unknown>;
  for (const k of Object.keys(o)) {
    path.push(k);
    const found = find(o[k], respelled, path, depth + 1);
    path.pop();
    if (found !== null) return found;
  }
  return null;
}
