/**
 * Which portcullis a store, and each process using it, is at. A store records every migration it
 * was brought through (schema_migrations: version, applied_at). Opening a store refuses one newer
 * than the opener knows and brings an older one up to what the opener knows, before the opener
 * writes anything else: so a process that registered in the store runs the schema version this
 * portcullis knows (KNOWN_SCHEMA_VERSION), and says so where it registers (a gateway's row since
 * migration 20, the console's address file). What a process registered before that says nothing
 * is inferred: it runs the version the store was at when it registered (its row's time against
 * each migration's). That is how a newer portcullis tells a gateway started by an older one, still
 * running after an upgrade (docs/design.md, "Upgrading with gateways running").
 */
import { createRequire } from "node:module";
import type Database from "better-sqlite3";
import { gatewaySchemaVersionMigration } from "../gateway/registrySchema.js";
import { migrations } from "./migrations.js";

/** The highest schema version this portcullis knows: its last migration's. */
export const KNOWN_SCHEMA_VERSION = Math.max(...migrations.map((m) => m.version));

let ownVersion: string | undefined;
/** This portcullis's version (its package.json's), for the sentences that compare versions. */
export function portcullisVersion(): string {
  ownVersion ??= (createRequire(import.meta.url)("../../package.json") as { version: string }).version;
  return ownVersion;
}

/**
 * The store's schema version at `at` (an ISO time, as applied_at and every row's time are
 * written): the newest migration applied by then. A process that opened the store and then
 * registered at `at` runs that version (see above). null when `at` precedes every migration
 * (a row written by hand, a time that does not read as one).
 *
 * A migration whose applied_at is later than now cannot have been applied then (a row rewritten,
 * or the clock stepped back since): it is counted as applied before every process. Believed, one
 * such row made every gateway, each one restarted too, "started by an older portcullis", whose
 * approvals are refused (approval/olderGateway.ts) with advice to restart it that never helped.
 */
export function schemaVersionAt(db: Database.Database, at: string): number | null {
  const now = new Date().toISOString();
  const row = db
    .prepare("SELECT max(version) AS v FROM schema_migrations WHERE applied_at <= ? OR applied_at > ?")
    .get(at, now) as {
    v: number | bigint | null;
  };
  return row.v === null ? null : Number(row.v);
}

/**
 * The schema a process runs, as read from where it registered: its version; "unreadable" when what
 * it recorded is no version a portcullis that can share this store could have written (not an
 * integer, below the first version that records it, above this one's: a store newer than this
 * portcullis is refused at the open, so no process on it runs a newer one); null when nothing tells.
 * Deny first: an unreadable one counts as older, never as newer (an approval it might not verify
 * is refused: approval/olderGateway.ts).
 */
export type ProcessSchema = number | "unreadable" | null;

/** The first schema version whose processes record the one they run (gateway rows' migration). */
export const SCHEMA_RECORDED_SINCE = gatewaySchemaVersionMigration.version;

/**
 * A recorded schema version read back: undefined when nothing was recorded (null, absent: a
 * process of a portcullis before SCHEMA_RECORDED_SINCE), else the version or "unreadable".
 */
export function recordedSchemaVersion(value: unknown): number | "unreadable" | undefined {
  if (value === null || value === undefined) return undefined;
  const v = typeof value === "bigint" ? Number(value) : value;
  return typeof v === "number" &&
    Number.isInteger(v) &&
    v >= SCHEMA_RECORDED_SINCE &&
    v <= KNOWN_SCHEMA_VERSION
    ? v
    : "unreadable";
}

/**
 * The schema version of a process that registered at `registeredAt` and recorded `recorded` (its
 * row's schema_version, its file's schemaVersion): the recorded one when there is one (read as
 * recordedSchemaVersion reads it), else inferred from the time (schemaVersionAt), for what a
 * portcullis before the recording wrote.
 */
export function processSchemaVersion(
  db: Database.Database,
  recorded: unknown,
  registeredAt: string,
): ProcessSchema {
  return recordedSchemaVersion(recorded) ?? schemaVersionAt(db, registeredAt);
}

/** Whether a process of schema `schema` is older than `version` (an unreadable one is). */
export function olderThan(schema: ProcessSchema, version: number): schema is number | "unreadable" {
  return schema === "unreadable" || (schema !== null && schema < version);
}

/** How sentences name a process's schema (one olderThan found older). */
export function schemaPhrase(schema: number | "unreadable"): string {
  return schema === "unreadable"
    ? "store schema version unreadable where it registered, so counted as older"
    : `store schema version ${schema}`;
}
