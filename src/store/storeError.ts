// Its own module so that the command-line dispatcher can recognise it without loading SQLite.

/**
 * The store cannot be opened or brought to this version's schema: one sentence naming the file
 * and what is wrong with it (exit 2 on the command line; `doctor` reports it as a finding).
 * Nothing was written to the file by the attempt beyond what SQLite does on open.
 */
export class StoreError extends Error {
  override name = "StoreError";
  constructor(
    readonly path: string,
    readonly problem: string,
    /** which of the known causes it is (`cause` in doctor --json): `doctor` gives the one thing to do for each (and says it in --json) */
    readonly reason: StoreCause,
    /** "read-only": this process may read the store but not write it (a command that only reads may still) */
    readonly kind?: "read-only",
  ) {
    super(`the store ${path} ${problem}`);
  }
}

/** Why a store cannot be used, as `doctor --json` names it (`cause` of the store's finding). */
export type StoreCause =
  | "missing"
  | "permissions"
  | "not-a-file"
  | "locked"
  | "busy"
  | "not-a-database"
  | "not-a-store"
  | "damaged"
  | "newer-schema"
  | "older-schema"
  | "read-only"
  | "disk-full"
  | "file-size-limit"
  | "log-deleted"
  | "files-replaced"
  | "io-error"
  | "other";
