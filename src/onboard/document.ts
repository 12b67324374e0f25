import {
  applyEdits,
  type FormattingOptions,
  getNodeValue,
  modify,
  type ParseError,
  parseTree,
  printParseErrorCode,
} from "jsonc-parser";
import { parse as parseToml, stringify as stringifyToml } from "smol-toml";
import type { HostFile } from "./hosts.js";
import { editTomlEntries } from "./tomlEdit.js";

/** A configuration problem with a host file: one sentence naming the file, nothing written. */
export class OnboardError extends Error {
  override name = "OnboardError";
}

export type Entry = Record<string, unknown>;

function isObject(v: unknown): v is Entry {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** Both parsers read recursively: a document nested thousands deep exhausts the stack. */
function tooDeep(host: HostFile): OnboardError {
  return new OnboardError(`${host.file} is nested too deep to read; nothing was written.`);
}

function parseDocument(host: HostFile, text: string): unknown {
  if (host.format === "toml") {
    try {
      return parseToml(text);
    } catch (e) {
      if (e instanceof RangeError) throw tooDeep(host);
      const first = (e as Error).message.split("\n")[0];
      throw new OnboardError(`${host.file} is not valid TOML (${first}); nothing was written.`);
    }
  }
  const errors: ParseError[] = [];
  let doc: unknown;
  try {
    // Through the syntax tree, not jsonc-parser's parse: parse assigns keys onto plain objects,
    // so a server keyed "__proto__" (which the host, reading with JSON.parse, does run) would
    // become a prototype and vanish. getNodeValue builds objects without a prototype: every key
    // stays an own key, and no key ("constructor", "toString") is found on Object.prototype.
    const tree = parseTree(text, errors, { allowTrailingComma: true });
    doc = tree === undefined ? undefined : getNodeValue(tree);
  } catch (e) {
    if (e instanceof RangeError) throw tooDeep(host);
    throw e;
  }
  if (errors.length > 0) {
    const e = errors[0]!;
    const line = text.slice(0, e.offset).split("\n").length;
    throw new OnboardError(
      `${host.file} does not parse (${printParseErrorCode(e.error)} at line ${line}); nothing was written.`,
    );
  }
  return doc;
}

function tableName(table: string[]): string {
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

/** Which table an entry of this name is read from: the first that has it, as the host does. */
function tableOf(host: HostFile, doc: unknown, key: string): string[] {
  for (const t of host.tables) if (tableAt(host, doc, t)?.[key] !== undefined) return t;
  return host.tables[host.tables.length - 1]!;
}

/**
 * The servers of a host file: name → entry, over all its tables in the host's order (an entry
 * shadowed by one of the same name in an earlier table is not listed: the host does not run it
 * for this project). Entries that are not objects are skipped.
 */
export function readServers(host: HostFile, text: string): Record<string, Entry> {
  const out = entryMap<Entry>();
  const doc = parseDocument(host, text);
  if (doc === undefined) return out;
  if (!isObject(doc)) throw new OnboardError(`${host.file} is not an object; nothing was written.`);
  for (const t of host.tables) {
    for (const [k, v] of Object.entries(tableAt(host, doc, t) ?? {}))
      if (isObject(v) && !Object.hasOwn(out, k)) out[k] = v;
  }
  return out;
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

/**
 * The text with some entries replaced. Each entry is edited in place, so comments and the
 * formatting of everything else stay: JSONC through jsonc-parser's edits, TOML through
 * editTomlEntries (only the changed values of each server, whether it is a section, dotted keys
 * or an inline table). A TOML server it cannot edit safely where it stands is written again as
 * a whole document, without its comments; unwrap still gives back the original bytes when the
 * file was not changed since.
 */
export function replaceEntries(
  host: HostFile,
  text: string,
  entries: Record<string, Entry>,
  /** TOML: the file before wrap, whose spelling of a restored value is kept */
  source?: string,
): string {
  if (host.format === "toml") {
    const [key] = host.tables[0]!;
    const edited = editTomlEntries(text, key!, entries, source);
    if (edited !== null) return edited;
    const doc = parseToml(text) as Record<string, unknown>;
    const table = (doc[key!] ?? entryMap()) as Record<string, unknown>;
    for (const [k, v] of Object.entries(entries)) table[k] = v;
    doc[key!] = table;
    return `${stringifyToml(doc)}\n`;
  }
  let out = text;
  const options = formatting(text);
  for (const [k, v] of Object.entries(entries)) {
    const table = tableOf(host, parseDocument(host, out), k);
    out = applyEdits(out, modify(out, [...table, k], v, { formattingOptions: options }));
  }
  return out;
}
