import { canonicalString, sameJson, sha256Tag } from "../util/canonical.js";
import type { CatalogSnapshot, Coverage, InvalidEntry, Tool, UnfingerprintableName } from "./types.js";

/**
 * Per-tool fingerprint: "sha256:<hex>" of the RFC 8785 canonical form of the whole tool object
 * as received (name, title, description, inputSchema, outputSchema, annotations, execution,
 * icons, _meta and anything else). Key order and whitespace do not matter; every value does.
 */
export function toolFingerprint(t: Tool): string {
  return sha256Tag(canonicalString(t));
}

/**
 * Catalog fingerprint over per-tool fingerprints: order-independent by construction. A name the
 * server also lists with entries that cannot be fingerprinted (withheld for them) adds one marker,
 * its name and how many such entries it has, so that such an entry appearing or going is a new
 * revision; a catalog without any has the fingerprint it always had.
 */
export function catalogFingerprint(
  toolFingerprints: readonly string[],
  unfingerprintable: ReadonlyMap<string, number> = new Map(),
): string {
  // Fingerprints are "sha256:<hex>": ASCII that needs no escaping, so JSON.stringify is RFC 8785 here.
  // A marker starts "unfingerprintable:", so it never equals a tool's fingerprint.
  const markers = [...unfingerprintable].map(([name, n]) => unfingerprintableMarker(name, n));
  return sha256Tag(JSON.stringify([...toolFingerprints, ...markers].sort()));
}

