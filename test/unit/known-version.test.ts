// The constant `run` reads before the migrations are loaded equals the newest migration's version:
// a migration added without raising it would let `run` spawn a server against a store it then
// refuses (or refuse, before any server, a store it can open).
import { describe, expect, it } from "vitest";
import { NEWEST_SCHEMA_VERSION } from "../../src/store/knownVersion.js";
import { KNOWN_SCHEMA_VERSION } from "../../src/store/schemaVersion.js";

describe("the schema version run knows before it loads the store", () => {
  it("is the newest migration's", () => {
    expect(NEWEST_SCHEMA_VERSION).toBe(KNOWN_SCHEMA_VERSION);
  });
});
