/**
 * Scrubbing of released credential values. Once the vault has handed a value to a server (in
 * its environment at spawn, or to a declared host by the egress proxy), the server may echo it:
 * in a tool result, in an error, on stderr. Everything the server says passes through here
 * before it goes anywhere (the client, the catalog in the store, the gateway's own stderr and
 * logs), and every form of every released value is replaced by `[redacted:<scope>]`.
 *
 * Forms of a value V, each also as it appears inside a JSON string, once or twice (JSON text in a
 * JSON string), as the common encoders escape it (jsonEscapes):
 *   - V itself;
 *   - base64 of V, standard and URL-safe, padded and unpadded;
 *   - the base64 characters that V alone determines when V sits inside longer data, at each of
 *     the three byte offsets modulo 3 (so `base64("Authorization: Basic " + V)` is caught too);
 *     a fragment shorter than MIN_FRAGMENT characters is left out: it would match everywhere;
 *   - URL-encoded V: encodeURIComponent, encodeURI, form encoding (URLSearchParams, spaces as
 *     "+"), each also with lower-case percent escapes.
 *
 * Limits (docs/security.md): a server that wants to leak a value can always transform it some
 * other way (reverse it, split it across messages, encrypt it); this catches echoes and the
 * encodings that libraries apply on their own. A short value (under 8 characters) is scrubbed
 * too, but it can collide with ordinary text, which is then redacted as well.
 */

import { parsedNestsDeeperThan } from "../util/jsonDepth.js";

const MIN_FRAGMENT = 8;

/** The marker that replaces a value: JSON-safe whatever the scope name it is given. */
export function redactionMarker(scope: string): string {
  return `[redacted:${scope.replace(/[^A-Za-z0-9._-]/g, "_")}]`;
}

export class ReleasedValues {
  /** value → scope */
  private readonly values = new Map<string, string>();
  /** form → scope, every form of every value */
  private readonly forms = new Map<string, string>();
  private pattern: RegExp | null = null;
  /** the length of the longest form */
  private longest = 0;

  /** A value the vault released under `scope`: from now on none of its forms passes. */
  add(scope: string, value: string): void {
    if (value === "" || this.values.has(value)) return;
    this.values.set(value, scope);
    for (const f of formsOf(value)) {
      if (f === "" || this.forms.has(f)) continue;
      this.forms.set(f, scope);
      this.longest = Math.max(this.longest, f.length);
    }
    this.pattern = null;
  }

  /** The length of the longest form of any released value (0 when none): what a cut must keep back. */
  longestForm(): number {
    return this.longest;
  }

  /**
   * Where `text` can be cut at or after `at` so that scrubbing each side on its own replaces
   * what scrubbing the whole would: `at` itself, or the end of the form scrubText would replace
   * across it. Exact only when `text` runs on for at least longestForm() - 1 characters past
   * `at` (every form across `at` then ends inside it).
   */
  cutPoint(text: string, at: number): number {
    if (this.values.size === 0) return at;
    const re = this.regex();
    re.lastIndex = 0;
    for (let m = re.exec(text); m !== null && m.index < at; m = re.exec(text)) {
      const end = m.index + m[0].length;
      if (end > at) return end;
    }
    return at;
  }

  /** How many distinct values were released. */
  get size(): number {
    return this.values.size;
  }

  /** Text (a stderr line, a log line) with every form of every released value replaced. */
  scrubText(text: string): string {
    if (this.values.size === 0) return text;
    const re = this.regex();
    re.lastIndex = 0;
    return text.replace(re, (m) => redactionMarker(this.forms.get(m) ?? "credential"));
  }

  /**
   * One JSON-RPC line. Unchanged when no form occurs in it (the common case costs one regex
   * scan). Otherwise each occurrence is replaced in place, which keeps every other byte as the
   * server wrote it. Only when that would not parse any more (a value echoed as a bare number,
   * say) or would change the message's `id` (which routes it, and never reaches the client: the
   * gateway answers with its own ids) is the message parsed, scrubbed value by value with its
   * `id` kept, and written again.
   */
  scrubLine(jsonLine: string): string {
    if (this.values.size === 0) return jsonLine;
    const re = this.regex();
    re.lastIndex = 0;
    if (!re.test(jsonLine)) return jsonLine;
    const replaced = this.scrubText(jsonLine);
    let original: unknown;
    try {
      original = JSON.parse(jsonLine);
    } catch {
      return replaced; // not JSON: the gateway drops it, and logs it scrubbed
    }
    // Too deep to walk value by value: the gateway drops it unread (src/util/jsonDepth.ts), and
    // only its scrubbed text can ever be shown.
    if (parsedNestsDeeperThan(jsonLine, original)) return replaced;
    try {
      if (sameIds(original, JSON.parse(replaced))) return replaced;
    } catch {
      /* no longer JSON: rewrite from the parsed original */
    }
    return JSON.stringify(
      Array.isArray(original) ? original.map((m) => this.scrubMessage(m)) : this.scrubMessage(original),
    );
  }

