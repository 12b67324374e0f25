// The Audit page lists first the runs whose gateway runs now: the store's row of the run, not
// ended, naming a live portcullis `run`. Any process of the user reads the gateway's pid from the
// store and can append starts carrying it. The page looked for each such run's start among the
// starts whose clear header carries that gateway's pid and opened at most 1,000 of them (each
// start of a writer of its own costs a key agreement): first the latest 1,000, then the earliest
// 500 and the latest 500. 500 appended before the run started and 500 after still pushed its start
// out of reach, and the human's run was listed by date, after every forged one, not as running.
// A run's row now records the seq of its own start (migration 21), and the page opens that record:
//  - 500 forged before the run's start and 500 after: the run is first, as running;
//  - deny first: a row's seq rewritten with SQL to point at a forged start of another run is not
//    believed (that run is not shown as the served one); the run's start is looked for as before;
//  - a store at the schema version before it (20), the gateway still running: brought to the
//    newest, the row records no seq, and the run's start is looked for as before (1,000 forged
//    after it).
import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { openStore } from "../../src/store/db.js";
import { KNOWN_SCHEMA_VERSION } from "../../src/store/schemaVersion.js";
import { browserSuite } from "../helpers/browser.js";
import { removeDir, tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { FIXTURES, NODE } from "../helpers/paths.js";
import { rawGateway } from "../helpers/raw.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";
import { openAuditPage } from "./auditPageKit.js";
import { appendForgedMany, forgedStarts, gatewayOfRun } from "./forgedAudit.js";
import { catalogFile, consoleGateway, startConsoleProcess, TRANSFER_TOOL } from "./helpers.js";

const suite = browserSuite();
const { cleanup } = suite;

/** The only run the store holds: the human's. */
function realRunOf(stateDir: string): string {
  const db = openStore(stateDir);
  try {
    return db.prepare("SELECT run FROM runs").pluck().get() as string;
  } finally {
    db.close();
  }
}

/** A console on `stateDir`, its audit opened: the Sessions table's run column. */
async function sessionsOf(stateDir: string) {
  const c = await startConsoleProcess(stateDir);
  cleanup.push(() => c.stop());
  return openAuditPage(suite.browser.page, c.url);
}

describe("starts forged with the running gateway's pid", () => {
  it("500 appended before the human's run started and 500 after leave that run first, as running", async () => {
    const stateDir = newStateDir();
    const dir = tempDir("portcullis-console-tools-");
    cleanup.push(() => {
      removeDir(dir);
      removeDir(stateDir);
    });
    // a gateway whose run has not begun yet (it begins at the client's first request): its pid is
    // known to any process of the user before then (the process list, its gateways row)
    const gw = rawGateway({
      stateDir,
      args: ["--label", "shop", "--", NODE, FIXTURES.catalog],
      env: { FIXTURE_CATALOG: catalogFile(dir, [TRANSFER_TOOL]) },
    });
    cleanup.push(() => gw.close());
    appendForgedMany(stateDir, forgedStarts(gw.pid, 0, 500));
    const init = await gw.initialize();
    expect(init.error).toBeUndefined();
    expect(gatewayOfRun(stateDir).pid).toBe(gw.pid);
    const realRun = realRunOf(stateDir);
    appendForgedMany(stateDir, forgedStarts(gw.pid, 500, 500));

    const runs = await sessionsOf(stateDir);
    expect(await suite.browser.page.getByTestId("sessions-capped").textContent()).toContain(
      "1,001 runs are in the audit",
    );
    // listed by date it would be the 501st (page 21): first, it is found as running
    expect(await runs.first().textContent()).toBe(realRun);
    // then the latest started: the last forged
    expect(await runs.nth(1).textContent()).toBe("forged-999");
  });

  it("a row's start seq rewritten to point at a forged start of another run is not believed", async () => {
    const { stateDir } = await consoleGateway(cleanup, [TRANSFER_TOOL]);
    const realRun = realRunOf(stateDir);
    const { pid } = gatewayOfRun(stateDir);
    const seqs = appendForgedMany(stateDir, forgedStarts(pid, 0, 3));
    // the row, as any process of the user can rewrite it: its seq at forged-1's start, which
    // carries the gateway's pid
    const db = openStore(stateDir);
    db.prepare("UPDATE runs SET start_seq = ? WHERE run = ?").run(seqs[1], realRun);
    db.close();

    const runs = await sessionsOf(stateDir);
    // forged-1 is not shown as the served run: the human's is, its start looked for by the pid
    expect(await runs.first().textContent()).toBe(realRun);
    expect(await runs.allTextContents()).toEqual([realRun, "forged-2", "forged-1", "forged-0"]);
  });

  it("a store at schema version 20, its gateway still running: brought to the newest, the run's start is looked for as before", async () => {
    expect(KNOWN_SCHEMA_VERSION, "the store below undoes every migration after 20: change both").toBe(22);
    const { stateDir } = await consoleGateway(cleanup, [TRANSFER_TOOL]);
    const realRun = realRunOf(stateDir);
    const { pid } = gatewayOfRun(stateDir);
    // a thousand after the run's start (its row will record no seq: the earliest 500 reach it)
    appendForgedMany(stateDir, forgedStarts(pid, 0, 1000));
    // the store as a portcullis of schema 20 left it: no start_seq column (nor the catalog's
    // revision records, migration 22), 20 the newest migration (written without openStore, which
    // would bring it up again)
    const old = new Database(join(stateDir, "portcullis.db"));
    old.exec(`
      DELETE FROM schema_migrations WHERE version >= 21;
      ALTER TABLE runs DROP COLUMN start_seq;
      DROP TABLE catalog_revision_records;
      PRAGMA user_version = 20;
    `);
    old.close();

    const runs = await sessionsOf(stateDir);
    expect(await runs.first().textContent()).toBe(realRun);
    expect(await runs.nth(1).textContent()).toBe("forged-999");
    const up = openStore(stateDir);
    try {
      expect(up.prepare("SELECT max(version) FROM schema_migrations").pluck().get()).toBe(
        KNOWN_SCHEMA_VERSION,
      );
      expect(up.prepare("SELECT start_seq FROM runs WHERE run = ?").pluck().get(realRun)).toBeNull();
    } finally {
      up.close();
    }
    // the chain is as it was: verify reads it unchanged
    const verify = await runCli(["audit", "verify", "--state-dir", stateDir], { env: passphraseEnv() });
    expect(verify.code, verify.stderr).toBe(0);
  });
});
