// Any process of the user can write catalog revisions under labels of its own: thousands of them.
// The Catalog page listed every label, in the order of their text: 3,000 labels of 300 characters
// made a page of megabytes, the label of the server the human runs somewhere in it. It now lists
// 50, the labels of running gateways first, then the latest revised, says how many there are and
// links to the rest; a label asked for by its link opens whatever page it is listed on.
import { describe, expect, it } from "vitest";
import { openStore } from "../../src/store/db.js";
import { browserSuite } from "../helpers/browser.js";
import { consoleGateway, loginWithBrowser, startConsoleProcess, TRANSFER_TOOL } from "./helpers.js";

const suite = browserSuite();
const { cleanup } = suite;

const FORGED = 3000;

describe("thousands of catalog labels written into the store", () => {
  it("leave the Catalog page 50 labels long, the running server's first, the rest counted and a link away", async () => {
    const { stateDir } = await consoleGateway(cleanup, [TRANSFER_TOOL]);
    const db = openStore(stateDir);
    const real = db.prepare("SELECT * FROM catalog_revisions").get() as Record<string, unknown>;
    const columns = Object.keys(real);
    const insert = db.prepare(
      `INSERT INTO catalog_revisions (${columns.join(", ")}) VALUES (${columns.map(() => "?").join(", ")})`,
    );
    db.transaction(() => {
      for (let i = 0; i < FORGED; i++)
        insert.run(
          ...Object.values({
            ...real,
            // before the real label in the order of text, and said to be revised later than it
            server_label: `a-forged-${String(i).padStart(4, "0")}-${"x".repeat(280)}`,
            first_seen_at: "2999-01-01T00:00:00.000Z",
          }),
        );
      // and one label with 300 revisions
      for (let r = 1; r <= 300; r++)
        insert.run(...Object.values({ ...real, server_label: "many-revisions", revision: r }));
    })();
    db.close();
    const c = await startConsoleProcess(stateDir);
    cleanup.push(() => c.stop());
    const page = suite.browser.page;
    await loginWithBrowser(page, `${c.url}/catalog`);
    const labels = page.locator("ul.labels li");
    await labels.first().waitFor();
    expect(await labels.count()).toBe(50);
    expect(await labels.first().textContent()).toBe(real.server_label);
    expect(await page.getByTestId("labels-capped").textContent()).toContain(
      `${(FORGED + 2).toLocaleString("en-US")} labels have catalog revisions; this page lists 1 to 50: the labels of running gateways first`,
    );
    // the page is short: its HTML, not megabytes
    expect((await page.content()).length).toBeLessThan(100_000);

    await page.getByTestId("labels-next").click();
    await page.waitForURL((u) => u.searchParams.get("labels-from") === "50");
    expect(await labels.count()).toBe(50);
    expect(await page.locator("ul.labels li", { hasText: String(real.server_label) }).count()).toBe(0);
    await page.getByTestId("labels-previous").click();
    await page.waitForURL((u) => u.searchParams.get("labels-from") === "0");
    expect(await labels.first().textContent()).toBe(real.server_label);

    // a label listed on a later page opens by its link all the same
    const last = `a-forged-0000-${"x".repeat(280)}`;
    await page.goto(`${c.url}/catalog?label=${encodeURIComponent(last)}`);
    expect(await page.locator("main h2 [data-testid=stored-text]").textContent()).toBe(last);

    // a label's revisions: the latest 50 drawn, the count said
    await page.goto(`${c.url}/catalog?label=many-revisions`);
    const revisions = page.locator("main > table > tbody > tr");
    expect(await revisions.count()).toBe(50);
    expect(await revisions.last().locator("td").first().textContent()).toBe("300");
    expect(await page.getByTestId("revisions-capped").textContent()).toContain(
      "300 revisions are recorded under this label; the latest 50 are shown",
    );
  });
});
