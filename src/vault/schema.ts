/** The vault's table: sealed secrets by name (see secrets.ts). Owned by the vault module. */
export const VAULT_SCHEMA_SQL = `
    CREATE TABLE vault_secrets (
      name       TEXT PRIMARY KEY,
      sealed     BLOB NOT NULL,
      bytes      INTEGER NOT NULL,
      created_at TEXT NOT NULL,
      rotated_at TEXT
    );
`;
