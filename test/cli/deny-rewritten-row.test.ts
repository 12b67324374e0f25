// `deny ID` of a request whose row a same-user agent rewrote with plain SQL after the gateway wrote
// it (its tool swapped for another, its credential scopes widened): the row no longer asks what
// its review shows. An approval of it is refused (test/gateway/unsigned-columns.test.ts); a
// denial only takes authority away, and was refused too, leaving the call waiting out its hold
// while the human had said no. What must hold: `deny ID` denies it (exit 0), says on stderr that
// the row was changed and what the denial does, and the real gateway honours the denial (its
// signature is over the row as it reads now, which is what the gateway verifies): the call is
// refused approval_denied, and the server receives nothing.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { toolFingerprint } from "../../src/catalog/index.js";
import { nextStoredRequest } from "../helpers/approvals.js";
import { runCli } from "../helpers/gateway.js";
import { FETCH, PAY, recordingCatalogGateway } from "../helpers/recordingCatalogGateway.js";
import { passphraseEnv } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const DENIED = -32057;

describe("deny ID of a request whose row was rewritten in the store", () => {
  for (const [column, rewrite] of [
    [
      "tool",
      (db: Database.Database, id: string) =>
        db
          .prepare("UPDATE approval_requests SET tool = ?, fingerprint = ? WHERE request = ?")
          .run(PAY.name, toolFingerprint(PAY), id).changes,
    ],
    [
      "credential scope",
      (db: Database.Database, id: string) =>
        db
          .prepare(
            `UPDATE approval_requests SET credential_scope_json = '["prod-database"]' WHERE request = ?`,
          )
          .run(id).changes,
    ],
  ] as const) {
    for (const next of column === "tool" ? [false, true] : [false])
      it(`${next ? "deny --next" : "deny ID"}, its ${column} rewritten: the denial is made, said, and ends the call's wait with approval_denied`, async () => {
        // a hold far longer than the test: only a denial the gateway honours ends the call in time
        const { stateDir, gw, record } = await recordingCatalogGateway(
          [PAY, FETCH],
          ["--label", "bank", "--approval", "session", "--approval-timeout", "120000"],
          cleanup,
          "portcullis-deny-rewritten-",
        );
        const outcome = gw.client.callTool({ name: "fetch_page", arguments: { page: "a" } }).then(
          () => "answered",
          (e: { code: number }) => e.code,
        );
        const req = await nextStoredRequest(stateDir);
        const db = new Database(join(stateDir, "portcullis.db"));
        db.pragma("busy_timeout = 10000");
        try {
          expect(rewrite(db, req.request)).toBe(1);
        } finally {
          db.close();
        }

        const denied = await runCli(
          ["deny", ...(next ? ["--next"] : [req.request]), "--json", "--state-dir", stateDir],
          { env: passphraseEnv() },
        );
        expect(denied.code, denied.stderr).toBe(0);
        expect(denied.stderr).toContain(
          `approval request ${req.request} does not ask what its review shows (its ${column} was changed in the store since the gateway wrote it); it is denied all the same`,
        );
        expect(denied.stderr).toContain("the call waiting on it is refused (approval_denied)");
        const result = JSON.parse(denied.stdout) as Record<string, unknown>;
        expect(result).toMatchObject({ request: req.request, decision: "denied", rowChanged: column });

        expect(await outcome).toBe(DENIED);
        expect(gw.stderr()).not.toMatch(/denial \S+ is not honoured/);
        expect(existsSync(record) ? readFileSync(record, "utf8") : "").toBe("");
      });
  }
});
