/**
 * Versioned schema migrations of the embedded store. Append only: a migration
 * that has shipped is never edited, a change is a new entry. Each module that
 * owns tables owns its migration entries (noted beside each).
 */
import {
  approvalMigration,
  callWaitMigration,
  passkeysMigration,
  reviewDigestMigration,
  runPlaceMigration,
  runStartSeqMigration,
  signedDecisionsMigration,
} from "../approval/schema.js";
import { revisionRecordsMigration } from "../catalog/revisionRecordsSchema.js";
import { openIntentsWithoutRowid } from "../gateway/openIntentsSchema.js";
import { gatewayPlaceMigration, gatewaySchemaVersionMigration } from "../gateway/registrySchema.js";
import { egressMigration } from "../vault/egress/schema.js";
import { VAULT_SCHEMA_SQL } from "../vault/schema.js";
import type { Migration } from "./migration.js";

export type { Migration } from "./migration.js";

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
  {
    version: 2,
    owner: "audit + keyring",
    sql: `
      -- The audit chain (docs/audit-format.md): one row per record, seq 1, 2, 3 … with no gap.
      -- record = canonical header || 0x0A || sealed event; its SHA-256 is the next header's prev.
      CREATE TABLE audit_records (
        seq    INTEGER PRIMARY KEY CHECK (seq > 0),
        record BLOB NOT NULL
      );
      -- Append-only, and only at the head: a faulty writer fails loudly instead of
      -- forking or punching a hole. (This guards against bugs; tampering is what
      -- 'portcullis audit verify' and checkpoints are for.)
      CREATE TRIGGER audit_records_extend_only BEFORE INSERT ON audit_records
        WHEN NEW.seq <> (SELECT COALESCE(MAX(seq), 0) + 1 FROM audit_records)
        BEGIN SELECT RAISE(ABORT, 'audit records are appended at the head only'); END;
      CREATE TRIGGER audit_records_no_update BEFORE UPDATE ON audit_records
        BEGIN SELECT RAISE(ABORT, 'audit records are append-only'); END;
      CREATE TRIGGER audit_records_no_delete BEFORE DELETE ON audit_records
        BEGIN SELECT RAISE(ABORT, 'audit records are append-only'); END;
    `,
  },
  approvalMigration,
  signedDecisionsMigration,
  {
    version: 5,
    owner: "gateway (open intents)",
    sql: `
      -- Calls whose intent is in the audit chain and whose end is not (src/gateway/openIntents.ts):
      -- inserted with tool_called, deleted with tool_result / call_interrupted, in the same
      -- transaction. A gone gateway's rows are closed by the next gateway on this store.
      CREATE TABLE open_intents (
        gateway_id   TEXT NOT NULL,
        call_key     TEXT NOT NULL,
        run          TEXT,
        server_label TEXT NOT NULL,
        request_id   TEXT NOT NULL,
        tool         TEXT,
        epoch        TEXT,
        opened_at    TEXT NOT NULL,
        PRIMARY KEY (gateway_id, call_key)
      );
    `,
  },
  { version: 7, owner: "vault", sql: VAULT_SCHEMA_SQL },
  passkeysMigration,
  egressMigration,
  openIntentsWithoutRowid,
  reviewDigestMigration,
  runPlaceMigration,
  gatewayPlaceMigration,
  callWaitMigration,
  gatewaySchemaVersionMigration,
  runStartSeqMigration,
  revisionRecordsMigration,
];
