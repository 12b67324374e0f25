// A tool's name as long as the server likes, on the review card. A name is shown by its first 128
// characters (displayName), but escaped that is up to ~800 (128 control characters are 768 as
// \u0001 each), and the card drew it whole in its title and in the tool's heading, where in its
// grid column it took hundreds of pixels. Now it is capped in both places like an argument's name:
// a box that scrolls, with its note, the arguments and the buttons where they were. The Grants
// page and the Audit's activity drew it whole in a narrow table column too, and the passphrase
// page of a decision in its sentence.
import type { Locator } from "playwright-core";
import { describe, expect, it } from "vitest";
import { displayName } from "../../src/catalog/text.js";
import { browserSuite, held } from "../helpers/browser.js";
import { TEST_PASSPHRASE } from "../helpers/state.js";
import { consoleGateway, consoleOf, openFirstCard, TRANSFER_TOOL } from "./helpers.js";

const suite = browserSuite();
const { cleanup } = suite;

const CAP = 8 * 1.4 * 12 + 2;

describe("a hostile server's long tool name on the review card", () => {
  it("is capped in the card's title and the tool's heading, and on the passphrase, Grants and Audit pages, each with its note", async () => {
    const name = "\u0001".repeat(200);
    const { stateDir, gw } = await consoleGateway(cleanup, [{ ...TRANSFER_TOOL, name }]);
    const call = held(gw.client.callTool({ name, arguments: { to: "mallory", amount: 5000 } }));
    const page = suite.browser.page;
    const { req, card, viewport } = await openFirstCard(page, stateDir);

    for (const where of ["header h2", "section.tool h3"]) {
      const place = card.locator(where);
      const names = place.locator(".name");
      expect(await names.count(), String(place)).toBe(1);
      // the name whole, as the terminal shows it, in a box no taller than the cap
      expect(await names.textContent()).toBe(displayName(name));
      const box = place.locator("[data-capped]");
      expect(await box.count(), `${place}: a capped box`).toBe(1);
      expect((await box.boundingBox())!.height, String(place)).toBeLessThanOrEqual(CAP);
      const note = place.getByTestId("cut-note");
      await expect.poll(() => note.isVisible()).toBe(true);
      expect(await note.textContent()).toBe(`(${displayName(name).length} characters; scroll to read all)`);
      // the note is not dressed as the heading (capitals)
      // (the test's types have no DOM: the page's function is given as text)
      const transform = await page.evaluate<string>(
        `getComputedStyle(document.querySelector('[data-testid="pending-request"] ${where} .cut-note')).textTransform`,
      );
      expect(transform, where).toBe("none");
    }
    // the title still links to the request's page
    expect(await card.locator("header h2 a").getAttribute("href")).toBe(`/requests/${req.request}`);
    for (const target of [
      card.locator(".args code.value", { hasText: '"mallory"' }),
      card.getByTestId("approve-call"),
      card.getByTestId("deny"),
    ]) {
      const b = (await target.boundingBox())!;
      expect(b.y + b.height, String(target)).toBeLessThanOrEqual(viewport.height);
    }
    expect(suite.browser.errors.filter((e) => /Content Security Policy/i.test(e))).toEqual([]);

    // Approved for the session, the call runs; the Grants page names the tool in its narrow
    // column, and the Audit's activity in its: capped there too, each with its note.
    // Without the held proof's key the decision asks for the passphrase, on a page that names
    // the tool too.
    await page.evaluate("localStorage.removeItem('portcullis-proof')");
    await card.getByTestId("approve-session").click();
    await page.getByTestId("decision-proof").waitFor();
    await expectCappedName(page.locator(".proof-form > p").first(), name);
    await page.getByTestId("decision-proof").fill(TEST_PASSPHRASE);
    await page.getByTestId("decision-submit").click();
    // the decision's answer sends the page to the request's own (a goto before it lands is
    // interrupted by it: seen in a clean-clone CI, where the call ended first)
    await page.waitForURL((u) => !u.pathname.endsWith("/decide"));
    await call;
    const base = await consoleOf(stateDir);
    await page.goto(`${base}/grants`);
    await expectCappedName(page.getByTestId("grant"), name);
    await page.goto(`${base}/audit`);
    await page.getByTestId("audit-proof").fill(TEST_PASSPHRASE);
    await page.getByRole("button", { name: "Open the audit" }).click();
    await expectCappedName(page.locator("table tr", { has: page.locator(".name-box") }).first(), name);
    expect(suite.browser.errors.filter((e) => /Content Security Policy/i.test(e))).toEqual([]);
    await gw.close();
  });
});

/** `name` whole in `where`, in one capped box, with its note shown. */
async function expectCappedName(where: Locator, name: string): Promise<void> {
  await where.first().waitFor();
  const box = where.locator("[data-capped]");
  expect(await box.count(), `${where}: a capped box`).toBe(1);
  expect(await box.locator(".name").textContent()).toBe(displayName(name));
  expect((await box.boundingBox())!.height, String(where)).toBeLessThanOrEqual(CAP);
  await expect.poll(() => where.getByTestId("cut-note").isVisible()).toBe(true);
}
