/** A tool object exactly as the server sent it in `tools/list`. */
export type Tool = { name: string; [k: string]: unknown };

export interface InvalidEntry {
  /** position in the list as received (all pages concatenated) */
  index: number;
  reason: string;
}

/** A name with `entries` entries that cannot be fingerprinted, beside entries that can. */
export interface UnfingerprintableName {
  name: string;
  entries: number;
}

export interface Coverage {
  /** pages fetched to build the list */
  pages: number;
  /** entries received across every page, before duplicates and invalid entries were dropped */
  tools: number;
  /** every page was fetched (the caller says so; default true) */
  complete: boolean;
  /** names that appeared more than once (served once when every entry of the name is the same definition) */
  duplicateNames: string[];
  /**
   * names listed more than once with definitions that differ (by fingerprint): not served, and
   * calls to them refused. Present only when there are some (absent, too, from coverage recorded
   * before this field existed).
   */
  ambiguousNames?: string[];
  /**
   * names listed with entries kept and also with entries that cannot be fingerprinted (dropped, in
   * `invalid`; a number such as 1e400): how many of the latter each. Such a name is ambiguous (in
   * `ambiguousNames`), and this is what the catalog fingerprint covers of those entries. Present
   * only when there are some.
   */
  unfingerprintable?: UnfingerprintableName[];
  /** entries dropped because they are not a tool object with a string name, or cannot be fingerprinted */
  invalid: InvalidEntry[];
}

export interface CatalogSnapshot {
  /** "sha256:<hex>" over the canonical JSON array of the sorted per-tool fingerprints */
  fingerprint: string;
  /** the tools served to clients: server order, as received (one of each name listed with one definition) */
  tools: Tool[];
  byName: Map<string, { tool: Tool; fingerprint: string }>;
  /**
   * names listed with definitions that differ, or also with an entry that cannot be fingerprinted:
   * their distinct definitions that could be, server order; never served
   */
  ambiguous: Map<string, { tool: Tool; fingerprint: string }[]>;
  /**
   * names also listed with entries that cannot be fingerprinted: how many each (every one of them
   * is ambiguous; its definitions there are the ones that could be fingerprinted). Absent from
   * snapshots made before it existed.
   */
  unfingerprintable?: Map<string, number>;
  /** names listed more than once: every entry of each, server order */
  repeated: Map<string, { tool: Tool; fingerprint: string }[]>;
  /** every entry kept, server order, copies and ambiguous names included: what a revision stores */
  listed: Tool[];
  coverage: Coverage;
}

export type Classification = "expands" | "narrows" | "cosmetic";

export interface FieldChange {
  /** where, e.g. "inputSchema.properties.target"; "" for the tool as a whole */
  path: string;
  /** what, e.g. "property added", "enum widened", "default changed", "required loosened" */
  change: string;
  before?: unknown;
  after?: unknown;
  classification: Classification;
  /** for an added property: why its name or format looks like a new destination, selector or secret */
  sensitive?: string[];
  /** for a changed description or title: effect verbs that appear in the new text and not in the old */
  newEffects?: string[];
  /** one human line that makes the context visible, e.g. `target: default "preview" (enum preview|production)` */
  detail?: string;
}

export interface DiffEntry {
  kind: "added" | "removed" | "modified";
  tool: string;
  classification: Classification;
  changes: FieldChange[];
  /** the other side's name when a removed and an added tool look like a rename */
  renameCandidate?: string;
  fingerprintBefore?: string;
  fingerprintAfter?: string;
  /** the distinct definitions' fingerprints of a name listed with different ones (not served), before and after */
  ambiguousBefore?: string[];
  ambiguousAfter?: string[];
}

export interface RenameCandidate {
  from: string;
  to: string;
  similarity: string;
}

export interface CatalogDiff {
  entries: DiffEntry[];
  renameCandidates: RenameCandidate[];
  /** true when any entry expands authority */
  expands: boolean;
  /**
   * names the after side lists with different definitions (not served, calls refused), sorted;
   * present only when there are some
   */
  ambiguous?: string[];
}

const RANK: Record<Classification, number> = { cosmetic: 0, narrows: 1, expands: 2 };

/** The stronger of two classifications: expands > narrows > cosmetic. */
export function maxClass(a: Classification, b: Classification): Classification {
  return RANK[a] >= RANK[b] ? a : b;
}

/** The classification of a list of changes (cosmetic when empty). */
export function classOf(changes: readonly { classification: Classification }[]): Classification {
  let c: Classification = "cosmetic";
  for (const ch of changes) {
    c = maxClass(c, ch.classification);
    if (c === "expands") break;
  }
  return c;
}
