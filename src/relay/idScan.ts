/**
 * Finds the raw text of a JSON-RPC message's top-level `"id"` member without
 * parsing the message: for a line too large to parse (its sender must still get
 * an answer carrying its own id) and for ids whose exact text matters (a number
 * above 2^53 that `JSON.parse` would round).
 *
 * It is fed bytes incrementally, keeps O(1) state besides the captured token
 * (capped), and stops looking once the id is found — or, made with `whole`, reads
 * to the end of the object to also tell whether it has a top-level `"method"`
 * (a request or notification, not a response). UTF-8 continuation bytes are
 * all >= 0x80, so scanning bytes never confuses them with JSON structure.
 */
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const MAX_KEY = 8; // longer keys are not "id": their text is not kept
const MAX_TOKEN = 1024; // an id longer than this is not looked for further
const ANSWER_MEMBERS = new Set(["result", "error", "jsonrpc"]);

export class TopLevelIdScanner {
  private depth = 0;
  private inString = false;
  private escaped = false;
  /** at depth 1: true while the next string is a key (after `{` or `,`) */
  private expectKey = false;
  private key: number[] | null = null;
  private lastKey = "";
  /** capturing the value of the top-level id */
  private capturing = false;
  private token: number[] = [];
  private done = false;
  private found: string | null = null;
  private method = false;
  /** the top-level members of an answer seen so far (see ANSWER_MEMBERS) */
  private answerMembers = 0;
  private text = false;

  constructor(private readonly whole = false) {}

  /** A top-level "method" member was seen (only reliable with `whole`, once finished). */
  get hasMethod(): boolean {
    return this.method;
  }

  /**
   * A top-level "result", "error" or "jsonrpc" member was seen: what marks an answer, as opposed
   * to an object that merely has an id (only reliable with `whole`, once finished).
   */
  get hasAnswerMember(): boolean {
    return this.answerMembers > 0;
  }

  /** The raw id token (e.g. `9007199254740993`, `"a\u0041"`), or null when none was seen (yet). */
  get id(): string | null {
    return this.found;
  }

  get finished(): boolean {
    return this.done;
  }

  /** UTF-8 bytes of the message, in order. */
  push(bytes: Uint8Array): void {
    for (let i = 0; i < bytes.length && !this.done; i++) this.byte(bytes[i]!);
  }

  /** The message as text (UTF-16 code units; non-ASCII ones are >= 0x80 too). */
  pushText(text: string): void {
    this.text = true;
    for (let i = 0; i < text.length && !this.done; i++) this.byte(text.charCodeAt(i));
  }

  private byte(b: number): void {
    if (this.capturing) {
      if (this.token.length > MAX_TOKEN) {
        this.abandonToken(b);
        return;
      }
      if (this.inString) {
        this.token.push(b);
        if (this.escaped) this.escaped = false;
        else if (b === BACKSLASH) this.escaped = true;
        else if (b === QUOTE) this.finishToken();
        return;
      }
      if (b === QUOTE && this.token.length === 0) {
        this.inString = true;
        this.token.push(b);
        return;
      }
      if (b === 0x2c /* , */ || b === 0x7d /* } */) {
        this.finishToken();
        if (this.whole) this.byte(b); // the comma or brace is structure too
        return;
      }
      if (b === 0x7b /* { */ || b === 0x5b /* [ */) {
        this.abandonToken(b); // an object or array is not an id
        return;
      } // not an id
      if (b > 0x20) this.token.push(b);
      return;
    }
    if (this.inString) {
      if (this.key && this.key.length <= MAX_KEY) this.key.push(b);
      if (this.escaped) this.escaped = false;
      else if (b === BACKSLASH) this.escaped = true;
      else if (b === QUOTE) {
        this.inString = false;
        if (this.key) {
          this.key.pop(); // the closing quote
          this.lastKey = this.key.length <= MAX_KEY ? String.fromCharCode(...this.key) : "";
          this.key = null;
        }
      }
      return;
    }
    switch (b) {
      case QUOTE:
        this.inString = true;
        if (this.depth === 1 && this.expectKey) {
          this.key = [];
          this.expectKey = false;
        }
        return;
      case 0x3a: // :
        if (this.depth === 1 && this.lastKey === "method") this.method = true;
        if (this.depth === 1 && ANSWER_MEMBERS.has(this.lastKey)) this.answerMembers++;
        if (this.depth === 1 && this.lastKey === "id") {
          this.capturing = true;
          this.token = [];
        }
        this.lastKey = "";
        return;
      case 0x2c: // ,
        if (this.depth === 1) this.expectKey = true;
        return;
      case 0x7b: // {
      case 0x5b: // [
        this.depth++;
        if (this.depth === 1) {
          if (b === 0x5b) {
            this.stop();
            return;
          } // a batch: no single id
          this.expectKey = true;
        }
        return;
      case 0x7d: // }
      case 0x5d: // ]
        this.depth--;
        if (this.depth <= 0) this.stop();
        return;
    }
  }

  private finishToken(): void {
    const text = this.text ? String.fromCharCode(...this.token) : Buffer.from(this.token).toString("utf8");
    this.capturing = false;
    this.inString = false;
    this.found = validIdToken(text) ? text : null;
    this.token = [];
    if (!this.whole) this.stop();
  }

  /** The id's value is not an id (too long, an object): no id; read on as structure when whole. */
  private abandonToken(b: number): void {
    this.capturing = false;
    this.token = [];
    if (this.whole) this.byte(b);
    else this.stop();
  }

  private stop(): void {
    this.done = true;
    this.token = [];
  }
}

/** A string or a finite number, as JSON text. */
function validIdToken(text: string): boolean {
  try {
    const v: unknown = JSON.parse(text);
    return typeof v === "string" || (typeof v === "number" && Number.isFinite(v));
  } catch {
    return false;
  }
}

