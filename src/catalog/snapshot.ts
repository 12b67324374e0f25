import { canonicalString, sameJson, sha256Tag } from "../util/canonical.js";
import type { CatalogSnapshot, InvalidEntry, Tool } from "./types.js";

/**
 * Per-tool fingerprint: "sha256:<hex>" of the RFC 8785 canonical form of the whole tool object
 * as received (name, title, description, inputSchema, outputSchema, annotations, execution,
 * icons, _meta and anything else). Key order and whitespace do not matter; every value does.
 */
export function toolFingerprint(t: Tool): string {
  return sha256Tag(canonicalString(t));
}

/** Catalog fingerprint over per-tool fingerprints: order-independent by construction. */
export function catalogFingerprint(toolFingerprints: readonly string[]): string {
  // Fingerprints are "sha256:<hex>": ASCII that needs no escaping, so JSON.stringify is RFC 8785 here.
  return sha256Tag(JSON.stringify([...toolFingerprints].sort()));
}

/** One entry of a tool list with its fingerprint. */
export interface Listed {
  tool: Tool;
  fingerprint: string;
}

export interface IndexedCatalog {
  /** what is served: server order, one entry per name listed with one definition */
  tools: Tool[];
  /** the served tools by name */
  byName: Map<string, Listed>;
  /**
   * Names listed more than once with definitions that differ (by fingerprint): their distinct
   * definitions, in server order. None of them is served: which one a server runs is its own
   * business, and the human would approve (and the agent see) one while the server may act on
   * another.
   */
  ambiguous: Map<string, Listed[]>;
  /** names listed more than once: every entry of each, in server order */
  repeated: Map<string, Listed[]>;
  /** every entry kept (an object with a string name that could be fingerprinted), in server order */
  listed: Tool[];
  /** the fingerprint of each entry of `listed`, in the same order: the catalog fingerprint covers them all */
  fingerprints: string[];
  duplicateNames: string[];
  invalid: InvalidEntry[];
  received: number;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * Keeps what can be served: objects with a string `name`, fingerprintable, each name listed once
 * or always with the same definition (its copies are one tool). A name listed with different
 * definitions is kept in `listed` and `ambiguous`, never served. Never throws, whatever the list holds.
 */
export function indexTools(list: unknown, previous?: IndexedCatalog["byName"]): IndexedCatalog {
  const byName = new Map<string, Listed>();
  const repeated = new Map<string, Listed[]>();
  const order: string[] = [];
  const listed: Tool[] = [];
  const fingerprints: string[] = [];
  const invalid: InvalidEntry[] = [];
  const items: unknown[] = Array.isArray(list) ? list : [];
  if (!Array.isArray(list)) invalid.push({ index: -1, reason: "the tool list is not an array" });
  for (let i = 0; i < items.length; i++) {
    const t = items[i];
    if (!isRecord(t)) {
      invalid.push({ index: i, reason: "not a JSON object" });
      continue;
    }
    const name = Object.hasOwn(t, "name") ? t.name : undefined;
    if (typeof name !== "string") {
      invalid.push({ index: i, reason: "no string name" });
      continue;
    }
    const first = byName.get(name);
    let fingerprint: string;
    try {
      // A tool equal, member by member, to an earlier entry of the same name in this list, or to
      // the one of that name in the previous snapshot, has the same RFC 8785 form, hence the same
      // fingerprint: comparing two parsed trees costs a fraction of serializing and hashing one
      // (tests check sameJson against canonical equality).
      const before = first ?? previous?.get(name);
      fingerprint =
        before !== undefined && sameJson(t, before.tool) ? before.fingerprint : toolFingerprint(t as Tool);
    } catch (err) {
      const why = err instanceof Error ? err.message : String(err);
      invalid.push({ index: i, reason: `cannot be fingerprinted (${why})` });
      continue;
    }
    const entry = { tool: t as Tool, fingerprint };
    listed.push(entry.tool);
    fingerprints.push(fingerprint);
    if (first === undefined) {
      byName.set(name, entry);
      order.push(name);
      continue;
    }
    const all = repeated.get(name);
    if (all) all.push(entry);
    else repeated.set(name, [first, entry]);
  }
  const ambiguous = new Map<string, Listed[]>();
  for (const [name, all] of repeated) {
    const distinct = [...new Map(all.map((e) => [e.fingerprint, e])).values()];
    if (distinct.length < 2) continue;
    ambiguous.set(name, distinct);
    byName.delete(name);
  }
  const tools: Tool[] = [];
  for (const name of order) {
    const e = byName.get(name);
    if (e) tools.push(e.tool);
  }
  return {
    tools,
    byName,
    ambiguous,
    repeated,
    listed,
    fingerprints,
    duplicateNames: [...repeated.keys()],
    invalid,
    received: items.length,
  };
}

/**
 * Builds the verified snapshot the gateway serves from. `tools` is every page concatenated in
 * server order; `pages` is how many pages were fetched. A name listed more than once with the
 * same definition is served once; with different definitions it is not served at all
 * (`ambiguous`); entries that are not tools are dropped; all of these are recorded in `coverage`.
 * The catalog fingerprint covers every entry kept (`listed`), copies and ambiguous names included,
 * so a change to any of them is a new revision.
 * `opts.complete` is false when the caller stopped before the last page. `opts.previous` is the
 * snapshot this one follows, if any: its fingerprints are reused for tools that did not change,
 * which is most of them on a rebuild.
 */
export function snapshotOf(
  tools: Tool[],
  pages: number,
  opts: { complete?: boolean; previous?: CatalogSnapshot | null } = {},
): CatalogSnapshot {
  const ix = indexTools(tools, opts.previous?.byName);
  return {
    fingerprint: catalogFingerprint(ix.fingerprints),
    tools: ix.tools,
    byName: ix.byName,
    ambiguous: ix.ambiguous,
    repeated: ix.repeated,
    listed: ix.listed,
    coverage: {
      pages,
      tools: ix.received,
      complete: opts.complete ?? true,
      duplicateNames: ix.duplicateNames,
      // only when there are some: the coverage of a catalog without them (every catalog_revised
      // record of an ordinary server) is written as it was before the field existed
      ...(ix.ambiguous.size > 0 ? { ambiguousNames: [...ix.ambiguous.keys()] } : {}),
      invalid: ix.invalid,
    },
  };
}
