// The Audit page opened, on every view, every record other processes wrote about a run after its
// first run's start (a decision, a request expired, a run or call closed as gone): their header
// does not say which run, and 10,000 decisions of other runs made every view take seconds. The
// console now remembers which run each such record names, by its seq and the hash of its bytes,
// and opens again only those of the page's runs and those it has not seen (bench/audit-page.mjs
// measures it). What it remembers must never stand for what the log now holds: a record appended
// since is opened, and one rewritten in place (the same seq, other bytes) is opened again.
import type { Locator, Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { AuditLog } from "../../src/audit/log.js";
import { openStore } from "../../src/store/db.js";
import { decideByCli, nextStoredRequest } from "../helpers/approvals.js";
import { browserSuite } from "../helpers/browser.js";
import { TEST_PASSPHRASE } from "../helpers/state.js";
import { rewriteRecord } from "./forgedAudit.js";
import { consoleGateway, consoleOf, loginWithBrowser, TRANSFER_TOOL } from "./helpers.js";

const suite = browserSuite();
const { cleanup } = suite;

function firstSessionRow(page: Page): Locator {
  return page
    .locator("section", { has: page.locator("h2", { hasText: /^Sessions$/ }) })
    .locator("tbody tr")
    .first();
}

async function approvalsCell(page: Page): Promise<string> {
  await page.getByTestId("audit-proof").fill(TEST_PASSPHRASE);
  await page.getByRole("button", { name: "Open the audit" }).click();
  const row = firstSessionRow(page);
  await row.waitFor();
  return ((await row.locator("td").nth(7).textContent()) ?? "").trim();
}

describe("the records about other runs the Audit page remembers", () => {
  it("stand for nothing the log holds now: a decision appended since, and one rewritten in place, are counted", async () => {
    const { stateDir, gw } = await consoleGateway(cleanup, [TRANSFER_TOOL]);
    const call = gw.client.callTool({ name: "transfer", arguments: { to: "bob", amount: 5 } });
    await decideByCli(stateDir, "approve", (await nextStoredRequest(stateDir)).request);
    expect((await call).isError).toBeFalsy();
    const db = openStore(stateDir);
    const run = db.prepare("SELECT run FROM runs").pluck().get() as string;
    // a decision of another run by a writer of its own, as `portcullis approve` writes one: the
    // head of the log, after the human's run started
    const log = AuditLog.open(db, stateDir);
    const other = {
      run: "another-run",
      serverLabel: "shop",
      approvalRequest: "req-other",
      grant: "grant-other",
      tools: ["transfer"],
    };
    const { seq } = log.append({ type: "approval_granted", ...other });
    log.close();
    db.close();

    const page = suite.browser.page;
    await loginWithBrowser(page, `${await consoleOf(stateDir)}/audit`);
    expect(await approvalsCell(page)).toBe("1 asked, 1 granted, 0 denied");

    // the head rewritten in place: the same seq and place in the chain, now a grant of the human's
    // run (the head is held by nothing after it: the chain still verifies)
    rewriteRecord(stateDir, seq, {
      type: "approval_granted",
      writer: "01ARZ3NDEKTSV4RRFFQ69G5FAV",
      event: { ...other, run },
    });
    await page.goto(`${await consoleOf(stateDir)}/audit`);
    expect(await approvalsCell(page)).toBe("1 asked, 2 granted, 0 denied");

    // a decision of the human's run appended since
    const again = openStore(stateDir);
    const next = AuditLog.open(again, stateDir);
    next.append({ type: "approval_granted", ...other, run, grant: "grant-3" });
    next.close();
    again.close();
    await page.goto(`${await consoleOf(stateDir)}/audit`);
    expect(await approvalsCell(page)).toBe("1 asked, 3 granted, 0 denied");
  });
});
