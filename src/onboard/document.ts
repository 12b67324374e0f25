import {
  applyEdits,
  type FormattingOptions,
  findNodeAtLocation,
  getNodeValue,
  modify,
  type Node,
  type ParseError,
  parseTree,
} from "jsonc-parser";
import { parse as parseToml, stringify as stringifyToml } from "smol-toml";
import { describeParseError } from "../config/jsonSyntax.js";
import { sameJson } from "../util/canonical.js";
import { fileProblem } from "../util/errno.js";
import { readSmallFile, SmallFileError } from "../util/smallFile.js";
import type { HostFile } from "./hosts.js";
import { editTomlEntries } from "./tomlEdit.js";

/** A configuration problem with a host file: one sentence naming the file, nothing written. */
export class OnboardError extends Error {
  override name = "OnboardError";
}

export type Entry = Record<string, unknown>;

/**
 * A host file's text. A path that exists but cannot be read as a file (a directory named
 * `.mcp.json`, a file without read permission) is one sentence naming the file and the reason,
 * not an internal error with a stack.
 */
export function readHostText(file: string): string {
  try {
    // checked before reading (readSmallFile): a FIFO in the file's place (found by doctor from
    // the working directory, say) would hang the command, /dev/zero would be read for ever
    // the file is written back after an edit, and first copied as its backup: a byte that is not
    // UTF-8, read as U+FFFD, would be lost from both (and unwrap's "byte for byte" would not be)
    return readSmallFile(file, MAX_HOST_FILE_BYTES, "a host configuration file", { strictUtf8: true });
  } catch (e) {
    if (!(e instanceof SmallFileError)) throw e;
    const p = e.problem;
    const why =
      "code" in p
        ? p.code === "EISDIR"
          ? "it is a directory"
          : fileProblem(p.code)
        : "special" in p
          ? "it is not a regular file: a FIFO, socket or device"
          : e.message;
    throw new OnboardError(`${file} cannot be read (${why}); nothing was written.`);
  }
}

/** A host's file holds its whole state at times (~/.claude.json): generous, but not /dev/zero's. */
const MAX_HOST_FILE_BYTES = 256 * 1024 * 1024;

/**
 * A byte order mark, as editors on Windows save UTF-8 (Notepad, some VS Code settings). jsonc-parser
 * refuses it (InvalidSymbol at line 1, which does not say why), and TOML's line reader in
 * tomlEdit.ts would take it for part of the first line (a header or a key it then cannot read)
 * and fall back to writing the file again whole, without its comments. A host file is read and
 * edited without it, and an edit is written back with it, as the file was.
 */
const BOM = "\uFEFF";

/** The text without its byte order mark, and the mark to put back (empty when it had none). */
function splitBom(text: string): { bom: string; body: string } {
  return text.startsWith(BOM) ? { bom: BOM, body: text.slice(1) } : { bom: "", body: text };
}

