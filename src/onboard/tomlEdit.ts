/**
 * Edits server entries of a TOML document in place, the way the JSONC side does: only the values
 * that change are rewritten (for wrap and unwrap: an entry's `command` and `args`), in the
 * entry's own `[table.name]` section; every other byte of the file (comments, key order,
 * blank lines, quoting, other tables) stays as the user wrote it.
 *
 * It reads just enough TOML to find a section and the spans of its `key = value` lines; each
 * value's end is found by asking the real parser (smol-toml) where a value is complete. The
 * result is parsed again and must be exactly the document expected; anything laid out otherwise
 * (inline tables, dotted keys, a value that is a table) gives null, and the caller writes the
 * document again as a whole.
 */
import { isDeepStrictEqual } from "node:util";
import { parse as parseToml, stringify as stringifyToml } from "smol-toml";
import { sameJson } from "../util/canonical.js";

type Entry = Record<string, unknown>;

const BARE_KEY = /^[A-Za-z0-9_-]+$/;
/** what may follow a value on its last line: blanks, a comment, the line's end */
const VALUE_TAIL = /^[ \t]*(#[^\r\n]*)?\r?\n?$/;
/** a multi-line value is looked for over at most this many lines */
const MAX_VALUE_LINES = 500;

function isObject(v: unknown): v is Entry {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** A dotted key read at `from` (bare, "basic" or 'literal' parts): its parts and where it ends. */
function readKey(s: string, from: number): { path: string[]; end: number } | null {
  const path: string[] = [];
  let i = from;
  for (;;) {
    while (s[i] === " " || s[i] === "\t") i++;
    if (s[i] === '"') {
      const m = /^"(?:[^"\\\r\n]|\\.)*"/.exec(s.slice(i));
      if (!m) return null;
      try {
        path.push(JSON.parse(m[0]) as string);
      } catch {
        return null; // a TOML escape JSON does not know (\e, \x): not handled here
      }
      i += m[0].length;
    } else if (s[i] === "'") {
      const close = s.indexOf("'", i + 1);
      if (close === -1) return null;
      path.push(s.slice(i + 1, close));
      i = close + 1;
    } else {
      const m = /^[A-Za-z0-9_-]+/.exec(s.slice(i));
      if (!m) return null;
      path.push(m[0]);
      i += m[0].length;
    }
    while (s[i] === " " || s[i] === "\t") i++;
    if (s[i] !== ".") return { path, end: i };
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

/** One `key = value` of a section: its key, and the value's span (lines and columns). */
interface KeyLine {
  key: string[];
  line: number;
  /** column where the value starts on `line` */
  start: number;
  endLine: number;
  /** column just past the value on `endLine` */
  end: number;
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

/** Where the section `path` starts in `lines`, and its `key = value` lines; null when not found. */
function findSection(lines: string[], path: string[]): { header: number; keys: KeyLine[] } | null {
  const header = lines.findIndex((l) => isDeepStrictEqual(headerPath(l), path));
  if (header === -1) return null;
  const section = sectionKeys(lines, header);
  return section ? { header, keys: section.keys } : null;
}

/** The text of a value as written (all its lines, comments inside included). */
function valueText(lines: string[], at: KeyLine): string {
  if (at.line === at.endLine) return lines[at.line]!.slice(at.start, at.end);
  return (
    lines[at.line]!.slice(at.start) +
    lines.slice(at.line + 1, at.endLine).join("") +
    lines[at.endLine]!.slice(0, at.end)
  );
}

/** How `source` spelled the value of `key` in section `path`, if it is `value` there; else null. */
function spelledIn(source: string[] | null, path: string[], key: string, value: unknown): string | null {
  if (!source) return null;
  const at = findSection(source, path)?.keys.find((x) => x.key.length === 1 && x.key[0] === key);
  if (!at) return null;
  const text = valueText(source, at);
  try {
    return sameJson((parseToml(`v = ${text}`) as { v: unknown }).v, value) ? text : null;
  } catch {
    return null;
  }
}

/** The `key = value` lines of the section whose header is at `header`, until the next header. */
function sectionKeys(lines: string[], header: number): { keys: KeyLine[]; end: number } | null {
  const keys: KeyLine[] = [];
  let i = header + 1;
  while (i < lines.length) {
    const line = lines[i]!;
    if (/^[ \t]*(#[^\r\n]*)?\r?\n?$/.test(line)) {
      i++;
      continue;
    }
    if (/^[ \t]*\[/.test(line)) break; // the next table
    const key = readKey(line, 0);
    if (!key || line[key.end] !== "=") return null;
    let start = key.end + 1;
    while (line[start] === " " || line[start] === "\t") start++;
    const span = valueSpan(lines, i, start);
    if (!span) return null;
    keys.push({ key: key.path, line: i, start, ...span });
    i = span.endLine + 1;
  }
  return { keys, end: i };
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
  source: string[] | null,
): string | null {
  const lines = text.split(/(?<=\n)/);
  const section = findSection(lines, path);
  if (!section) return null;
  const { header } = section;
  const eol = text.includes("\r\n") ? "\r\n" : "\n";
  const changed = [...new Set([...Object.keys(current), ...Object.keys(next)])].filter(
    (k) => !sameJson(current[k], next[k]),
  );
  // edits bottom up, so earlier line numbers stay right
  const edits: { line: number; endLine: number; replacement: string[] }[] = [];
  for (const k of changed) {
    const at = section.keys.find((x) => x.key.length === 1 && x.key[0] === k);
    if (next[k] === undefined) {
      if (!at) return null;
      edits.push({ line: at.line, endLine: at.endLine, replacement: [] });
      continue;
    }
    const value = spelledIn(source, path, k, next[k]) ?? inlineValue(next[k]);
    if (value === null) return null;
    if (at) {
      const first = lines[at.line]!.slice(0, at.start);
      const rest = lines[at.endLine]!.slice(at.end);
      edits.push({ line: at.line, endLine: at.endLine, replacement: [first + value + rest] });
      continue;
    }
    // a key the entry did not have: after its command, else right under the header
    const anchor = section.keys.find((x) => x.key.length === 1 && x.key[0] === "command");
    const after = anchor ? anchor.endLine : header;
    const name = BARE_KEY.test(k) ? k : JSON.stringify(k);
    const line = `${name} = ${value}${eol}`;
    const end = lines[after]!;
    const joined = end.endsWith("\n") ? line : `${eol}${line}`;
    edits.push({ line: after + 1, endLine: after, replacement: [joined] });
  }
  edits.sort((a, b) => b.line - a.line);
  for (const e of edits) lines.splice(e.line, e.endLine - e.line + 1, ...e.replacement);
  return lines.join("");
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
  const sourceLines = source === undefined ? null : source.split(/(?<=\n)/);
  const expected = parseToml(text) as Record<string, unknown>;
  const servers = expected[table];
  if (!isObject(servers)) return null;
  let out = text;
  for (const [name, next] of Object.entries(entries)) {
    const current = servers[name];
    if (!isObject(current)) return null; // a new entry: not something wrap or unwrap makes
    const edited = editEntry(out, [table, name], current, next, sourceLines);
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
