// A same-user process that rewrites the store's migration history so that the migrations an
// approval's signature needs (schema version 16 on) read as applied in the future. Which schema a
// gateway runs is read from the store: as its row records it, or for a row of a portcullis before
// migration 20 (none recorded, as this test leaves it), the newest migration applied before the
// row was written (src/store/schemaVersion.ts). Believed, the rewritten times made every gateway "started
// by an older portcullis": `approve` refused every approval and said to restart the gateway, and a
// restarted one was refused the same, for good (status and doctor said so too). A time later than
// now cannot be true: such a migration counts as applied before every process. What must hold: a
// gateway of this portcullis has its request approved, and its held call goes on.
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { runCli } from "../helpers/gateway.js";
import { heldWipe } from "../helpers/scriptTerminal.js";
import { passphraseEnv } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

describe("migration times rewritten into the future", () => {
  it("do not make a gateway of this portcullis an older one: approve approves, the call goes on", async () => {
    const { req, stateDir, call } = await heldWipe(cleanup, "portcullis-applied-future-");
    const db = new Database(join(stateDir, "portcullis.db"));
    try {
      db.pragma("busy_timeout = 10000");
      const n = db
        .prepare("UPDATE schema_migrations SET applied_at = '2999-01-01T00:00:00.000Z' WHERE version >= 16")
        .run().changes;
      expect(n).toBeGreaterThan(0);
      // the gateway's row as a portcullis before migration 20 leaves it (no recorded version): its
      // schema is then read from those times, the reading this test attacks
      expect(db.prepare("UPDATE gateways SET schema_version = NULL").run().changes).toBeGreaterThan(0);
    } finally {
      db.close();
    }
    const status = await runCli(["status"], { stateDir });
    expect(status.stdout).not.toContain("started by an older portcullis");
    const r = await runCli(["approve", req.request, "--for", "session"], { stateDir, env: passphraseEnv() });
    expect(r.stderr).not.toContain("older portcullis");
    expect(r.code, r.stderr).toBe(0);
    expect((await call).isError).toBeFalsy();
  }, 60_000);
});
