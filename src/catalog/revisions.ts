/**
 * Catalog revisions per server label, in the store's `catalog_revisions` table (migration 1).
 * A revision is an integer that grows by one each time the catalog fingerprint differs from the
 * latest revision's; the same catalog again (a restart, a reconnect) keeps the latest revision.
 */
import type { Store } from "../store/db.js";
import { LIST_OF_NAMED, storedJson } from "../store/storedJson.js";
import type { CatalogSnapshot, Coverage, Tool } from "./types.js";

export interface StoredRevision {
  revision: number;
  fingerprint: string;
  tools: Tool[];
  firstSeenAt: string;
  firstEpoch: string | null;
  coverage: Coverage | null;
  /**
   * Set when the row's tools cannot be read (storedJson): which column and why. Its tools are then
   * read as none, so a catalog compared with it has every tool added (it expands: asked again).
   */
  unreadable?: string;
}

interface Row {
  revision: number;
  fingerprint: string;
  tools_json: string;
  coverage_json: string;
  first_seen_at: string;
  first_epoch: string | null;
}

function fromRow(r: Row): StoredRevision {
  const coverage = readCoverage(r.coverage_json);
  const tools = storedJson(r.tools_json, "catalog_revisions", "tools_json", LIST_OF_NAMED);
  return {
    ...(tools.ok ? {} : { unreadable: `revision ${r.revision}: ${tools.why}` }),
    revision: r.revision,
    fingerprint: r.fingerprint,
    tools: tools.ok ? (tools.value as Tool[]) : [],
    firstSeenAt: r.first_seen_at,
    firstEpoch: r.first_epoch,
    coverage,
  };
}

const COLUMNS = "revision, fingerprint, tools_json, coverage_json, first_seen_at, first_epoch";

function latestRow(db: Store, serverLabel: string): Row | undefined {
  return db
    .prepare(`SELECT ${COLUMNS} FROM catalog_revisions WHERE server_label = ? ORDER BY revision DESC LIMIT 1`)
    .get(serverLabel) as Row | undefined;
}

/**
 * Records `snap` for `serverLabel` in one IMMEDIATE transaction (several gateways may record at
 * once). `changed` is true when a new revision row was written, including the first one;
 * `previous` is the revision that was latest before it (null for the first revision and when
 * nothing changed).
 */
export function recordRevision(
  db: Store,
  serverLabel: string,
  snap: CatalogSnapshot,
  epoch: string | null,
  /**
   * a revision number whose row is not believed (the caller served another catalog under it: the
   * row was rewritten): when it is the latest, `snap` is recorded as a new revision even though
   * that row names its fingerprint
   */
  rewritten: number | null = null,
): {
  revision: number;
  changed: boolean;
  previous: StoredCatalog | null;
} {
  const run = db.transaction(() => {
    // the latest inventory is read (and parsed) only when it is asked for: a caller that records
    // does not always want it, and a large catalog's is megabytes
    const latest = latestFingerprint(db, serverLabel);
    if (latest && latest.fingerprint === snap.fingerprint && latest.revision !== rewritten) {
      return { revision: latest.revision, changed: false, previous: null };
    }
    const revision = latest ? latest.revision + 1 : 1;
    db.prepare(
      "INSERT INTO catalog_revisions (server_label, revision, fingerprint, tools_json, coverage_json, first_seen_at, first_epoch) VALUES (?, ?, ?, ?, ?, ?, ?)",
    ).run(
      serverLabel,
      revision,
      snap.fingerprint,
      // every entry kept, not only the served tools: a name listed with different definitions is
      // diffed and shown from the stored revision, and its fingerprint reproduced from it
      JSON.stringify(snap.listed),
      JSON.stringify(snap.coverage),
      new Date().toISOString(),
      epoch,
    );
    return {
      revision,
      changed: true,
      previous: latest ? storedTools(db, serverLabel, latest) : null,
    };
  });
  return run.immediate();
}

/**
 * A stored revision as a diff reads it: its entries kept and its coverage (whose `unfingerprintable`
 * names what the entries cannot hold: storedSnapshot).
 */
export interface StoredCatalog {
  revision: number;
  fingerprint: string;
  tools: Tool[];
  coverage: Coverage | null;
}

/**
 * `{revision, fingerprint, tools, coverage}` of a stored revision whose `tools` and `coverage` are
 * read from the store and parsed when first asked for (enumerable getters: a copy or a comparison
 * reads them). A revision's row never changes once written.
 */
function storedTools(
  db: Store,
  serverLabel: string,
  r: { revision: number; fingerprint: string },
): StoredCatalog {
  let tools: Tool[] | undefined;
  let coverage: { value: Coverage | null } | undefined;
  const column = (name: "tools_json" | "coverage_json"): unknown =>
    db
      .prepare(`SELECT ${name} FROM catalog_revisions WHERE server_label = ? AND revision = ?`)
      .pluck()
      .get(serverLabel, r.revision);
  return Object.defineProperties(
    { revision: r.revision, fingerprint: r.fingerprint },
    {
      tools: {
        enumerable: true,
        get: () => {
          // unreadable (rewritten in the store): none, so the new catalog has every tool added (expands)
          tools ??= readTools(column("tools_json"));
          return tools;
        },
      },
      coverage: {
        enumerable: true,
        get: () => {
          coverage ??= { value: readCoverage(column("coverage_json")) };
          return coverage.value;
        },
      },
    },
  ) as StoredCatalog;
}

function readCoverage(text: unknown): Coverage | null {
  try {
    return typeof text === "string" ? (JSON.parse(text) as Coverage) : null;
  } catch {
    return null;
  }
}

