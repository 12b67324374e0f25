// An agent's call of many arguments on the review card. Every argument is drawn before the
// decision buttons, so 50 of them put the buttons thousands of pixels down, with nothing at the
// top of the card saying how many there are or where the buttons went. The buttons stay after the
// last argument (never kept in view beside arguments never on the screen); the card now says at
// its top how many arguments there are, that the buttons come after them, and links down to the
// decision, where the count is said again with a link back up to the first argument.
import { describe, expect, it } from "vitest";
import { storedPending, waitForPending } from "../helpers/approvals.js";
import { browserSuite, held } from "../helpers/browser.js";
import { consoleGateway, consoleOf, loginWithBrowser, openFirstCard, TRANSFER_TOOL } from "./helpers.js";

const suite = browserSuite();
const { cleanup } = suite;

describe("a call of 50 arguments on the review card", () => {
  it("says how many at the top of the card, links to the decision after the last of them, and back", async () => {
    const { stateDir, gw } = await consoleGateway(cleanup, [TRANSFER_TOOL]);
    const args: Record<string, unknown> = {};
    for (let i = 0; i < 48; i++) args[`note${String(i).padStart(2, "0")}`] = `line ${i}\n`.repeat(20);
    args.to = "mallory";
    args.amount = 5000;
    const call = held(gw.client.callTool({ name: "transfer", arguments: args }));
    const page = suite.browser.page;
    const { card, viewport } = await openFirstCard(page, stateDir);
    const inView = async (target: ReturnType<typeof card.locator>) => {
      const b = (await target.boundingBox())!;
      return b.y >= 0 && b.y + b.height <= viewport.height;
    };

    // the buttons are far below the first screen, and the card's top says so, with the count
    expect(await inView(card.getByTestId("deny"))).toBe(false);
    const summary = card.getByTestId("arguments-summary");
    expect(await inView(summary)).toBe(true);
    expect(await summary.textContent()).toContain("This call has 50 arguments");
    expect(await summary.textContent()).toContain("the decision buttons come after the last of them");

    // every argument is on the page, and all of them come before the buttons
    const rows = card.locator(".args tbody tr");
    expect(await rows.count()).toBe(50);
    const after = await card.evaluate((c) => {
      const lastRow = c.querySelector(".args tbody tr:last-child")!;
      const deny = c.querySelector('[data-testid="deny"]')!;
      return (lastRow.compareDocumentPosition(deny) & 4) !== 0; // DOCUMENT_POSITION_FOLLOWING
    });
    expect(after, "the buttons follow the last argument").toBe(true);

    // the link goes to the decision: the count again and the three buttons in view
    await card.getByTestId("to-decision").click();
    await expect.poll(() => inView(card.getByTestId("deny"))).toBe(true);
    for (const target of [
      card.getByTestId("arguments-recap"),
      card.getByTestId("approve-call"),
      card.getByTestId("approve-session"),
    ]) {
      expect(await inView(target), String(target)).toBe(true);
    }
    expect(await card.getByTestId("arguments-recap").textContent()).toContain(
      "all 50 arguments listed above",
    );
    // and back up to the first argument
    await card.getByTestId("to-arguments").click();
    await expect.poll(() => inView(card.locator(".args th", { hasText: /^note00$/ }))).toBe(true);
    expect(suite.browser.errors.filter((e) => /Content Security Policy/i.test(e))).toEqual([]);
    await gw.close();
    await call.catch(() => {});
  });

  it("a call of a few arguments gets no such line", async () => {
    const { stateDir, gw } = await consoleGateway(cleanup, [TRANSFER_TOOL]);
    const call = held(gw.client.callTool({ name: "transfer", arguments: { to: "mallory", amount: 5 } }));
    const req = await waitForPending(stateDir, (l) => l[0], 20_000, "a request", storedPending);
    const page = suite.browser.page;
    await loginWithBrowser(page, `${await consoleOf(stateDir)}/requests/${req.request}`);
    const card = page.getByTestId("pending-request");
    await card.waitFor();
    expect(await card.getByTestId("arguments-summary").count()).toBe(0);
    expect(await card.getByTestId("arguments-recap").count()).toBe(0);
    await gw.close();
    await call.catch(() => {});
  });
});