function isObject(v: unknown): v is Entry {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Both parsers read recursively: a document nested thousands deep exhausts the stack. */
function tooDeep(host: HostFile): OnboardError {
  return new OnboardError(`${host.file} is nested too deep to read; nothing was written.`);
}

/** The line (from 1) of an offset into a text. */
function lineAt(text: string, offset: number): number {
  return text.slice(0, offset).split("\n").length;
}

function parseDocument(host: HostFile, withBom: string): unknown {
  const text = splitBom(withBom).body;
  if (host.format === "toml") {
    try {
      return parseToml(text);
    } catch (e) {
      if (e instanceof RangeError) throw tooDeep(host);
      // smol-toml's message quotes the lines around the error. Only its first line (a fixed
      // sentence) and where the error is are said, never the text: a host file's `env = { TOKEN =
      // "…" }` is where a value written without its quotes, or with one missing, is a syntax error,
      // and this sentence is printed by wrap and doctor (and kept in doctor --json).
      const first = (e as Error).message.split("\n")[0]!.replace(/^Invalid TOML document: /, "");
      const { line, column } = e as { line?: unknown; column?: unknown };
      const at =
        typeof line === "number"
          ? ` at line ${line}${typeof column === "number" ? `, column ${column}` : ""}`
          : "";
      throw new OnboardError(`${host.file} is not valid TOML (${first}${at}); nothing was written.`);
    }
  }
  return jsonDocument(host, text).value;
}

/** A JSONC document read through its syntax tree: the tree (for offsets and duplicate keys) and the value. */
function jsonDocument(host: HostFile, withBom: string): { tree: Node | undefined; value: unknown } {
  const text = splitBom(withBom).body;
  const errors: ParseError[] = [];
  let tree: Node | undefined;
  let value: unknown;
  try {
    // Through the syntax tree, not jsonc-parser's parse: parse assigns keys onto plain objects,
    // so a server keyed "__proto__" (which the host, reading with JSON.parse, does run) would
    // become a prototype and vanish. getNodeValue builds objects without a prototype: every key
    // stays an own key, and no key ("constructor", "toString") is found on Object.prototype.
    tree = parseTree(text, errors, { allowTrailingComma: true });
    value = tree === undefined ? undefined : getNodeValue(tree);
  } catch (e) {
    if (e instanceof RangeError) throw tooDeep(host);
    throw e;
  }
  if (errors.length > 0) {
    const e = errors[0]!;
    throw new OnboardError(
      `${host.file} does not parse (${describeParseError(text, e)}); nothing was written.`,
    );
  }
  return { tree, value };
}

/**
 * A key written twice in one object: the host (JSON.parse) keeps the last, an edit in place finds
 * the first, so wrap would rewrite the one the host never runs. Refused, naming both lines.
 */
function refuseDuplicateKeys(host: HostFile, text: string, object: Node, what: string): void {
  const seen = new Map<string, number>();
  for (const prop of object.children ?? []) {
    const keyNode = prop.children?.[0];
    if (keyNode === undefined || typeof keyNode.value !== "string") continue;
    const line = lineAt(text, keyNode.offset);
    const first = seen.get(keyNode.value);
    if (first !== undefined)
      throw new OnboardError(
        `${host.file}: ${what} has the key ${JSON.stringify(keyNode.value)} twice (lines ${first} and ${line}); the host keeps only the last, so remove one, then run wrap again; nothing was written.`,
      );
    seen.set(keyNode.value, line);
  }
}

/**
 * Refuses a key of the table's path written twice in its object (`"mcpServers"` twice at the top,
 * a project's path twice under `"projects"`): the host reads the last, and an edit made at the
 * first (jsonc's location lookups find the first) would put a server behind portcullis that the
 * host never runs, while wrap said it did.
 */
function refuseDuplicatePath(host: HostFile, text: string, tree: Node, table: string[]): void {
  let at: Node | undefined = tree;
  for (let i = 0; i < table.length && at?.type === "object"; i++) {
    const named: Node[] = (at.children ?? []).filter((p: Node) => p.children?.[0]?.value === table[i]);
    if (named.length > 1) {
      const lines = named.map((p) => lineAt(text, p.offset));
      throw new OnboardError(
        `${host.file}: ${tableName(table.slice(0, i + 1))} is written twice (lines ${lines[0]} and ${lines[1]}); the host keeps only the last, so remove one, then run wrap again; nothing was written.`,
      );
    }
    at = named[0]?.children?.[1];
  }
}

/** A table's path as a user reads it: `"projects" → "/p" → "mcpServers"`. */
export function tableName(table: string[]): string {
  return table.map((k) => JSON.stringify(k)).join(" → ");
}

/** One server table of a parsed document (undefined when absent); throws when it is not an object. */
function tableAt(host: HostFile, doc: unknown, table: string[]): Entry | undefined {
  let at: unknown = doc;
  for (const key of table) {
    if (!isObject(at)) return undefined;
    at = at[key];
    if (at === undefined) return undefined;
  }
  if (!isObject(at))
    throw new OnboardError(`${host.file}: ${tableName(table)} is not an object; nothing was written.`);
  return at;
}

/** One server of a host file, where it stands: its table's path in the document and its key. */
export interface ServerEntry {
  table: string[];
  key: string;
  entry: Entry;
}

/** The key of a server's place in its file, the same for wrap records and lookups. */
export function entryPathKey(table: string[], key: string): string {
  return JSON.stringify([...table, key]);
}

export interface HostServers {
  /** the servers the host runs, over all its tables in the host's order */
  servers: ServerEntry[];
  /** entries hidden by one of the same name in an earlier table: the host does not run them here */
  shadowed: (ServerEntry & { by: string[] })[];
  /** values in a server table that are not entries (a TOML [[array]], a string, a list) */
  notEntries: { table: string[]; key: string; what: string }[];
}

function kindOf(v: unknown, format: HostFile["format"]): string {
  if (Array.isArray(v))
    return format === "toml" ? "an array of tables ([[…]]), not a table" : "a list, not an object";
  return v === null ? "null, not an object" : `a ${typeof v}, not an object`;
}

/**
 * Every server of a host file with where it stands, the entries other tables shadow and the
 * values that are not entries. Throws OnboardError when the file does not parse, when a table
 * is not an object, or when a JSON server table or entry holds a key twice.
 */
export function readHostServers(host: HostFile, withBom: string): HostServers {
  // lines and offsets are counted without the mark (it stands on line 1, before no newline)
  const text = splitBom(withBom).body;
  const out: HostServers = { servers: [], shadowed: [], notEntries: [] };
  const json = host.format === "jsonc" ? jsonDocument(host, text) : undefined;
  const doc = json ? json.value : parseDocument(host, text);
  if (doc === undefined) return out;
  if (!isObject(doc)) throw new OnboardError(`${host.file} is not an object; nothing was written.`);
  const first = new Map<string, string[]>();
  for (const t of host.tables) {
    if (json?.tree) refuseDuplicatePath(host, text, json.tree, t);
    const table = tableAt(host, doc, t);
    if (table === undefined) continue;
    const node = json?.tree ? findNodeAtLocation(json.tree, t) : undefined;
    if (node?.type === "object") {
      refuseDuplicateKeys(host, text, node, tableName(t));
      for (const prop of node.children ?? [])
        if (prop.children?.[1]?.type === "object")
          refuseDuplicateKeys(
            host,
            text,
            prop.children[1],
            `server ${JSON.stringify(prop.children[0]?.value)}`,
          );
    }
    for (const [key, entry] of Object.entries(table)) {
      if (!isObject(entry)) {
        out.notEntries.push({ table: t, key, what: kindOf(entry, host.format) });
        continue;
      }
      const by = first.get(key);
      if (by !== undefined) out.shadowed.push({ table: t, key, entry, by });
      else {
        first.set(key, t);
        out.servers.push({ table: t, key, entry });
      }
    }
  }
  return out;
}

/**
 * The servers of a host file: name → entry, over all its tables in the host's order (an entry
 * shadowed by one of the same name in an earlier table is not listed: the host does not run it
 * for this project). Entries that are not objects are skipped.
 */
export function readServers(host: HostFile, text: string): Record<string, Entry> {
  const out = entryMap<Entry>();
  for (const s of readHostServers(host, text).servers) out[s.key] = s.entry;
  return out;
}

/** The value at a path of a host file's document (an entry of a table), or undefined. */
export function entryAt(host: HostFile, text: string, table: string[], key: string): Entry | undefined {
  const doc = parseDocument(host, text);
  let at: unknown = doc;
  for (const k of [...table, key]) {
    if (!isObject(at)) return undefined;
    at = at[k];
  }
  return isObject(at) ? at : undefined;
}

/**
 * A map from a host file's keys, as an object without a prototype: any key a file can hold,
 * "__proto__" included, is an own property when assigned, and no key is inherited.
 */
export function entryMap<V>(): Record<string, V> {
  return Object.create(null) as Record<string, V>;
}

/** Indentation as the file already uses it, so an edited entry looks like its neighbours. */
function formatting(text: string): FormattingOptions {
  const m = /\n([ \t]+)\S/.exec(text);
  const indent = m?.[1] ?? "  ";
  const eol = text.includes("\r\n") ? "\r\n" : "\n";
  return indent.startsWith("\t")
    ? { insertSpaces: false, tabSize: 1, eol }
    : { insertSpaces: true, tabSize: indent.length, eol };
}

/** How `source` spelled the value at `path`, when it is `value` there; else null. */
function jsonSpelling(
  source: { text: string; tree: Node | undefined } | null,
  path: string[],
  value: unknown,
) {
  const node = source?.tree ? findNodeAtLocation(source.tree, path) : undefined;
  if (!source || node === undefined || !sameJson(getNodeValue(node), value)) return null;
  return source.text.slice(node.offset, node.offset + node.length);
}

/**
 * One JSONC entry edited from what it is to `next`: only the keys whose values differ (for wrap
 * and unwrap, `command` and `args`), each in place. Comments inside the entry, the spelling of
 * every other key (an inline `"env": { … }`, trailing commas) stay. A key added goes right after
 * `command`; a value `source` spelled the same way (unwrap: the file before wrap) is written
 * back as it was there.
 */
function editJsonEntry(
  host: HostFile,
  text: string,
  path: string[],
  next: Entry,
  source: { text: string; tree: Node | undefined } | null,
): string {
  const options = formatting(text);
  const current = entryAt(host, text, path.slice(0, -1), path.at(-1)!);
  if (current === undefined)
    return applyEdits(text, modify(text, path, next, { formattingOptions: options }));
  let out = text;
  const changed = [...new Set([...Object.keys(current), ...Object.keys(next)])].filter(
    (k) => !sameJson(current[k], next[k]),
  );
  for (const k of changed) {
    const at = [...path, k];
    const spelled = next[k] === undefined ? null : jsonSpelling(source, at, next[k]);
    const edited = editInLine(out, path, k, next[k], spelled);
    if (edited !== null) {
      out = edited;
      continue;
    }
    out = applyEdits(
      out,
      modify(out, at, next[k], {
        formattingOptions: options,
        getInsertionIndex: (props) =>
          props.includes("command") ? props.indexOf("command") + 1 : props.length,
      }),
    );
    const tree = spelled === null ? undefined : parseTree(out, [], { allowTrailingComma: true });
    const node = tree ? findNodeAtLocation(tree, at) : undefined;
    if (spelled !== null && node !== undefined)
      out = out.slice(0, node.offset) + spelled + out.slice(node.offset + node.length);
  }
  return out;
}

/**
 * The edits jsonc-parser's modify would reformat, done by hand: a key added to or removed from
 * an entry, where modify re-indents the whole lines it touches (an entry written on one line
 * would be spread over several, and stay so after unwrap). A value replaced keeps its place and
 * a value added right after `command` is written on the same line, `, "args": [...]`; a key
 * removed takes the comma before it with it. Null when the entry is not laid out simply enough
 * (a comment in the way, no `command`): modify does it then.
 */
function editInLine(
  text: string,
  path: string[],
  key: string,
  value: unknown,
  spelled: string | null,
): string | null {
  const tree = parseTree(text, [], { allowTrailingComma: true });
  const entry = tree ? findNodeAtLocation(tree, path) : undefined;
  if (entry?.type !== "object") return null;
  const props = entry.children ?? [];
  const index = props.findIndex((p) => p.children?.[0]?.value === key);
  const end = (n: Node) => n.offset + n.length;
  if (value === undefined) {
    if (index < 1) return null;
    const gap = text.slice(end(props[index - 1]!), props[index]!.offset);
    return /^\s*,\s*$/.test(gap)
      ? text.slice(0, end(props[index - 1]!)) + text.slice(end(props[index]!))
      : null;
  }
  const written = spelled ?? inlineJson(value);
  if (index >= 0) {
    const v = props[index]!.children?.[1];
    if (v === undefined) return null;
    // a value spread over lines by modify keeps the file's layout for long lists; one kept on
    // its line stays on it
    if (spelled === null && text.slice(v.offset, end(v)).includes("\n")) return null;
    return text.slice(0, v.offset) + written + text.slice(end(v));
  }
  // a new key: on the command's line only when the whole entry is on one line
  const command = props.find((p) => p.children?.[0]?.value === "command");
  if (command === undefined || text.slice(entry.offset, end(entry)).includes("\n")) return null;
  const after = end(command);
  return `${text.slice(0, after)}, ${JSON.stringify(key)}: ${written}${text.slice(after)}`;
}

/** A value on one line, as a person writes it: `["a", "b"]`, `{ "A": "1" }`. */
function inlineJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(inlineJson).join(", ")}]`;
  if (isObject(v))
    return `{ ${Object.entries(v)
      .map(([k, x]) => `${JSON.stringify(k)}: ${inlineJson(x)}`)
      .join(", ")} }`;
  return JSON.stringify(v);
}

/**
 * The text with some entries replaced, each at its own place (a table's path and a key). Each
 * entry is edited in place, so comments and the formatting of everything else stay: JSONC key by
 * key through jsonc-parser's edits (only the values that change), TOML through editTomlEntries
 * (only the changed values of each server, whether it is a section, dotted keys or an inline
 * table). A TOML server it cannot edit safely where it stands is written again as a whole
 * document, without its comments; unwrap still gives back the original bytes when the file was
 * not changed since.
 */
export function replaceEntries(
  host: HostFile,
  text: string,
  entries: ServerEntry[],
  /** the file before wrap, whose spelling of a restored value is kept */
  source?: string,
): string {
  // edited without the byte order mark (offsets, TOML's first line), written back with it
  const { bom, body } = splitBom(text);
  const from = source === undefined ? undefined : splitBom(source).body;
  return bom + replaceEntriesIn(host, body, entries, from);
}

function replaceEntriesIn(host: HostFile, text: string, entries: ServerEntry[], source?: string): string {
  if (host.format === "toml") {
    const [key] = host.tables[0]!;
    const byName = entryMap<Entry>();
    for (const e of entries) byName[e.key] = e.entry;
    const edited = editTomlEntries(text, key!, byName, source);
    if (edited !== null) return edited;
    const doc = parseToml(text) as Record<string, unknown>;
    const table = (doc[key!] ?? entryMap()) as Record<string, unknown>;
    for (const [k, v] of Object.entries(byName)) table[k] = v;
    doc[key!] = table;
    return `${stringifyToml(doc)}\n`;
  }
  const from =
    source === undefined ? null : { text: source, tree: parseTree(source, [], { allowTrailingComma: true }) };
  let out = text;
  for (const e of entries) out = editJsonEntry(host, out, [...e.table, e.key], e.entry, from);
  return out;
}
