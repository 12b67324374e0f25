// The page swaps its content when the store changes (a new request, one withdrawn), except while
// the pointer rests on a control. A capped box (an argument's value, the server's words) scrolls,
// and the human reads a long value by scrolling it: a swap then (the agent chooses when its
// requests come) put a fresh box back at its top under the pointer, the part being read gone.
// Now the pointer resting on a capped box holds the swap as on a button: the notice says that
// something changed, and the page changes once the pointer leaves.
import { describe, expect, it } from "vitest";
import { waitForPending } from "../helpers/approvals.js";
import { browserSuite, held } from "../helpers/browser.js";
import { consoleGateway, consoleOf, loginWithBrowser, TRANSFER_TOOL } from "./helpers.js";

const suite = browserSuite();
const { cleanup } = suite;

describe("a capped box the human is reading", () => {
  it("is not swapped under the pointer: the change waits until the pointer leaves", async () => {
    const { stateDir, gw } = await consoleGateway(cleanup, [TRANSFER_TOOL]);
    const memo = Array.from({ length: 2000 }, (_, i) => `line ${i}`).join("\n");
    const callA = held(
      gw.client.callTool({ name: "transfer", arguments: { memo, to: "mallory", amount: 5 } }),
    );
    const a = await waitForPending(stateDir, (l) => l[0], 20_000, "request A");
    const page = suite.browser.page;
    await loginWithBrowser(page, await consoleOf(stateDir));
    const box = page.locator(`[data-request-id="${a.request}"] .args .value-box`).first();
    await box.hover();
    await box.evaluate((b) => {
      b.scrollTop = 400;
    });

    // The agent asks again: the page learns of it, and waits, saying so.
    const callB = held(gw.client.callTool({ name: "transfer", arguments: { to: "eve", amount: 6 } }));
    await waitForPending(stateDir, (l) => l.find((p) => p.request !== a.request), 20_000, "request B");
    const notice = page.locator("#stale");
    await notice.waitFor();
    expect(await notice.textContent()).toMatch(/once the pointer leaves/);
    expect(await page.getByTestId("pending-request").count()).toBe(1);
    expect(await box.evaluate((b) => b.scrollTop)).toBe(400);

    // The pointer leaves: the page shows B.
    await page.mouse.move(5, 5);
    await expect.poll(() => page.getByTestId("pending-request").count()).toBe(2);
    await gw.close();
    await callA.catch(() => {});
    await callB.catch(() => {});
  });
});
