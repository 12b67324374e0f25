/**
 * Numbers a peer wrote that the gateway would pass on as another number. The gateway reads a
 * message with JSON.parse (doubles) and sends what it read, re-serialised: an integer literal
 * beyond 2^53 is rounded (`9007199254740993` goes out as `9007199254740992`), one that is a
 * double exactly is written by its shortest digits (`12345678901234567168` goes out as
 * `12345678901234567000`, `10000000000000000000000` as `1e+22`), a decimal of more
 * significant digits than a double holds is rounded too (`12345678901234.567` goes out as
 * `12345678901234.566`), and so is a number so small that it reads as 0 or as a subnormal double
 * (`1e-400` goes out as `0`, `1.23456e-320` as `1.2347e-320`). A server that reads numbers exactly (Python's int or Decimal, Rust's
 * u64, Go's json.Number, Java's BigDecimal) would act on another number than the one its client
 * asked for, under a digest and an approval of the gateway's reading. The file keeps its name
 * from the integers it first looked for.
 */

/** Where such an integer lies in a parsed value (keys and indexes), and the integer as written. */
export interface RespelledInteger {
  path: (string | number)[];
  written: string;
}

/**
 * The rule: a number token is respelled when the number JSON.stringify writes for the double
 * JSON.parse read is not the token's exact decimal value (`decimalValue` of each). A number of 15
 * significant digits or fewer within the normal range of doubles (from about 2.2e-308 to about
 * 1.8e308) is written back as the same value (a double holds every such decimal, and its shortest
 * spelling reads back as it), so only three kinds of token can be respelled: one of 16 digits or
 * more, with its decimal point (a run of 16 digits and points); one below the normal range, which
 * a token of fewer than 16 such characters reaches only with an exponent of -100 or less (a digit,
 * `e-` and three digits: a mantissa of 15 characters is at least 1e-13; `release-2024` in a string
 * is not one); and one beyond the range (`1e400`, `-1.8e308`), which JSON.parse reads as ±Infinity
 * and JSON.stringify writes as `null`, and which a token of fewer than 16 such characters reaches
 * only with an exponent of 294 or more (a digit, `e`, an optional `+` and three digits). Zero
 * however written (`-0.0e-999`) is 0 exactly, and goes out as `0`: the same number.
 */
const SIXTEEN_DIGITS = /[0-9.]{16}/;
const THREE_DIGIT_EXPONENT = /[0-9][eE][-+]?[0-9]{3}/;
const THREE_DIGIT_EXPONENTS = /[0-9][eE][-+]?[0-9]{3}/g;

/**
 * Whether `text` (JSON text) holds a run of 16 digits (and decimal points) anywhere, or a number
 * token with an exponent of three digits: when it does not (nearly every message), no number in
 * it can be respelled, and nothing else is looked for. A digit, `e` and three digits are common in
 * hex text (a SHA-256 digest holds them about one time in two), so such a match counts only where
 * it is a number token's: its mantissa (digits, a point, a sign: under 16 characters, or the run
 * would have matched) starts the text or follows `:`, `,` or `[`, blanks between. Each match is
 * looked back from once, over characters no other match looks at: linear in the text.
 */
export function mayHoldLongInteger(text: string): boolean {
  if (SIXTEEN_DIGITS.test(text)) return true;
  THREE_DIGIT_EXPONENTS.lastIndex = 0;
  for (let m = THREE_DIGIT_EXPONENTS.exec(text); m !== null; m = THREE_DIGIT_EXPONENTS.exec(text))
    if (startsAValue(text, m.index)) return true;
  return false;
}

/** Whether the mantissa whose last digit is at `at` begins a JSON value (see mayHoldLongInteger). */
function startsAValue(text: string, at: number): boolean {
  let i = at;
  for (; i >= 0; i--) {
    const c = text.charCodeAt(i);
    if (!((c >= 0x30 && c <= 0x39) || c === 0x2e || c === 0x2d)) break;
  }
  for (; i >= 0; i--) {
    const c = text.charCodeAt(i);
    if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) break;
  }
  if (i < 0) return true;
  const c = text.charCodeAt(i);
  return c === 0x3a /* : */ || c === 0x2c /* , */ || c === 0x5b /* [ */;
}

