// The store's schema version in its file's header (SQLite's user_version), which `run` reads with
// one read before it spawns its server early (src/store/headerVersion.ts): the opening that
// applies migrations leaves it in the main file, not only in the WAL, while it keeps the store
// open (a gateway does for its whole life). test/store/upgrade.test.ts checks the reading side:
// `run` on a store whose header says newer never starts its server.
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openStore } from "../../src/store/db.js";
import { headerSchemaVersion } from "../../src/store/headerVersion.js";
import { KNOWN_SCHEMA_VERSION } from "../../src/store/schemaVersion.js";
import { removeDir } from "../helpers/files.js";
import { newKeyringOnlyStateDir } from "../helpers/state.js";

const cleanup: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanup.splice(0).reverse()) c();
});

describe("the schema version in the store file's header", () => {
  it("is this portcullis's once it migrated the store, while the store is still open", () => {
    const stateDir = newKeyringOnlyStateDir();
    cleanup.push(() => removeDir(stateDir));
    const db = openStore(stateDir);
    cleanup.push(() => db.close());
    expect(headerSchemaVersion(join(stateDir, "portcullis.db"))).toBe(KNOWN_SCHEMA_VERSION);
  });

  it("reads as nothing from a file that is no SQLite database, or too short to have a header", () => {
    expect(headerSchemaVersion(join(__dirname, "header-version.test.ts"))).toBeNull();
    expect(headerSchemaVersion(join(__dirname, "no-such-file"))).toBeNull();
  });
});
