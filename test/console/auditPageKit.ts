// What the Audit page's tests share: the page opened as a person opens it (logged in, the
// passphrase given), and the run column of its Sessions table.
import type { Locator, Page } from "playwright-core";
import { TEST_PASSPHRASE } from "../helpers/state.js";
import { loginWithBrowser } from "./helpers.js";

/** The run column of the Sessions table's rows. */
export function sessionRuns(page: Page): Locator {
  return page
    .locator("section", { has: page.locator("h2", { hasText: /^Sessions$/ }) })
    .locator("tbody tr td:first-child code");
}

/** The console at `consoleUrl` logged into, its audit opened with the passphrase; its first run drawn. */
export async function openAuditPage(page: Page, consoleUrl: string): Promise<Locator> {
  await loginWithBrowser(page, `${consoleUrl}/audit`);
  await page.getByTestId("audit-proof").fill(TEST_PASSPHRASE);
  await page.getByRole("button", { name: "Open the audit" }).click();
  const runs = sessionRuns(page);
  await runs.first().waitFor();
  return runs;
}
