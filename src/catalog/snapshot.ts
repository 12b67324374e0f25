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

export interface IndexedCatalog {
  tools: Tool[];
  byName: Map<string, { tool: Tool; fingerprint: string }>;
  duplicateNames: string[];
  invalid: InvalidEntry[];
  received: number;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * Keeps what can be served: objects with a string `name`, first occurrence of each name,
 * fingerprintable. Never throws, whatever the list holds.
 */
export function indexTools(list: unknown, previous?: IndexedCatalog["byName"]): IndexedCatalog {
  const tools: Tool[] = [];
  const byName = new Map<string, { tool: Tool; fingerprint: string }>();
  const duplicates = new Set<string>();
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
    if (byName.has(name)) {
      duplicates.add(name);
      continue;
    }
    let fingerprint: string;
    try {
      // A tool equal, member by member, to the one of the same name in the previous snapshot has
      // the same RFC 8785 form, hence the same fingerprint: comparing two parsed trees costs a
      // fraction of serializing and hashing one (tests check sameJson against canonical equality).
      const before = previous?.get(name);
      fingerprint =
        before !== undefined && sameJson(t, before.tool) ? before.fingerprint : toolFingerprint(t as Tool);
    } catch (err) {
      const why = err instanceof Error ? err.message : String(err);
      invalid.push({ index: i, reason: `cannot be fingerprinted (${why})` });
      continue;
    }
    byName.set(name, { tool: t as Tool, fingerprint });
    tools.push(t as Tool);
  }
  return { tools, byName, duplicateNames: [...duplicates], invalid, received: items.length };
}

/**
 * Builds the verified snapshot the gateway serves from. `tools` is every page concatenated in
 * server order; `pages` is how many pages were fetched. Duplicate names keep the first
 * occurrence; entries that are not tools are dropped; both are recorded in `coverage`.
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
  const fps: string[] = [];
  for (const { fingerprint } of ix.byName.values()) fps.push(fingerprint);
  return {
    fingerprint: catalogFingerprint(fps),
    tools: ix.tools,
    byName: ix.byName,
    coverage: {
      pages,
      tools: ix.received,
      complete: opts.complete ?? true,
      duplicateNames: ix.duplicateNames,
      invalid: ix.invalid,
    },
  };
}
