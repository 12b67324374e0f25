// Names on the review card drawn so that they hide or bend what the human reads. The names are the
// server's (its tool's name, its inputs') and the agent's (the arguments it sends), and the card
// showed them in ways the terminal does not:
// - HTML collapses a run of spaces: the arguments `"to x"` and `"to  x"` read alike, while
//   `approve` prints them apart (displayName quotes them as they are);
// - the argument names' column did not wrap: a 128-character name (plain, so shown bare) took
//   the row's width and squeezed every value beside it into a column one character wide, the
//   payee `"mallory"` drawn as seven lines of one letter each;
// - the tool's heading is set in capitals (text-transform), so the tool `transfer` read as
//   `TRANSFER`, a name the server may list as another tool.
import { describe, expect, it } from "vitest";
import { recordRevision, snapshotOf, type Tool } from "../../src/catalog/index.js";
import { displayName } from "../../src/catalog/text.js";
import { openStore } from "../../src/store/db.js";
import { storedPending, waitForPending } from "../helpers/approvals.js";
import { browserSuite, held } from "../helpers/browser.js";
import { removeDir } from "../helpers/files.js";
import { newStateDir } from "../helpers/state.js";
import {
  consoleGateway,
  consoleOf,
  loginWithBrowser,
  startConsoleProcess,
  TRANSFER_TOOL,
} from "./helpers.js";

const suite = browserSuite();
const { cleanup } = suite;

const LONG = "a".repeat(128);

describe("names on the review card", () => {
  it("keep their spaces and their case, and a long one leaves the values beside it readable", async () => {
    const { stateDir, gw } = await consoleGateway(cleanup, [TRANSFER_TOOL]);
    const args = { [LONG]: "x", "to x": "savings", "to  x": "mallory", to: "mallory", amount: 5000 };
    const call = held(gw.client.callTool({ name: "transfer", arguments: args }));
    const req = await waitForPending(stateDir, (l) => l[0], 20_000, "a request", storedPending);
    const page = suite.browser.page;
    await page.setViewportSize({ width: 1000, height: 800 });
    await loginWithBrowser(page, `${await consoleOf(stateDir)}/requests/${req.request}`);

    // Each name reads as the terminal prints it: no two alike (the long one in a box that scrolls,
    // its note under it).
    const names = (await page.locator(".args th .name").allInnerTexts()).map((n) => n.replace(/\n/g, ""));
    expect.soft(names.sort()).toEqual(Object.keys(args).map(displayName).sort());

    // The tool's name in its heading is in its own case (as drawn: text-transform applies).
    expect.soft((await page.locator("section.tool h3 > code").allInnerTexts())[0]).toBe("transfer");

    // Beside the long name, the payee is one line inside the card, as wide as its text.
    const card = (await page.getByTestId("pending-request").boundingBox())!;
    const row = page.locator(".args tr", { has: page.locator("th", { hasText: /^to$/ }) });
    const value = (await row.locator("code.value").boundingBox())!;
    expect.soft(await row.locator("code.value").allInnerTexts()).toEqual(['"mallory"']);
    const lineHeight = 12 * 1.4;
    expect.soft(value.height, "one line").toBeLessThan(lineHeight * 1.5);
    expect.soft(value.x + value.width).toBeLessThanOrEqual(card.x + card.width);
    await gw.close();
    await call.catch(() => {});
  });

  it("on the Catalog page, two inputs whose names differ in their spaces read apart", async () => {
    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    const db = openStore(stateDir);
    const tool = (properties: Record<string, unknown>): Tool[] => [
      { name: "transfer", description: "Sends money.", inputSchema: { type: "object", properties } },
    ];
    recordRevision(db, "bank", snapshotOf(tool({}), 1), null);
    recordRevision(
      db,
      "bank",
      snapshotOf(tool({ "to x": { type: "string" }, "to  x": { type: "string" } }), 1),
      null,
    );
    db.close();
    const c = await startConsoleProcess(stateDir);
    cleanup.push(() => c.stop());
    const page = suite.browser.page;
    await loginWithBrowser(page, c.url);
    await page.goto(`${c.url}/catalog?label=bank&from=1&to=2`);
    const paths = (await page.locator("table.diff td:first-child code").allInnerTexts()).filter((t) =>
      t.includes("to"),
    );
    expect(paths).toHaveLength(2);
    expect(new Set(paths).size, JSON.stringify(paths)).toBe(2);
  });
});
