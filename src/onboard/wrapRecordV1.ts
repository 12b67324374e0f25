/**
 * Wrap records as portcullis wrote them before records were kept per entry place
 * ("portcullis-wrap/1"): entries keyed by the server's name alone, with no word of the table it
 * stands in. Every user who wrapped with such a build has them, so they are read and carried over
 * to the current format, in memory; the next wrap or unwrap of the file writes it in the current
 * format. The texts are kept as they are: originalText is the file before wrap, what unwrap gives
 * back byte for byte.
 */
import { sameJson } from "../util/canonical.js";
import { type Entry, entryAt, entryMap, entryPathKey, OnboardError } from "./document.js";
import type { HostFile } from "./hosts.js";
import type { RecordedEntry, WrapRecord } from "./wrapRecord.js";

export const WRAP_FORMAT_V1 = "portcullis-wrap/1";

const isObj = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * The server tables of a file, with their paths, in the order the hosts read them. A v1 wrap of
 * ~/.claude.json took the project's table before the user's, so the project tables come first.
 * Each top-level value is read once, not once per entry and project (~/.claude.json can be large).
 */
function serverTables(host: HostFile, text: string): { path: string[]; table: Record<string, unknown> }[] {
  const top = (key: string) => entryAt(host, text, [], key);
  if (host.format === "toml") {
    const table = top("mcp_servers");
    return table ? [{ path: ["mcp_servers"], table }] : [];
  }
  const out: { path: string[]; table: Record<string, unknown> }[] = [];
  for (const [project, v] of Object.entries(top("projects") ?? {}))
    if (isObj(v) && isObj(v.mcpServers))
      out.push({ path: ["projects", project, "mcpServers"], table: v.mcpServers });
  for (const key of ["mcpServers", "servers"]) {
    const table = top(key);
    if (table) out.push({ path: [key], table });
  }
  return out;
}

/**
 * A v1 record in the current format, or why it cannot be read (then it is refused as damaged,
 * as a current record would be). Each entry is placed where the record's own wrappedText (the
 * file as that wrap wrote it) holds the entry wrap wrote.
 */
export function carryOverV1(r: Record<string, unknown>): WrapRecord | string {
  const { file, originalText, wrappedText, entries } = r;
  if (typeof file !== "string" || typeof originalText !== "string" || typeof wrappedText !== "string")
    return "its file or texts are missing";
  if (!isObj(entries)) return "its entries are missing";
  // the format follows the name, as for a file given by path: Codex's TOML, every other host JSONC
  const host: HostFile = {
    host: "file",
    file,
    format: file.endsWith(".toml") ? "toml" : "jsonc",
    tables: [],
  };
  let tables: ReturnType<typeof serverTables>;
  try {
    tables = serverTables(host, wrappedText);
  } catch (e) {
    if (e instanceof OnboardError) return "the file as wrap wrote it does not parse";
    throw e;
  }
  const out = entryMap<RecordedEntry>();
  for (const [key, v] of Object.entries(entries)) {
    if (!isObj(v) || typeof v.label !== "string" || !isObj(v.original) || !isObj(v.wrapped))
      return "an entry is incomplete";
    const wrapped: Entry = v.wrapped;
    // compared as JSON: a TOML table has no prototype, the record's copy has Object's
    const place = tables.find((t) => Object.hasOwn(t.table, key) && sameJson(t.table[key], wrapped));
    if (place === undefined) return `the entry "${key}" is not in the file as wrap wrote it`;
    out[entryPathKey(place.path, key)] = {
      path: [...place.path, key],
      label: v.label,
      original: v.original,
      wrapped,
    };
  }
  return { format: "portcullis-wrap/2", file, originalText, wrappedText, entries: out };
}
