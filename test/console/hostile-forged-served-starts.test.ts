// The Audit page lists first the runs whose gateway runs now: the store's row of the run, not
// ended, naming a live portcullis `run`. It finds each such run's start record among the starts
// whose clear header carries that gateway's pid, and opens at most 1,000 of them (each start of a
// writer of its own costs a key agreement). Any process of the user reads the gateway's pid from
// the store and can append starts carrying it: 1,000 appended after the human's run started took
// the whole budget (the latest were opened), and the human's run was listed by date, after every
// forged one, not as running. The page now opens the earliest and the latest of them: a flood
// appended after the run started cannot push its start out of reach.
import type { Locator, Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { openStore } from "../../src/store/db.js";
import { browserSuite } from "../helpers/browser.js";
import { TEST_PASSPHRASE } from "../helpers/state.js";
import { appendForgedMany, gatewayOfRun } from "./forgedAudit.js";
import { consoleGateway, loginWithBrowser, startConsoleProcess, TRANSFER_TOOL } from "./helpers.js";

const suite = browserSuite();
const { cleanup } = suite;

const FORGED = 1000;

function sessionRuns(page: Page): Locator {
  return page
    .locator("section", { has: page.locator("h2", { hasText: /^Sessions$/ }) })
    .locator("tbody tr td:first-child code");
}

describe("starts forged with the running gateway's pid", () => {
  it("a thousand, appended after the human's run started, leave that run first, as running", async () => {
    const { stateDir } = await consoleGateway(cleanup, [TRANSFER_TOOL]);
    const db = openStore(stateDir);
    const realRun = db.prepare("SELECT run FROM runs").pluck().get() as string;
    db.close();
    const { pid } = gatewayOfRun(stateDir);
    // each a writer of its own (its own key agreement to open), sealed to the audit key: each
    // opens and names a run of its own, under the gateway's pid
    appendForgedMany(
      stateDir,
      Array.from({ length: FORGED }, (_, i) => ({
        type: "run_started",
        writer: `01${"Z".repeat(20)}${String(i).padStart(4, "0")}`,
        pid,
        event: { run: `forged-${i}`, serverLabel: "shop" },
      })),
    );

    const c = await startConsoleProcess(stateDir);
    cleanup.push(() => c.stop());
    const page = suite.browser.page;
    await loginWithBrowser(page, `${c.url}/audit`);
    await page.getByTestId("audit-proof").fill(TEST_PASSPHRASE);
    await page.getByRole("button", { name: "Open the audit" }).click();
    const runs = sessionRuns(page);
    await runs.first().waitFor();
    expect(await page.getByTestId("sessions-capped").textContent()).toContain("1,001 runs are in the audit");
    // listed by date it would be the last of 1,001 (page 41): first, it is found as running
    expect(await runs.first().textContent()).toBe(realRun);
    // then the latest started: the last forged
    expect(await runs.nth(1).textContent()).toBe(`forged-${FORGED - 1}`);
  });
});