/**
 * The exact decimal value of a JSON number token, as one text (`-123e-2` for `-1.230`, `0` for
 * any zero): two tokens are the same number exactly when their texts are equal. Read by a loop: a
 * token is as long as a message (a regular expression's `+` keeps an entry per character).
 */
export function decimalValue(token: string): string {
  let i = 0;
  const negative = token.charCodeAt(0) === 0x2d; /* - */
  if (negative) i = 1;
  let digits = ""; // every digit of the mantissa, the point left out
  let afterPoint = 0; // how many of them follow the point
  let point = false;
  for (; i < token.length; i++) {
    const c = token.charCodeAt(i);
    if (c >= 0x30 && c <= 0x39) {
      digits += token[i];
      if (point) afterPoint++;
    } else if (c === 0x2e /* . */) point = true;
    else break; // e or E: the exponent follows
  }
  let from = 0;
  while (from < digits.length && digits.charCodeAt(from) === 0x30) from++;
  if (from === digits.length) return "0";
  let to = digits.length;
  while (digits.charCodeAt(to - 1) === 0x30) to--;
  const sign = token.charCodeAt(i + 1) === 0x2b /* + */ ? i + 2 : i + 1;
  const written = i < token.length ? BigInt(token.slice(sign)) : 0n;
  const exponent = written - BigInt(afterPoint) + BigInt(digits.length - to);
  return `${negative ? "-" : ""}${digits.slice(from, to)}e${exponent}`;
}

/**
 * The first integer literal of `text` (one valid JSON value) that JSON.stringify of the parsed
 * value would not write as the same integer, with where it lies in `value` (`text` parsed), or
 * null when there is none. Strings are skipped: only number tokens count.
 */
export function respelledIntegerIn(text: string, value: unknown): RespelledInteger | null {
  const respelled = respelledReads(text);
  if (respelled === null) return null;
  const found = whereWritten(value, respelled) ?? find(value, respelled, [], 0);
  // not found in the value (it cannot be: the token is in it), still named: at the top
  return found ?? { path: [], written: (respelled.values().next().value as Written).written };
}

/**
 * As `respelledIntegerIn`, for `value` made from `text` parsed and then rewritten by the gateway
 * (a member replaced by its own): null also when no number of `value` is one of those integers as
 * read (the rewrite took every one of them out, such as a cancellation's requestId the gateway
 * replaced with its own id for the request).
 */
export function respelledIntegerLeftIn(text: string, value: unknown): RespelledInteger | null {
  const respelled = respelledReads(text);
  if (respelled === null) return null;
  // where the client wrote it, when it is still there; else anywhere the rewrite moved it
  return whereWritten(value, respelled) ?? find(value, respelled, [], 0);
}

/** An integer that re-serialising would change: its first text, and where that text lies. */
interface Written {
  written: string;
  path: (string | number)[];
}

/**
 * The first integer of `respelled` (text order) whose path as written still holds the number read
 * in `value`: the path by the text, since another number of `value` may read as the same double
 * (`9007199254740992` written exactly beside `9007199254740993`), and a search of `value` by that
 * double would name it.
 */
function whereWritten(value: unknown, respelled: Map<number, Written>): RespelledInteger | null {
  for (const [read, w] of respelled) {
    let v: unknown = value;
    for (const k of w.path) {
      if (typeof v !== "object" || v === null) {
        v = undefined;
        break;
      }
      v = Array.isArray(v)
        ? typeof k === "number"
          ? v[k]
          : undefined
        : Object.hasOwn(v, k)
          ? (v as Record<string, unknown>)[k]
          : undefined;
    }
    if (v === read) return { path: [...w.path], written: w.written };
  }
  return null;
}

/**
 * The integer literals of `text` that re-serialising would change: each as read, to its first text
 * and where that lies (the keys as JSON.parse reads them, the indexes of arrays).
 */
function respelledReads(text: string): Map<number, Written> | null {
  if (!mayHoldLongInteger(text)) return null;
  const respelled = new Map<number, Written>();
  for (const w of respelledTokens(text)) if (!respelled.has(w.read)) respelled.set(w.read, w);
  return respelled.size === 0 ? null : respelled;
}

