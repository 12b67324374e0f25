import { PIN_INDEX_SQL } from "../approval/pinSchema.js";
import type { Migration } from "../store/migration.js";

/**
 * open_intents as one B-tree keyed by (gateway_id, call_key) instead of a rowid table beside
 * its primary-key index: every call inserts a row with its intent and deletes it with its result,
 * and each B-tree touched is one more page written to the WAL at every commit (measured: 4
 * pages per call's pair of commits before, 3 after). Same columns, same rows.
 *
 * With it (the one migration number of this change), the partial index of the approver key pins
 * in the audit chain (src/approval/pinSchema.ts): a gateway's start no longer reads every record.
 */
export const openIntentsWithoutRowid: Migration = {
  version: 15,
  owner: "gateway (open intents) + approval (pin index)",
  sql: `
    CREATE TABLE open_intents_v15 (
      gateway_id   TEXT NOT NULL,
      call_key     TEXT NOT NULL,
      run          TEXT,
      server_label TEXT NOT NULL,
      request_id   TEXT NOT NULL,
      tool         TEXT,
      epoch        TEXT,
      opened_at    TEXT NOT NULL,
      PRIMARY KEY (gateway_id, call_key)
    ) WITHOUT ROWID;
    INSERT INTO open_intents_v15 (gateway_id, call_key, run, server_label, request_id, tool, epoch, opened_at)
      SELECT gateway_id, call_key, run, server_label, request_id, tool, epoch, opened_at FROM open_intents;
    DROP TABLE open_intents;
    ALTER TABLE open_intents_v15 RENAME TO open_intents;
    ${PIN_INDEX_SQL}
  `,
};
