/** The vault's table: sealed secrets by name (see secrets.ts). Owned by the vault module. */
export const VAULT_SCHEMA_SQL = `
    CREATE TABLE vault_secrets (
      name       TEXT PRIMARY KEY,
      sealed     BLOB NOT NULL,
      bytes      INTEGER NOT NULL,
      deliver    TEXT NOT NULL,          -- 'http' or 'env': how the holder may hand it out
      hosts_json TEXT NOT NULL,          -- JSON array: where an http-delivered value may go
      created_at TEXT NOT NULL,
      rotated_at TEXT
    );
`;
