/**
 * One versioned schema change of the embedded store. Its own module so that the
 * modules owning tables (e.g. approval/schema.ts) can declare their entries without
 * importing the list in store/migrations.ts, which imports them.
 */
export interface Migration {
  version: number;
  owner: string;
  sql: string;
}