/** The marker of a name with `entries` entries that cannot be fingerprinted (canonicalString: any name, lone surrogates included). */
function unfingerprintableMarker(name: string, entries: number): string {
  return `unfingerprintable:${sha256Tag(canonicalString([name, entries]))}`;
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
  /**
   * Names listed with entries kept and also with entries that cannot be fingerprinted (dropped,
   * in `invalid`): how many of the latter each. Every such name is ambiguous: the gateway cannot
   * tell whether the server would run a definition it never fingerprinted.
   */
  unfingerprintable: Map<string, number>;
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
 * definitions, or also with an entry that cannot be fingerprinted, is kept in `listed` and
 * `ambiguous`, never served. `stored` adds the entries that could not be fingerprinted of a stored
 * revision (which keeps only the others): its coverage's `unfingerprintable`. Never throws,
 * whatever the list holds.
 */
export function indexTools(
  list: unknown,
  previous?: IndexedCatalog["byName"],
  stored: readonly UnfingerprintableName[] = [],
): IndexedCatalog {
  const byName = new Map<string, Listed>();
  const repeated = new Map<string, Listed[]>();
  const order: string[] = [];
  const listed: Tool[] = [];
  const fingerprints: string[] = [];
  const invalid: InvalidEntry[] = [];
  // entries of a string name that could not be fingerprinted, by name (stored ones first)
  const dropped = new Map<string, number>();
  for (const u of stored) dropped.set(u.name, (dropped.get(u.name) ?? 0) + u.entries);
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
      dropped.set(name, (dropped.get(name) ?? 0) + 1);
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
  // Deny first: a name also listed with an entry that cannot be fingerprinted is ambiguous too,
  // whatever its other entries are (that entry differs from each of them, as parsed). A name with
  // no entry kept is simply not in the catalog, as before.
  const unfingerprintable = new Map<string, number>();
  for (const [name, n] of dropped) {
    const kept = byName.get(name);
    if (!kept && !ambiguous.has(name)) continue;
    unfingerprintable.set(name, n);
    if (kept) {
      ambiguous.set(name, [kept]);
      byName.delete(name);
    }
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
    unfingerprintable,
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
  opts: {
    complete?: boolean;
    previous?: CatalogSnapshot | null;
    /** a stored revision's entries that could not be fingerprinted (its coverage's `unfingerprintable`) */
    unfingerprintable?: readonly UnfingerprintableName[];
  } = {},
): CatalogSnapshot {
  const ix = indexTools(tools, opts.previous?.byName, opts.unfingerprintable);
  return {
    fingerprint: catalogFingerprint(ix.fingerprints, ix.unfingerprintable),
    tools: ix.tools,
    byName: ix.byName,
    ambiguous: ix.ambiguous,
    unfingerprintable: ix.unfingerprintable,
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
      // likewise: a stored revision keeps only the entries it could fingerprint, and these
      // reproduce its fingerprint and its ambiguous names (storedSnapshot)
      ...(ix.unfingerprintable.size > 0
        ? { unfingerprintable: [...ix.unfingerprintable].map(([name, entries]) => ({ name, entries })) }
        : {}),
      invalid: ix.invalid,
    },
  };
}

/**
 * A stored revision as a snapshot: its entries kept, and, from its coverage, the names also listed
 * with entries that could not be fingerprinted (which the store cannot keep as listed: JSON has no
 * Infinity), so that it has the fingerprint and the ambiguous names it was recorded with. Its
 * coverage is the one recorded where that can be read (storedCoverage): rebuilt from the entries
 * kept alone, it counted no entry dropped, and `catalog show` never named one. What the coverage
 * says is read warily (a row can be rewritten by another process): anything but a list of
 * `{name: string, entries: positive integer}` adds nothing.
 */
export function storedSnapshot(r: { tools: Tool[]; coverage?: Coverage | null }): CatalogSnapshot {
  const snap = snapshotOf(r.tools, 1, { unfingerprintable: storedUnfingerprintable(r.coverage) });
  return { ...snap, coverage: storedCoverage(r.coverage, snap.coverage) };
}

/**
 * The coverage a revision was recorded with, over `rebuilt` (the one its entries kept make): the
 * pages fetched, the entries received, whether every page was, and the entries dropped with their
 * reasons, which the entries kept cannot tell. Each is taken only when it has its recorded shape
 * (a row can be rewritten by another process): a count that is no whole number, or fewer entries
 * received than are kept and dropped, a `complete` that is no boolean, a dropped entry that is not
 * `{index: whole number, reason: string}`, adds nothing, and never throws. What the entries
 * themselves decide (duplicate and ambiguous names, the names withheld for entries that could not
 * be fingerprinted) stays the rebuilt one.
 */
function storedCoverage(coverage: unknown, rebuilt: Coverage): Coverage {
  const said = (key: string): unknown =>
    isRecord(coverage) && Object.hasOwn(coverage, key) ? coverage[key] : undefined;
  const listed = said("invalid");
  const invalid = (Array.isArray(listed) ? listed : []).filter(
    (i): i is InvalidEntry =>
      isRecord(i) &&
      Number.isSafeInteger(i.index) &&
      (i.index as number) >= -1 &&
      typeof i.reason === "string",
  );
  const pages = said("pages");
  const received = said("tools");
  const complete = said("complete");
  // the stored entries and the dropped ones: fewer received cannot be what was recorded
  const atLeast = rebuilt.tools + invalid.length;
  return {
    ...rebuilt,
    pages: Number.isSafeInteger(pages) && (pages as number) >= 1 ? (pages as number) : rebuilt.pages,
    tools: Number.isSafeInteger(received) && (received as number) >= atLeast ? (received as number) : atLeast,
    complete: typeof complete === "boolean" ? complete : rebuilt.complete,
    invalid: [
      ...invalid.map((i) => ({ index: i.index, reason: i.reason })),
      // a stored entry that cannot be fingerprinted (the gateway stores none: only a rewritten row
      // holds one, nested past the limit) is dropped all the same, and said so, never hidden
      ...rebuilt.invalid.map((i) => ({
        index: i.index,
        reason: `stored entry, rewritten in the store: ${i.reason}`,
      })),
    ],
  };
}

function storedUnfingerprintable(coverage: Coverage | null | undefined): UnfingerprintableName[] {
  const said: unknown =
    isRecord(coverage) && Object.hasOwn(coverage, "unfingerprintable")
      ? coverage.unfingerprintable
      : undefined;
  if (!Array.isArray(said)) return [];
  return said.filter(
    (u): u is UnfingerprintableName =>
      isRecord(u) &&
      typeof u.name === "string" &&
      Number.isSafeInteger(u.entries) &&
      (u.entries as number) > 0,
  );
}
