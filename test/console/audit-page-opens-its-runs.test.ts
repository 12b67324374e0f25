// The console's Audit page shows 25 runs, but opened every record of the log to draw them: any
// process of the user can append records (they are sealed to the keyring's public key), thousands
// of runs of its own, and one record that does not open anywhere in the log made the whole page
// say "the audit could not be opened". The page now reads which runs there are from the records'
// clear headers and opens only the records that can concern the runs it shows: a record that does
// not open, beyond the page, is not read, and the page the human sees is whole and right (their
// run first, its call and the approval another process recorded counted as the full view counts
// them). The page that holds it says so; `portcullis audit sessions`, which opens every record,
// refuses the log.
import { createHash, randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Locator, Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { AuditLog } from "../../src/audit/log.js";
import { encodeHeader } from "../../src/audit/record.js";
import { openStore } from "../../src/store/db.js";
import { decideByCli, nextStoredRequest } from "../helpers/approvals.js";
import { browserSuite } from "../helpers/browser.js";
import { runCli } from "../helpers/gateway.js";
import { passphraseEnv, TEST_PASSPHRASE } from "../helpers/state.js";
import { consoleGateway, consoleOf, loginWithBrowser, TRANSFER_TOOL } from "./helpers.js";

const suite = browserSuite();
const { cleanup } = suite;

const FORGED = 30;

function sessionsSection(page: Page): Locator {
  return page.locator("section", { has: page.locator("h2", { hasText: /^Sessions$/ }) });
}

/**
 * `n` runs appended, each by a writer of its own as separate processes would: started, granted
 * (by itself), a call answered, ended.
 */
function appendRuns(stateDir: string, n: number): void {
  const db = openStore(stateDir);
  for (let i = 0; i < n; i++) {
    const run = `forged-${String(i).padStart(2, "0")}`;
    const log = AuditLog.open(db, stateDir);
    const call = { run, serverLabel: "shop", requestId: 1, callKey: 1, tool: "transfer", epoch: "E" };
    log.appendMany([
      { type: "run_started", run, serverLabel: "shop" },
      { type: "approval_granted", run, serverLabel: "shop", grant: `g-${i}`, tools: ["transfer"] },
      { type: "tool_called", ...call },
      { type: "tool_result", ...call, outcome: "ok" },
      { type: "run_ended", run, serverLabel: "shop" },
    ]);
    log.close();
  }
  db.close();
}

/**
 * A `run_started` record that does not open, chained on the head with SQL as any process of the
 * user can: a canonical header naming the keyring's audit key, and random bytes for its sealed
 * event. Returns its seq.
 */
function appendUnopenable(stateDir: string): number {
  const db = openStore(stateDir);
  // the head read and the row inserted in one write transaction: the gateway may append at the
  // same moment (a call's result is recorded after its answer is sent)
  const seq = db
    .transaction(() => {
      const head = db.prepare("SELECT seq, record FROM audit_records ORDER BY seq DESC LIMIT 1").get() as {
        seq: number;
        record: Buffer;
      };
      const keyring = JSON.parse(readFileSync(join(stateDir, "keyring.json"), "utf8")) as {
        audit: { keyId: string };
      };
      const seq = head.seq + 1;
      const header = encodeHeader({
        v: 1,
        seq,
        prev: createHash("sha256").update(head.record).digest("hex"),
        time: new Date().toISOString(),
        type: "run_started",
        writer: `01${"Z".repeat(24)}`,
        pid: process.pid,
        key: keyring.audit.keyId,
        epk: randomBytes(32).toString("base64url"),
        nonce: randomBytes(12).toString("base64url"),
      });
      db.prepare("INSERT INTO audit_records (seq, record) VALUES (?, ?)").run(
        seq,
        Buffer.concat([Buffer.from(header, "latin1"), Buffer.from([0x0a]), randomBytes(96)]),
      );
      return seq;
    })
    .immediate();
  db.close();
  return seq;
}

interface SessionJson {
  run: string | null;
  calls: number;
  epochs: string[];
  approvals: { requested: number; granted: number; denied: number };
}

describe("the Audit page opens the records of the runs it shows", () => {
  it("a record that does not open, beyond the page, leaves the page whole and right; the page holding it says so", async () => {
    const { stateDir, gw } = await consoleGateway(cleanup, [TRANSFER_TOOL]);
    // the human's run: a call approved by `portcullis approve`, whose record another writer wrote
    const call = gw.client.callTool({ name: "transfer", arguments: { to: "bob", amount: 5 } });
    await decideByCli(stateDir, "approve", (await nextStoredRequest(stateDir)).request);
    expect((await call).isError).toBeFalsy();
    const full = await runCli(["audit", "sessions", "--json", "--state-dir", stateDir], {
      env: passphraseEnv(),
    });
    expect(full.code, full.stderr).toBe(0);
    const [real] = (JSON.parse(full.stdout) as SessionJson[]).filter((s) => s.run !== null);
    expect(real!.approvals).toMatchObject({ requested: 1, granted: 1, denied: 0 });
    expect(real!.calls).toBe(1);

    const bad = appendUnopenable(stateDir);
    appendRuns(stateDir, FORGED);
    // the complete view opens every record, and refuses the log
    const refused = await runCli(["audit", "sessions", "--state-dir", stateDir], { env: passphraseEnv() });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`record ${bad} does not open with the audit key`);

    // the console the gateway started to ask for the approval
    const page = suite.browser.page;
    await loginWithBrowser(page, `${await consoleOf(stateDir)}/audit`);
    await page.getByTestId("audit-proof").fill(TEST_PASSPHRASE);
    await page.getByRole("button", { name: "Open the audit" }).click();
    const rows = sessionsSection(page).locator("tbody tr");
    await rows.first().waitFor();
    expect(await page.getByRole("alert").count()).toBe(0);
    expect(await rows.count()).toBe(25);
    // the human's run first (its gateway runs), as the full view counts it; then the latest started
    const cells = async (row: Locator) => (await row.locator("td").allTextContents()).map((t) => t.trim());
    const first = await cells(rows.first());
    expect(first[0]).toBe(real!.run);
    expect(first[4]).toBe(String(real!.epochs.length));
    expect(first[5]).toBe("1");
    expect(first[7]).toBe("1 asked, 1 granted, 0 denied");
    const second = await cells(rows.nth(1));
    expect([second[0], second[5], second[7]]).toEqual(["forged-29", "1", "0 asked, 1 granted, 0 denied"]);
    expect(await page.getByTestId("sessions-capped").textContent()).toContain(
      `${FORGED + 2} runs are in the audit; this table shows 1 to 25`,
    );
    // the calls of the runs shown, the human's among them
    const activity = page.locator("section", { has: page.locator("h2", { hasText: /^Activity$/ }) });
    const transfers = activity.locator("tbody tr", { hasText: "transfer" });
    expect(await transfers.count()).toBe(25);
    expect(await activity.locator("tbody tr", { hasText: real!.epochs[0]! }).count()).toBe(1);

    // the page that holds the record opens it, and says it does not open
    await page.getByTestId("sessions-next").click();
    await expect
      .poll(() => page.getByRole("alert").textContent())
      .toContain(`record ${bad} does not open with the audit key`);
  });
});
