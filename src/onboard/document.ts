import {
  applyEdits,
  type FormattingOptions,
  modify,
  type ParseError,
  parse,
  printParseErrorCode,
} from "jsonc-parser";
import { parse as parseToml, stringify as stringifyToml } from "smol-toml";
import type { HostFile } from "./hosts.js";

/** A configuration problem with a host file: one sentence naming the file, nothing written. */
export class OnboardError extends Error {
  override name = "OnboardError";
}

export type Entry = Record<string, unknown>;

function isObject(v: unknown): v is Entry {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** The server table of a host file: key → entry (entries that are not objects are skipped). */
export function readServers(host: HostFile, text: string): Record<string, Entry> {
  let doc: unknown;
  if (host.format === "toml") {
    try {
      doc = parseToml(text);
    } catch (e) {
      const first = (e as Error).message.split("\n")[0];
      throw new OnboardError(`${host.file} is not valid TOML (${first}); nothing was written.`);
    }
  } else {
    const errors: ParseError[] = [];
    doc = parse(text, errors, { allowTrailingComma: true });
    if (errors.length > 0) {
      const e = errors[0]!;
      const line = text.slice(0, e.offset).split("\n").length;
      throw new OnboardError(
        `${host.file} does not parse (${printParseErrorCode(e.error)} at line ${line}); nothing was written.`,
      );
    }
  }
  if (doc === undefined) return {};
  if (!isObject(doc)) throw new OnboardError(`${host.file} is not an object; nothing was written.`);
  const table = doc[host.serversKey];
  if (table === undefined) return {};
  if (!isObject(table))
    throw new OnboardError(`${host.file}: "${host.serversKey}" is not an object; nothing was written.`);
  const out: Record<string, Entry> = {};
  for (const [k, v] of Object.entries(table)) if (isObject(v)) out[k] = v;
  return out;
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
 * The text with some entries replaced. JSONC: each entry is edited in place, so comments and the
 * formatting of everything else stay. TOML: the document is written again (smol-toml keeps no
 * comments; unwrap gives back the original bytes from the backup).
 */
export function replaceEntries(host: HostFile, text: string, entries: Record<string, Entry>): string {
  if (host.format === "toml") {
    const doc = parseToml(text) as Record<string, unknown>;
    const table = (doc[host.serversKey] ?? {}) as Record<string, unknown>;
    for (const [k, v] of Object.entries(entries)) table[k] = v;
    doc[host.serversKey] = table;
    return `${stringifyToml(doc)}\n`;
  }
  let out = text;
  const options = formatting(text);
  for (const [k, v] of Object.entries(entries)) {
    out = applyEdits(out, modify(out, [host.serversKey, k], v, { formattingOptions: options }));
  }
  return out;
}
