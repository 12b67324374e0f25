/**
 * Edits server entries of a TOML document in place, the way the JSONC side does: only the values
 * that change are rewritten (for wrap and unwrap: an entry's `command` and `args`); every other
 * byte of the file (comments, key order, blank lines, quoting, other tables) stays as the user
 * wrote it. An entry may be written in any of the three ways TOML allows, and each is edited
 * where it stands:
 *
 * - a section of its own: `[mcp_servers.NAME]` then `command = "..."`;
 * - dotted keys: `mcp_servers.NAME.command = "..."` (at the top, or `NAME.command` under
 *   `[mcp_servers]`);
 * - an inline table: `NAME = { command = "...", args = [...] }` (nested ones too, and the
 *   multi-line inline tables of TOML 1.1).
 *
 * It reads just enough TOML to find every `key = value` of the document with its full key path
 * and the span of its value; each value's end is found by asking the real parser (smol-toml)
 * where a value is complete. The result is parsed again and must be exactly the document
 * expected; anything it cannot read or edit exactly gives null, and the caller writes the
 * document again as a whole.
 */
import { parse as parseToml, stringify as stringifyToml } from "smol-toml";
import { sameJson } from "../util/canonical.js";

type Entry = Record<string, unknown>;

const BARE_KEY = /^[A-Za-z0-9_-]+$/;
/** what may follow a value on its last line: blanks, a comment, the line's end */
const VALUE_TAIL = /^[ \t]*(#[^\r\n]*)?\r?\n?$/;
/** a line with nothing to read: blanks and perhaps a comment */
const BLANK_LINE = /^[ \t]*(#[^\r\n]*)?\r?\n?$/;
/** a multi-line value is looked for over at most this many lines */
const MAX_VALUE_LINES = 500;

function isObject(v: unknown): v is Entry {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** A dotted key read at `from` (bare, "basic" or 'literal' parts). */
interface Key {
  path: string[];
  /** where the key's last part starts and ends (`args` goes where `command` stood) */
  lastStart: number;
  lastEnd: number;
  /** past the blanks after the key */
  end: number;
}

function readKey(s: string, from: number): Key | null {
  const path: string[] = [];
  let i = from;
  for (;;) {
    while (s[i] === " " || s[i] === "\t") i++;
    const lastStart = i;
    if (s[i] === '"') {
      const m = /^"(?:[^"\\\r\n]|\\.)*"/.exec(s.slice(i, i + 4096));
      if (!m) return null;
      try {
        path.push(JSON.parse(m[0]) as string);
      } catch {
        return null; // a TOML escape JSON does not know (\e, \x): not handled here
      }
      i += m[0].length;
    } else if (s[i] === "'") {
      const close = s.indexOf("'", i + 1);
      if (close === -1 || /[\r\n]/.test(s.slice(i, close))) return null;
      path.push(s.slice(i + 1, close));
      i = close + 1;
    } else {
      const m = /^[A-Za-z0-9_-]+/.exec(s.slice(i, i + 4096));
      if (!m) return null;
      path.push(m[0]);
      i += m[0].length;
    }
    const lastEnd = i;
    while (s[i] === " " || s[i] === "\t") i++;
    if (s[i] !== ".") return { path, lastStart, lastEnd, end: i };
    i++;
  }
}

/** The path of a `[table]` header line, or null when the line is not one (`[[array]]` included). */
function headerPath(line: string): string[] | null {
  const open = /^[ \t]*\[(?!\[)/.exec(line);
  if (!open) return null;
  const key = readKey(line, open[0].length);
  if (!key || line[key.end] !== "]" || !VALUE_TAIL.test(line.slice(key.end + 1))) return null;
  return key.path;
}

function parses(toml: string): boolean {
  try {
    parseToml(toml);
    return true;
  } catch {
    return false;
  }
}

/** The span of the value starting at (`line`, `col`): complete where the parser says so. */
function valueSpan(lines: string[], line: number, col: number): { endLine: number; end: number } | null {
  let text = lines[line]!.slice(col);
  for (let l = line; l < lines.length && l < line + MAX_VALUE_LINES; l++) {
    if (l > line) text += lines[l];
    if (!parses(`v = ${text}`)) continue;
    // the value ends on this line: at the first place where only a comment follows and it parses
    const last = lines[l]!;
    const before = text.length - last.length; // where `last` begins in `text`
    const from = l === line ? 0 : before;
    for (let e = from; e <= text.length; e++) {
      if (!VALUE_TAIL.test(text.slice(e))) continue;
      if (parses(`v = ${text.slice(0, e)}`)) return { endLine: l, end: l === line ? col + e : e - before };
    }
    return null;
  }
  return null;
}

/**
 * One value of the document as written: its full key path, where the value lies (offsets in the
 * text), what removing it deletes, and how a sibling key is written right after it (the way
 * this one is: a line with the same key prefix, or `, key = value` inside an inline table).
 */
interface Slot {
  path: string[];
  start: number;
  end: number;
  removal: [number, number];
  insertAt: number;
  sibling(key: string, value: string): string;
}

function keyText(k: string): string {
  return BARE_KEY.test(k) ? k : JSON.stringify(k);
}

/**
 * Every `key = value` of the document with its full path (a section's path, then the key's),
 * members of inline tables included. A section with a line that cannot be read is skipped to the
 * next header: what it holds is not found, and the final parse of an edit tells if that mattered.
 */
function scanDocument(text: string): Slot[] {
  const lines = text.split(/(?<=\n)/);
  const offsets: number[] = [];
  let at = 0;
  for (const l of lines) {
    offsets.push(at);
    at += l.length;
  }
  const eol = text.includes("\r\n") ? "\r\n" : "\n";
  const slots: Slot[] = [];
  let section: string[] | null = []; // the document's top, before any header
  let i = 0;
  while (i < lines.length) {
    const line = lines[i]!;
    if (BLANK_LINE.test(line)) {
      i++;
      continue;
    }
    if (/^[ \t]*\[/.test(line)) {
      // an `[[array]]` element or a header not read: its keys are read past, never found
      section = headerPath(line);
      i++;
      continue;
    }
    const key = readKey(line, 0);
    let start = key ? key.end + 1 : -1;
    while (line[start] === " " || line[start] === "\t") start++;
    const span = key && line[key.end] === "=" ? valueSpan(lines, i, start) : null;
    if (!key || !span) {
      // skip to the next header; what this section holds is not found
      i++;
      while (i < lines.length && !/^[ \t]*\[/.test(lines[i]!)) i++;
      section = null;
      continue;
    }
    if (section !== null) {
      const lineStart = offsets[i]!;
      const endLine = lines[span.endLine]!;
      const lineEnd = offsets[span.endLine]! + endLine.length;
      const ended = endLine.endsWith("\n");
      const prefix = line.slice(0, key.lastStart);
      const sep = line.slice(key.lastEnd, start);
      const slot: Slot = {
        path: [...section, ...key.path],
        start: lineStart + start,
        end: offsets[span.endLine]! + span.end,
        // the whole line; the last line of a file without a final newline takes the one before it
        removal:
          ended || lineStart === 0
            ? [lineStart, lineEnd]
            : [lineStart - (text.endsWith("\r\n", lineStart) ? 2 : 1), lineEnd],
        insertAt: lineEnd,
        sibling: (k, v) =>
          ended ? `${prefix}${keyText(k)}${sep}${v}${eol}` : `${eol}${prefix}${keyText(k)}${sep}${v}`,
      };
      slots.push(slot);
      // an inline table not read: its own value is still known, its members are not found
      if (text[slot.start] === "{") scanInline(text, slot.start, slot.end, slot.path, slots);
    }
    i = span.endLine + 1;
  }
  return slots;
}

/** Index of the first character from `i` that is not a blank, a line break or a comment. */
function skipBlank(text: string, i: number, end: number): number {
  while (i < end) {
    const c = text[i];
    if (c === " " || c === "\t" || c === "\r" || c === "\n") i++;
    else if (c === "#") {
      while (i < end && text[i] !== "\n") i++;
    } else break;
  }
  return i;
}

/**
 * Where a value inside an inline table ends: the shortest text from `from` that is a whole value
 * followed by `,` or `}` (one that ends in a comment is not: the brace after it would be commented out).
 */
function inlineValueEnd(text: string, from: number, end: number): number {
  for (let e = from + 1; e < end; e++) {
    const c = text[e];
    if (c !== "," && c !== "}") continue;
    const value = text.slice(from, e).replace(/[ \t\r\n]+$/, "");
    if (value !== "" && parses(`v = { x = ${value} }`)) return from + value.length;
  }
  return -1;
}

/** The members of the inline table `text[open, close)` as slots under `base`; false when it cannot be read. */
function scanInline(text: string, open: number, close: number, base: string[], slots: Slot[]): boolean {
  const members: { path: string[]; keyStart: number; start: number; end: number }[] = [];
  let i = open + 1;
  for (;;) {
    i = skipBlank(text, i, close);
    if (text[i] === "}") break;
    const key = readKey(text, i);
    if (!key || text[key.end] !== "=") return false;
    let start = key.end + 1;
    while (text[start] === " " || text[start] === "\t") start++;
    const end = inlineValueEnd(text, start, close);
    if (end < 0) return false;
    members.push({ path: [...base, ...key.path], keyStart: i, start, end });
    i = skipBlank(text, end, close);
    if (text[i] === ",") {
      i++;
      continue;
    }
    if (text[i] !== "}") return false;
    break;
  }
  members.forEach((m, j) => {
    const removal: [number, number] =
      j > 0
        ? [members[j - 1]!.end, m.end]
        : members.length > 1
          ? [m.keyStart, members[1]!.keyStart]
          : [m.keyStart, m.end];
    slots.push({
      path: m.path,
      start: m.start,
      end: m.end,
      removal,
      insertAt: m.end,
      sibling: (k, v) => `, ${keyText(k)} = ${v}`,
    });
    if (text[m.start] === "{") scanInline(text, m.start, m.end, m.path, slots);
  });
  return true;
}

function slotOf(slots: Slot[], path: string[], key: string): Slot | undefined {
  return slots.find(
    (s) =>
      s.path.length === path.length + 1 && s.path.at(-1) === key && path.every((p, i) => s.path[i] === p),
  );
}

/** How `source` spelled the value of `key` in entry `path`, if it is `value` there; else null. */
function spelledIn(
  source: { text: string; slots: Slot[] } | null,
  path: string[],
  key: string,
  value: unknown,
): string | null {
  if (!source) return null;
  const at = slotOf(source.slots, path, key);
  if (!at) return null;
  const text = source.text.slice(at.start, at.end);
  try {
    return sameJson((parseToml(`v = ${text}`) as { v: unknown }).v, value) ? text : null;
  } catch {
    return null;
  }
}

/** A value as TOML writes it inline, or null for a table (not written inline here). */
function inlineValue(v: unknown): string | null {
  if (isObject(v)) return null;
  const line = stringifyToml({ v }).trimEnd();
  return line.startsWith("v = ") ? line.slice(4) : null;
}

/**
 * The entry `path` of `text` edited from `current` to `next` in place, or null when it cannot be.
 * A value `source` spelled the same way (unwrap: the file as it was before wrap) is written as
 * it was there, comments inside a multi-line array included.
 */
function editEntry(
  text: string,
  path: string[],
  current: Entry,
  next: Entry,
  source: { text: string; slots: Slot[] } | null,
): string | null {
  const slots = scanDocument(text);
  const changed = [...new Set([...Object.keys(current), ...Object.keys(next)])].filter(
    (k) => !sameJson(current[k], next[k]),
  );
  const edits: { from: number; to: number; text: string }[] = [];
  for (const k of changed) {
    const at = slotOf(slots, path, k);
    if (next[k] === undefined) {
      if (!at) return null;
      edits.push({ from: at.removal[0], to: at.removal[1], text: "" });
      continue;
    }
    const value = spelledIn(source, path, k, next[k]) ?? inlineValue(next[k]);
    if (value === null) return null;
    if (at) {
      edits.push({ from: at.start, to: at.end, text: value });
      continue;
    }
    // a key the entry did not have: right after its command, written the way the command is
    const anchor = slotOf(slots, path, "command");
    if (!anchor) return null;
    edits.push({ from: anchor.insertAt, to: anchor.insertAt, text: anchor.sibling(k, value) });
  }
  // from the end backwards, so the offsets of earlier edits stay right
  edits.sort((a, b) => b.from - a.from || b.to - a.to);
  let out = text;
  let limit = Number.POSITIVE_INFINITY;
  for (const e of edits) {
    if (e.to > limit) return null; // overlapping edits: not something to guess about
    out = out.slice(0, e.from) + e.text + out.slice(e.to);
    limit = e.from;
  }
  return out;
}

/**
 * `text` with the entries of `table` replaced by `entries`, edited in place; null when the
 * document is not laid out in a way this can edit exactly (the caller then rewrites it whole).
 * `source`: a text whose spelling of an equal value is kept (unwrap passes the original file).
 */
export function editTomlEntries(
  text: string,
  table: string,
  entries: Record<string, Entry>,
  source?: string,
): string | null {
  const from = source === undefined ? null : { text: source, slots: scanDocument(source) };
  const expected = parseToml(text) as Record<string, unknown>;
  const servers = expected[table];
  if (!isObject(servers)) return null;
  let out = text;
  for (const [name, next] of Object.entries(entries)) {
    const current = servers[name];
    if (!isObject(current)) return null; // a new entry: not something wrap or unwrap makes
    const edited = editEntry(out, [table, name], current, next, from);
    if (edited === null) return null;
    out = edited;
    servers[name] = next;
  }
  try {
    // (smol-toml's tables have no prototype: compared as JSON, not by isDeepStrictEqual)
    return sameJson(parseToml(out), expected) ? out : null;
  } catch {
    return null;
  }
}
