import type { Migration } from "../../store/migration.js";

/**
 * The egress record's index (src/vault/egress/record.ts): one row per server, epoch and
 * destination, with counts. Nothing secret: host, port, scheme, method, scope names.
 */
export const egressMigration: Migration = {
  version: 11,
  owner: "vault (egress record)",
  sql: `
    CREATE TABLE egress_destinations (
      server_label TEXT NOT NULL,
      epoch        TEXT NOT NULL,       -- '' for a request seen before any epoch
      host         TEXT NOT NULL,
      port         INTEGER NOT NULL,
      scheme       TEXT NOT NULL,       -- http, https (read by the proxy) or tunnel (passed through)
      method       TEXT NOT NULL,
      requests     INTEGER NOT NULL,
      released     INTEGER NOT NULL,    -- requests that carried a released value
      refused      INTEGER NOT NULL,    -- refused by egress "declared-only"
      scopes_json  TEXT NOT NULL,       -- JSON array: scope names released to it (never values)
      first_at     TEXT NOT NULL,
      last_at      TEXT NOT NULL,
      PRIMARY KEY (server_label, epoch, host, port, scheme, method)
    );
    CREATE INDEX egress_by_epoch ON egress_destinations(epoch);
  `,
};
