/**
 * Versioned schema migrations of the embedded store. Append only: a migration
 * that has shipped is never edited, a change is a new entry. Each module that
 * owns tables owns its migration entries (noted beside each).
 */
export interface Migration {
  version: number;
  owner: string;
  sql: string;
}

export const migrations: Migration[] = [
  {
    version: 1,
    owner: "supervisor + catalog",
    sql: `
      -- One row per running (or recently running) gateway process, for 'portcullis status'.
      CREATE TABLE gateways (
        gateway_id   TEXT PRIMARY KEY,
        pid          INTEGER NOT NULL,
        pid_start    TEXT,
        server_label TEXT NOT NULL,
        started_at   TEXT NOT NULL,
        heartbeat_at TEXT NOT NULL,
        state        TEXT NOT NULL,
        epoch        TEXT,
        record_json  TEXT,
        status_json  TEXT NOT NULL DEFAULT '[]',
        ended_at     TEXT
      );
      -- Every epoch the supervisors minted, with the execution record captured at launch.
      CREATE TABLE epochs (
        epoch           TEXT PRIMARY KEY,
        server_label    TEXT NOT NULL,
        gateway_id      TEXT NOT NULL,
        identity_digest TEXT NOT NULL,
        record_json     TEXT NOT NULL,
        started_at      TEXT NOT NULL,
        reason          TEXT NOT NULL
      );
      CREATE INDEX epochs_by_label ON epochs(server_label, started_at);
      -- Catalog revisions per server label: an integer that grows when the fingerprint changes.
      CREATE TABLE catalog_revisions (
        server_label TEXT NOT NULL,
        revision     INTEGER NOT NULL,
        fingerprint  TEXT NOT NULL,
        tools_json   TEXT NOT NULL,
        coverage_json TEXT NOT NULL,
        first_seen_at TEXT NOT NULL,
        first_epoch  TEXT,
        PRIMARY KEY (server_label, revision)
      );
      CREATE INDEX catalog_by_fp ON catalog_revisions(server_label, fingerprint);
    `,
  },
];
