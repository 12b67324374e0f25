/**
 * The store's table of which audit record records a catalog revision (revisionRecords.ts), in a
 * module of its own so that the list of migrations imports no store code back.
 */
import type { Migration } from "../store/migration.js";

export const revisionRecordsMigration: Migration = {
  version: 22,
  owner: "catalog (revision records)",
  sql: `
    -- The seq of each catalog_revised record of a revision (src/catalog/revisionRecords.ts),
    -- inserted with the record; a claim a gateway checks by opening that record, never believes.
    CREATE TABLE catalog_revision_records (
      server_label TEXT NOT NULL,
      revision     INTEGER NOT NULL,
      seq          INTEGER NOT NULL,
      PRIMARY KEY (server_label, revision, seq)
    ) WITHOUT ROWID;
  `,
};