/**
 * Every number token of `text` (one valid JSON value) that re-serialising would change, in text
 * order, each with where it lies (its path as JSON.parse reads the keys; the last member of a key
 * written twice is the one a parsed value holds) and its exact value (`decimalValue`): what a
 * reader of the text takes it for, where the gateway's parsed value holds a rounded double.
 */
export function respelledNumbers(
  text: string,
): { path: (string | number)[]; written: string; exact: string }[] {
  if (!mayHoldLongInteger(text)) return [];
  return respelledTokens(text).map((w) => ({
    path: w.path,
    written: w.written,
    exact: decimalValue(w.written),
  }));
}

function respelledTokens(text: string): (Written & { read: number })[] {
  const respelled: (Written & { read: number })[] = [];
  // one entry per open container: an object's key being read (null before its first), an array's index
  const at: (string | number | null)[] = [];
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      const str = stringAt(text, i);
      i = str.end;
      // a key: the open container is an object (not an array, whose entry is a number)
      const top = at.length - 1;
      if (top >= 0 && typeof at[top] !== "number" && str.key !== null) at[top] = str.key;
      continue;
    }
    if (c === 0x7b /* { */) at.push(null);
    else if (c === 0x5b /* [ */) at.push(0);
    else if (c === 0x7d /* } */ || c === 0x5d /* ] */) at.pop();
    else if (c === 0x2c /* , */) {
      const top = at.length - 1;
      if (top >= 0 && typeof at[top] === "number") at[top] = (at[top] as number) + 1;
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
    if (token.length < 16 && !THREE_DIGIT_EXPONENT.test(token)) continue;
    const read = Number(token);
    // beyond the range of doubles: ±Infinity, which JSON.stringify writes as `null` (a client's
    // call holding one is refused before this matters, src/guard/guard.ts: it has no digest)
    if (!Number.isFinite(read) || decimalValue(token) !== decimalValue(String(read)))
      respelled.push({ read, written: token, path: [...at] as (string | number)[] });
  }
  return respelled;
}

function find(
  v: unknown,
  respelled: Map<number, Written>,
  path: (string | number)[],
  depth: number,
): RespelledInteger | null {
  if (typeof v === "number") {
    const w = respelled.get(v);
    return w === undefined ? null : { path: [...path], written: w.written };
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

/**
 * Whether an object anywhere in `text` (one valid JSON value) has a member written twice: keys
 * compared as JSON.parse reads them (`"a"` and `"\u0061"` are one key). JSON.parse keeps the last
 * of two; other parsers keep the first or refuse the message, so text with one may be read
 * otherwise by the next peer than by the gateway, and is never relayed as written for that
 * reason. An explicit stack: the text may nest as deep as a message may (src/util/jsonDepth.ts).
 */
export function memberWrittenTwice(text: string): boolean {
  // one entry per open container: the keys of an object so far, null for an array
  const open: (Set<string> | null)[] = [];
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x7b /* { */) open.push(new Set());
    else if (c === 0x5b /* [ */) open.push(null);
    else if (c === 0x7d /* } */ || c === 0x5d /* ] */) open.pop();
    else if (c === 0x22 /* " */) {
      const str = stringAt(text, i);
      i = str.end;
      const keys = open.at(-1);
      if (!keys || str.key === null) continue;
      if (keys.has(str.key)) return true;
      keys.add(str.key);
    }
  }
  return false;
}

/**
 * The string token whose opening quote is at `start` in `text` (one valid JSON value): where its
 * closing quote is, and, when a colon follows it (a member's key), its text as JSON.parse reads it
 * (`"\u0061"` is `a`); null for a string that is a value.
 */
function stringAt(text: string, start: number): { end: number; key: string | null } {
  const n = text.length;
  let escaped = false;
  let i = start + 1;
  for (; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x5c /* \ */) {
      escaped = true;
      i++;
    } else if (c === 0x22 /* " */) break;
  }
  let k = i + 1;
  while (k < n && (text[k] === " " || text[k] === "\t" || text[k] === "\n" || text[k] === "\r")) k++;
  if (text.charCodeAt(k) !== 0x3a /* : */) return { end: i, key: null };
  return {
    end: i,
    key: escaped ? (JSON.parse(text.slice(start, i + 1)) as string) : text.slice(start + 1, i),
  };
}
