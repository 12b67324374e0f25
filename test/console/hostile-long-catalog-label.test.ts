// A catalog label is any text a process of the user records, at any length. The Catalog page
// linked each label by its text in the query, so a label longer than the request line the
// console takes (16 KiB with the headers) could not be opened: following its link was answered
// 431, with an empty body, a blank page. A long label is now linked by its SHA-256
// (catalogLinks.ts), and a head over the limit is answered with a sentence that says why.
import { describe, expect, it } from "vitest";
import { recordRevision, snapshotOf } from "../../src/catalog/index.js";
import { openStore } from "../../src/store/db.js";
import { browserSuite } from "../helpers/browser.js";
import { removeDir } from "../helpers/files.js";
import { newStateDir } from "../helpers/state.js";
import { loginWithBrowser, startConsoleProcess, TRANSFER_TOOL } from "./helpers.js";

const suite = browserSuite();
const { cleanup } = suite;

/** 20,000 characters: its link by text alone is past the console's 16 KiB head */
const LONG_LABEL = `shop-${"L".repeat(19_995)}`;

describe("a catalog label too long for a link", () => {
  it("opens from the Catalog page (by its digest), its revisions and their diff; a head over the limit is refused with a sentence", async () => {
    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    const db = openStore(stateDir);
    recordRevision(db, LONG_LABEL, snapshotOf([TRANSFER_TOOL], 1), null);
    recordRevision(
      db,
      LONG_LABEL,
      snapshotOf([{ ...TRANSFER_TOOL, description: "Sends more money." }], 2),
      null,
    );
    recordRevision(db, "bank", snapshotOf([TRANSFER_TOOL], 1), null);
    db.close();
    const c = await startConsoleProcess(stateDir);
    cleanup.push(() => c.stop());
    const page = suite.browser.page;
    await loginWithBrowser(page, `${c.url}/catalog`);

    const link = page.locator("ul.labels li", { hasText: "shop-" }).locator("a");
    expect((await link.getAttribute("href"))!.length).toBeLessThan(200);
    const answer = page.waitForResponse((r) => r.url().includes("/catalog?"));
    await link.click();
    expect((await answer).status()).toBe(200);
    expect(await page.locator("main h2 [data-testid=stored-text]").textContent()).toBe(LONG_LABEL);
    // its revisions, and the diff of 1 → 2 (its link by digest too)
    await expect.poll(() => page.locator("main > table > tbody > tr").count()).toBe(2);
    await page.locator("main a", { hasText: "diff with 1" }).click();
    await page.locator("main h3", { hasText: "revision 1 → 2" }).waitFor();
    expect(page.url()).toContain("from=1&to=2");

    // a short label keeps its readable link
    expect(await page.locator("ul.labels a", { hasText: /^bank$/ }).getAttribute("href")).toBe(
      "/catalog?label=bank",
    );
    // a digest no label has: the page says so
    await page.goto(`${c.url}/catalog?label-sha256=${"0".repeat(64)}`);
    await page.getByTestId("label-not-found").waitFor();

    // the label in the query by its text, typed or pasted: refused (431) with a sentence, not a blank page
    const refused = await page.goto(`${c.url}/catalog?label=${encodeURIComponent(LONG_LABEL)}`);
    expect(refused!.status()).toBe(431);
    expect(await page.locator("body").textContent()).toContain(
      "longer than the console takes (16 KiB in all)",
    );
  });
});
