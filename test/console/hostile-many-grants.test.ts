// Any process of the user can write grant rows into the store: copies of the grant the human gave,
// thousands of them, dated before it and after it. The Grants page drew every one, oldest first, so
// the copies dated earlier stood above the real grant and its Revoke button. None of them is
// honoured (its signature does not verify: ShownDecisions), so the page now lists the honoured ones
// first, newest first, 25 to a page, and says how many there are and how many are honoured.
import type { Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { openStore } from "../../src/store/db.js";
import { browserSuite, held } from "../helpers/browser.js";
import { consoleGateway, consoleOf, openFirstCard, TRANSFER_TOOL } from "./helpers.js";

const suite = browserSuite();
const { cleanup } = suite;

const SCREEN = { width: 1280, height: 720 };

async function bottomOf(target: ReturnType<Page["locator"]>): Promise<number> {
  const b = (await target.boundingBox())!;
  return b.y + b.height;
}

describe("thousands of grant rows written into the store", () => {
  it("leave the human's grant first on the Grants page, its Revoke button in view, 25 rows drawn and the rest counted", async () => {
    const { stateDir, gw } = await consoleGateway(cleanup, [TRANSFER_TOOL]);
    const call = held(gw.client.callTool({ name: "transfer", arguments: { to: "mallory", amount: 5 } }));
    const page = suite.browser.page;
    const { card } = await openFirstCard(page, stateDir);
    await card.getByTestId("approve-session").click();
    await page.locator("p.outcome").waitFor();
    await call;
    const base = await consoleOf(stateDir);

    const db = openStore(stateDir);
    const real = db.prepare("SELECT * FROM grants").get() as Record<string, unknown>;
    const columns = Object.keys(real);
    const insert = db.prepare(
      `INSERT INTO grants (${columns.join(", ")}) VALUES (${columns.map(() => "?").join(", ")})`,
    );
    db.transaction(() => {
      for (let i = 0; i < 2000; i++) {
        const issued = i < 1000 ? "2000-01-01T00:00:00.000Z" : "2099-01-01T00:00:00.000Z";
        insert.run(
          ...Object.values({ ...real, grant_id: `forged${String(i).padStart(5, "0")}`, issued_at: issued }),
        );
      }
    })();
    db.close();

    await page.setViewportSize(SCREEN);
    await page.goto(`${base}/grants`);
    const rows = page.getByTestId("grant");
    await rows.first().waitFor();
    expect(await rows.count()).toBe(25);
    expect(await rows.first().getAttribute("data-grant-id")).toBe(real.grant_id);
    expect(await bottomOf(rows.first().getByTestId("revoke"))).toBeLessThanOrEqual(SCREEN.height);
    expect(await page.getByTestId("grants-capped").textContent()).toContain(
      "2001 grants are active, 1 of them honoured by gateways; this page shows 1 to 25",
    );
    // the rest, a link away: the forged rows, each marked as honoured by no gateway
    await page.getByTestId("grants-next").click();
    await page.waitForURL((u) => u.search === "?from=25");
    expect(await rows.count()).toBe(25);
    expect(await page.locator(`[data-grant-id="${real.grant_id}"]`).count()).toBe(0);
    expect(await rows.first().getByTestId("not-honoured").count()).toBe(1);
    await gw.close();
  });
});