/** The raw top-level id token of a whole message text, or null. */
export function rawIdOf(text: string): string | null {
  const s = new TopLevelIdScanner();
  s.pushText(text);
  return s.id;
}

/**
 * The raw text of a whole message's `params.requestId` (a cancellation's: `9007199254740993`,
 * `"a\/b"`), or null when there is none or it is not a string or number. Read as `JSON.parse`
 * reads it: keys by their value (`"request\u0049d"` is `requestId`), and of a member written
 * twice, the last. The text must be one valid JSON value (the message was parsed already).
 */
export function rawRequestIdOf(text: string): string | null {
  const params = memberOf(text, 0, "params");
  if (params === null || text.charCodeAt(params.start) !== 0x7b /* { */) return null;
  const id = memberOf(text, params.start, "requestId");
  if (id === null) return null;
  const raw = text.slice(id.start, id.end);
  return raw.length <= MAX_TOKEN && validIdToken(raw) ? raw : null;
}

/**
 * The raw text of the top-level `id` of each element of a whole message that is a JSON array (a
 * batch), up to the element `last`: null for an element that is no object or has no valid id. Read
 * as `rawIdOf` reads a message's id (keys by their value, of a member written twice the last). The
 * text must be one valid JSON value (the message was parsed already).
 */
export function rawBatchIdsOf(text: string, last: number): (string | null)[] {
  const out: (string | null)[] = [];
  let i = skipWhitespace(text, 0);
  if (text.charCodeAt(i) !== 0x5b /* [ */) return out;
  i = skipWhitespace(text, i + 1);
  while (out.length <= last && i < text.length && text.charCodeAt(i) !== 0x5d /* ] */) {
    const end = valueEnd(text, i);
    if (end <= i) break;
    const id = text.charCodeAt(i) === 0x7b /* { */ ? memberOf(text, i, "id") : null;
    const raw = id === null ? null : text.slice(id.start, id.end);
    out.push(raw !== null && raw.length <= MAX_TOKEN && validIdToken(raw) ? raw : null);
    i = skipWhitespace(text, end);
    if (text.charCodeAt(i) !== 0x2c /* , */) break;
    i = skipWhitespace(text, i + 1);
  }
  return out;
}

/**
 * The text of a whole message's `params.arguments` (a tools/call's), or null when it has none. Read
 * as `rawRequestIdOf` reads `params.requestId`: keys by their value, of a member written twice the
 * last. The text must be one valid JSON value (the message was parsed already).
 */
export function rawArgumentsOf(text: string): string | null {
  const params = memberOf(text, 0, "params");
  if (params === null || text.charCodeAt(params.start) !== 0x7b /* { */) return null;
  const args = memberOf(text, params.start, "arguments");
  return args === null ? null : text.slice(args.start, args.end);
}

/**
 * The text of a whole message's `params._meta.progressToken`, or null when it has none. Read as
 * `rawRequestIdOf` reads `params.requestId`. The text must be one valid JSON value.
 */
export function rawProgressTokenOf(text: string): string | null {
  const params = memberOf(text, 0, "params");
  if (params === null || text.charCodeAt(params.start) !== 0x7b /* { */) return null;
  const meta = memberOf(text, params.start, "_meta");
  if (meta === null || text.charCodeAt(meta.start) !== 0x7b /* { */) return null;
  const token = memberOf(text, meta.start, "progressToken");
  return token === null ? null : text.slice(token.start, token.end);
}

/** Where the value of the object at `at`'s (last) member `name` lies, or null. */
function memberOf(text: string, at: number, name: string): { start: number; end: number } | null {
  let i = skipWhitespace(text, at);
  if (text.charCodeAt(i) !== 0x7b /* { */) return null;
  let found: { start: number; end: number } | null = null;
  i = skipWhitespace(text, i + 1);
  while (i < text.length && text.charCodeAt(i) === QUOTE) {
    const keyEnd = valueEnd(text, i);
    const key = safeKey(text.slice(i, keyEnd));
    i = skipWhitespace(text, keyEnd);
    if (text.charCodeAt(i) !== 0x3a /* : */) return null;
    const start = skipWhitespace(text, i + 1);
    const end = valueEnd(text, start);
    if (end <= start) return null;
    if (key === name) found = { start, end };
    i = skipWhitespace(text, end);
    if (text.charCodeAt(i) !== 0x2c /* , */) break;
    i = skipWhitespace(text, i + 1);
  }
  return found;
}

/** A key's value when it is written with an escape (a plain one is compared as written). */
function safeKey(token: string): string | null {
  if (!token.includes("\\")) return token.slice(1, -1);
  try {
    return JSON.parse(token) as string;
  } catch {
    return null;
  }
}

function skipWhitespace(text: string, i: number): number {
  for (; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c !== 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) return i;
  }
  return i;
}

/** Index just past the JSON value (or key) starting at `i`; `i` itself when none starts there. */
function valueEnd(text: string, i: number): number {
  let depth = 0;
  let j = i;
  for (; j < text.length; j++) {
    const c = text.charCodeAt(j);
    if (c === QUOTE) {
      for (j++; j < text.length; j++) {
        const s = text.charCodeAt(j);
        if (s === BACKSLASH) j++;
        else if (s === QUOTE) break;
      }
      if (depth === 0) return Math.min(j + 1, text.length);
    } else if (c === 0x7b || c === 0x5b) depth++;
    else if (c === 0x7d || c === 0x5d) {
      if (depth === 0) return j; // the enclosing object's end: a scalar ended here
      if (--depth === 0) return j + 1;
    } else if (depth === 0 && (c === 0x2c || c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d)) return j;
  }
  return j;
}