function readTools(text: unknown): Tool[] {
  const tools = storedJson(text, "catalog_revisions", "tools_json", LIST_OF_NAMED);
  return tools.ok ? (tools.value as Tool[]) : [];
}

export function getRevision(db: Store, serverLabel: string, revision: number): StoredRevision | null {
  const row = db
    .prepare(`SELECT ${COLUMNS} FROM catalog_revisions WHERE server_label = ? AND revision = ?`)
    .get(serverLabel, revision) as Row | undefined;
  return row ? fromRow(row) : null;
}

/** A stored revision's fingerprint, without reading its inventory; null when there is none. */
export function revisionFingerprint(db: Store, serverLabel: string, revision: number): string | null {
  const fp = db
    .prepare("SELECT fingerprint FROM catalog_revisions WHERE server_label = ? AND revision = ?")
    .pluck()
    .get(serverLabel, revision) as string | undefined;
  return fp ?? null;
}

/** The latest revision's number and fingerprint, without reading its inventory. */
export function latestFingerprint(
  db: Store,
  serverLabel: string,
): { revision: number; fingerprint: string } | null {
  const row = db
    .prepare(
      "SELECT revision, fingerprint FROM catalog_revisions WHERE server_label = ? ORDER BY revision DESC LIMIT 1",
    )
    .get(serverLabel) as { revision: number; fingerprint: string } | undefined;
  return row ?? null;
}

/** Every label a catalog is recorded under, sorted. */
export function recordedLabels(db: Store): string[] {
  return db
    .prepare("SELECT DISTINCT server_label FROM catalog_revisions ORDER BY server_label")
    .pluck()
    .all() as string[];
}

export function latestRevision(db: Store, serverLabel: string): StoredRevision | null {
  const row = latestRow(db, serverLabel);
  return row ? fromRow(row) : null;
}

/**
 * A revision as the lists show it: its tools counted as served (a name listed twice identically
 * once, an ambiguous name not at all), null when its column is no JSON list.
 */
export interface ListedRevision {
  revision: number;
  fingerprint: string;
  tools: number | null;
  firstSeenAt: string;
}

// counted without parsing in JS (a large catalog's is megabytes); null when the column is no
// JSON list (rewritten in the store), which json_array_length would fail the whole query on. A
// revision stores every entry listed: where its coverage names names listed more than once, or
// ambiguous ones (a name listed once beside an entry that could not be fingerprinted is ambiguous
// but no duplicate), the served tools are its distinct names less the ambiguous ones (rare: only
// then are names read).
// Every JSON function here is reached only past a check that its input is what it reads (CASEs,
// not ANDs, whose order SQLite does not promise): a rewritten column says "unreadable" or counts
// oddly, and never fails the query (json_extract on an element that is a string would).
const DUPLICATES_NAMED = `CASE WHEN json_valid(coverage_json) THEN
    CASE WHEN (CASE WHEN json_type(coverage_json, '$.duplicateNames') = 'array'
        THEN json_array_length(coverage_json, '$.duplicateNames') > 0 ELSE 0 END) THEN 1
      ELSE (CASE WHEN json_type(coverage_json, '$.ambiguousNames') = 'array'
        THEN json_array_length(coverage_json, '$.ambiguousNames') > 0 ELSE 0 END) END
  ELSE 0 END`;
const AMBIGUOUS_COUNT = `CASE WHEN json_type(coverage_json, '$.ambiguousNames') = 'array'
    THEN json_array_length(coverage_json, '$.ambiguousNames') ELSE 0 END`;
const DISTINCT_NAMES = `(SELECT count(DISTINCT CASE WHEN type = 'object' THEN json_extract(value, '$.name') END)
    FROM json_each(tools_json))`;
const SERVED_COUNT = `CASE WHEN ${DUPLICATES_NAMED}
    THEN max(0, ${DISTINCT_NAMES} - ${AMBIGUOUS_COUNT})
    ELSE json_array_length(tools_json) END`;
const LISTED = `SELECT revision, fingerprint, first_seen_at,
    CASE WHEN json_valid(tools_json) THEN CASE WHEN json_type(tools_json) = 'array' THEN ${SERVED_COUNT} END END AS tools
  FROM catalog_revisions WHERE server_label = ?`;

type ListedRow = { revision: number; fingerprint: string; tools: number | null; first_seen_at: string };

function listed(r: ListedRow): ListedRevision {
  return { revision: r.revision, fingerprint: r.fingerprint, tools: r.tools, firstSeenAt: r.first_seen_at };
}

/** Every revision recorded under the label, the oldest first (`portcullis catalog list`). */
export function listRevisions(db: Store, serverLabel: string): ListedRevision[] {
  return (db.prepare(`${LISTED} ORDER BY revision`).all(serverLabel) as ListedRow[]).map(listed);
}

/**
 * The latest `n` revisions recorded under the label, the oldest of them first, and how many are
 * recorded (the console's Catalog page). Any process of the user can record thousands under a
 * label: only the `n` drawn are read and their tools counted; the others are counted.
 */
export function latestRevisions(
  db: Store,
  serverLabel: string,
  n: number,
): { revisions: ListedRevision[]; total: number } {
  const rows = db.prepare(`${LISTED} ORDER BY revision DESC LIMIT ?`).all(serverLabel, n) as ListedRow[];
  const total = db
    .prepare("SELECT count(*) FROM catalog_revisions WHERE server_label = ?")
    .pluck()
    .get(serverLabel) as number;
  return { revisions: rows.reverse().map(listed), total };
}
