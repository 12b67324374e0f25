import { join } from "node:path";
import Database from "better-sqlite3";
import { migrations } from "./migrations.js";

export type Store = Database.Database;

/**
 * Opens (creating if needed) the embedded store shared by every gateway process
 * and the CLI. WAL lets readers (status, audit views) run beside writers;
 * busy_timeout makes concurrent writers queue instead of failing.
 */
export function openStore(stateDir: string, file = "portcullis.db"): Store {
  const db = new Database(join(stateDir, file));
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = FULL");
  db.pragma("busy_timeout = 10000");
  db.pragma("foreign_keys = ON");
  migrate(db);
  return db;
}

function migrate(db: Store): void {
  db.exec(
    "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)",
  );
  const applied = new Set(
    (db.prepare("SELECT version FROM schema_migrations").all() as { version: number }[]).map(
      (r) => r.version,
    ),
  );
  for (const m of [...migrations].sort((a, b) => a.version - b.version)) {
    if (applied.has(m.version)) continue;
    // IMMEDIATE takes the write lock first, so two processes starting at once
    // cannot both apply the same migration.
    db.transaction(() => {
      const again = db.prepare("SELECT 1 FROM schema_migrations WHERE version = ?").get(m.version);
      if (again) return;
      db.exec(m.sql);
      db.prepare("INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)").run(
        m.version,
        new Date().toISOString(),
      );
    }).immediate();
  }
}
