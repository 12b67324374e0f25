/**
 * Which portcullis a store, and each process using it, is at. A store records every migration it
 * was brought through (schema_migrations: version, applied_at). Opening a store refuses one newer
 * than the opener knows and brings an older one up to what the opener knows, before the opener
 * writes anything else: so a process that registered in the store at some time (a gateway's row,
 * its start) runs the schema version the store was at then, and no row needs to say so. That is
 * how a newer portcullis tells a gateway started by an older one, still running after an upgrade
 * (docs/design.md, "Upgrading with gateways running").
 */
import { createRequire } from "node:module";
import type Database from "better-sqlite3";
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
 */
export function schemaVersionAt(db: Database.Database, at: string): number | null {
  const row = db.prepare("SELECT max(version) AS v FROM schema_migrations WHERE applied_at <= ?").get(at) as {
    v: number | bigint | null;
  };
  return row.v === null ? null : Number(row.v);
}
