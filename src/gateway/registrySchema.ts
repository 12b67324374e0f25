import type { Migration } from "../store/migration.js";

/**
 * Where a gateway's pid and start time mean something (src/identity/procLiveness.ts), as runs
 * record it since migration 17: its PID namespace and the kernel boot id. Two gateways on one
 * state directory may live in different PID namespaces (a container or a sandbox sharing the
 * directory); a reader in another namespace cannot judge the pid, and must neither close the
 * gateway's open calls as interrupted nor show it as gone. A reader on another boot knows it is
 * gone. Null in rows written before this migration: they are judged by pid and start time in the
 * reader's namespace, as the versions that wrote them did (src/identity/procLiveness.ts).
 */
export const gatewayPlaceMigration: Migration = {
  version: 18,
  owner: "gateway (gateway place)",
  sql: `
    ALTER TABLE gateways ADD COLUMN pid_ns TEXT;
    ALTER TABLE gateways ADD COLUMN boot TEXT;
  `,
};

/**
 * The schema version each gateway runs, as it says when it registers (store/schemaVersion.ts):
 * the one its portcullis knows, which the store is at once that portcullis opened it. Before this
 * migration it was inferred from when the row was written against when each migration was
 * applied, which a clock stepped back between an upgrade and a gateway's start misreads. Null in
 * rows written before this migration: those are still read by that inference.
 */
export const gatewaySchemaVersionMigration: Migration = {
  version: 20,
  owner: "gateway (schema version it runs)",
  sql: `
    ALTER TABLE gateways ADD COLUMN schema_version INTEGER;
  `,
};
