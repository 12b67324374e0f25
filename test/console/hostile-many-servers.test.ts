// Any process of the user can write gateway rows naming a live process: thousands of them. The
// Servers page drew every one with its record and status lines, oldest first: a page of megabytes,
// the real gateway after all of them. It now draws 20, the latest started first, and says how many
// it does not show, with links to them.
import { describe, expect, it } from "vitest";
import { openStore } from "../../src/store/db.js";
import { browserSuite } from "../helpers/browser.js";
import { consoleGateway, loginWithBrowser, startConsoleProcess, TRANSFER_TOOL } from "./helpers.js";

const suite = browserSuite();
const { cleanup } = suite;

describe("thousands of gateway rows written into the store", () => {
  it("leave the Servers page 20 gateways long, the real one first, the rest counted and a link away", async () => {
    const { stateDir } = await consoleGateway(cleanup, [TRANSFER_TOOL]);
    const db = openStore(stateDir);
    const real = db.prepare("SELECT * FROM gateways").get() as Record<string, unknown>;
    const columns = Object.keys(real);
    const insert = db.prepare(
      `INSERT INTO gateways (${columns.join(", ")}) VALUES (${columns.map(() => "?").join(", ")})`,
    );
    db.transaction(() => {
      for (let i = 0; i < 2000; i++)
        insert.run(
          ...Object.values({
            ...real,
            gateway_id: `forged${i}`,
            server_label: "forged",
            started_at: "2000-01-01T00:00:00.000Z",
          }),
        );
    })();
    db.close();
    const c = await startConsoleProcess(stateDir);
    cleanup.push(() => c.stop());
    const page = suite.browser.page;
    await loginWithBrowser(page, `${c.url}/servers`);
    const servers = page.locator("article.server");
    await servers.first().waitFor();
    expect(await servers.count()).toBe(20);
    expect(await servers.first().locator("h2").textContent()).toMatch(/^shop /);
    expect(await page.getByTestId("servers-capped").textContent()).toContain(
      "2001 gateways are running; this page shows 1 to 20, the latest started first",
    );
    await page.getByTestId("servers-next").click();
    await page.waitForURL((u) => u.search === "?from=20");
    expect(await servers.count()).toBe(20);
    expect(await page.locator("article.server h2", { hasText: /^shop / }).count()).toBe(0);
  });
});
