// Argument names on the review card are put in as they are (card.ts, argumentsPart: `<th>${a.name}</th>`),
// not as the terminal shows them (render.ts: `displayName(a.name)`, quoted when not plain). HTML
// collapses a trailing space, a tab or a line end, so `to` and `to\t` look the same on the card
// while `approve` prints `to` and `"to\t"`. An agent (or a server's words steering it) sends both:
// the human cannot tell which row the server reads.
import { describe, expect, it } from "vitest";
import { storedPending, waitForPending } from "../helpers/approvals.js";
import { browserSuite, held } from "../helpers/browser.js";
import { consoleGateway, consoleOf, loginWithBrowser, TRANSFER_TOOL } from "./helpers.js";

const suite = browserSuite();
const { cleanup } = suite;

describe("argument names on the review card", () => {
  it("two different names never look the same (as on the terminal)", async () => {
    const { stateDir, gw } = await consoleGateway(cleanup, [TRANSFER_TOOL]);
    const call = held(
      gw.client.callTool({ name: "transfer", arguments: { "to\t": "savings", to: "mallory", amount: 5000 } }),
    );
    const req = await waitForPending(stateDir, (l) => l[0], 20_000, "a request", storedPending);
    const page = suite.browser.page;
    await loginWithBrowser(page, `${await consoleOf(stateDir)}/requests/${req.request}`);
    const names = await page.locator(".args th").allInnerTexts();
    expect(names).toHaveLength(3);
    // what the human reads for each row's name: no two alike
    expect(new Set(names).size, JSON.stringify(names)).toBe(3);
    await gw.close();
    await call.catch(() => {});
  });
});