  /** A message with every value and key scrubbed, its top-level `id` as it was. */
  private scrubMessage(msg: unknown): unknown {
    const out = this.scrubValue(msg);
    if (isObject(msg) && isObject(out) && Object.hasOwn(msg, "id")) out.id = msg.id;
    return out;
  }

  private scrubValue(v: unknown): unknown {
    if (typeof v === "string") return this.scrubText(v);
    if (typeof v === "number") {
      const s = String(v);
      const t = this.scrubText(s);
      return t === s ? v : t;
    }
    if (Array.isArray(v)) return v.map((x) => this.scrubValue(x));
    if (typeof v === "object" && v !== null) {
      const out: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v)) out[this.scrubText(k)] = this.scrubValue(x);
      return out;
    }
    return v;
  }

  /** One alternation of every form, longest first (so a longer form wins where two start). */
  private regex(): RegExp {
    if (!this.pattern) {
      const all = [...this.forms.keys()].sort((a, b) => b.length - a.length).map(escapeRegExp);
      this.pattern = new RegExp(all.join("|"), "g");
    }
    return this.pattern;
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Whether two parsed messages (or batches) carry the same ids, in the same places. */
function sameIds(a: unknown, b: unknown): boolean {
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    return a.every((m, i) => sameIds(m, b[i]));
  }
  if (!isObject(a) || !isObject(b)) return isObject(a) === isObject(b);
  return Object.hasOwn(a, "id") === Object.hasOwn(b, "id") && a.id === b.id;
}

function escapeRegExp(s: string): string {
  return s.replace(/[\\^$.*+?()[\]{}|/]/g, "\\$&");
}

/** Every form of `value` that scrubbing replaces (see the module comment). */
export function formsOf(value: string): string[] {
  const base = new Set<string>([value]);
  const bytes = Buffer.from(value, "utf8");
  const std = bytes.toString("base64");
  for (const b64 of [std, std.replace(/=+$/, "")]) {
    base.add(b64);
    base.add(urlSafe(b64));
  }
  for (const frag of alignedFragments(bytes)) {
    if (frag.length < MIN_FRAGMENT) continue;
    base.add(frag);
    base.add(urlSafe(frag));
  }
  for (const u of urlEncodings(value)) {
    base.add(u);
    base.add(u.replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase()));
  }
  const out = new Set<string>();
  for (const f of base) {
    out.add(f);
    // inside a JSON string, and inside JSON that is itself inside a JSON string (a tool result
    // whose text is JSON): escaped once and twice
    for (const once of jsonEscapes(f)) {
      out.add(once);
      out.add(JSON.stringify(once).slice(1, -1));
    }
  }
  out.delete("");
  return [...out];
}

/**
 * `s` as it appears inside a JSON string, as the common encoders write it: JSON.stringify;
 * non-ASCII as \uxxxx (Python's ensure_ascii) or \uXXXX; "/" as "\/" (PHP); "<", ">", "&",
 * U+2028 and U+2029 as \u00xx (Go's HTML-safe encoding); and their combinations.
 */
function jsonEscapes(s: string): string[] {
  const json = JSON.stringify(s).slice(1, -1);
  const hex = (c: string) => c.charCodeAt(0).toString(16).padStart(4, "0");
  const out = new Set<string>();
  for (const ascii of ["none", "lower", "upper"] as const) {
    let a = json;
    if (ascii !== "none") {
      a = a.replace(/[\u0080-\uffff]/g, (c) => `\\u${ascii === "lower" ? hex(c) : hex(c).toUpperCase()}`);
    }
    for (const html of [false, true]) {
      const h = html ? a.replace(/[<>&\u2028\u2029]/g, (c) => `\\u${hex(c)}`) : a;
      out.add(h);
      out.add(h.replaceAll("/", "\\/"));
    }
  }
  return [...out];
}

function urlSafe(b64: string): string {
  return b64.replaceAll("+", "-").replaceAll("/", "_");
}

/**
 * The base64 characters that depend on `bytes` alone when they start at byte offset 0, 1 or 2
 * (mod 3) of longer data: the characters whose six bits all fall inside `bytes`.
 */
function alignedFragments(bytes: Buffer): string[] {
  const out: string[] = [];
  for (let offset = 0; offset < 3; offset++) {
    const encoded = Buffer.concat([Buffer.alloc(offset), bytes]).toString("base64");
    const start = Math.ceil((8 * offset) / 6);
    const end = Math.floor((8 * (offset + bytes.length)) / 6);
    if (end > start) out.push(encoded.slice(start, end));
  }
  return out;
}

function urlEncodings(value: string): string[] {
  const out: string[] = [];
  for (const enc of [encodeURIComponent, encodeURI]) {
    try {
      out.push(enc(value));
    } catch {
      /* a lone surrogate cannot be URL-encoded: there is no such form */
    }
  }
  out.push(new URLSearchParams({ v: value }).toString().slice(2));
  return out;
}
