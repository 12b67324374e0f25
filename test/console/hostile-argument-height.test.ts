// An argument value as tall as the agent likes. The card drew each value in full, so one huge
// value (a memo of thousands of lines, shown as the terminal writes it: one JSON string) pushed
// the arguments after it (the payee) and the decision buttons out of view. Now each value's box
// is capped in height and scrolls, with a note saying so ("(N characters; scroll to read all)")
// whenever it does not all show, and never otherwise; every argument's name stays on the card.
// A long argument name did the same from its narrow column (shown by its first 128 characters,
// escaped: up to about 800), and is capped the same way.
import { describe, expect, it } from "vitest";
import { displayName } from "../../src/catalog/text.js";
import { browserSuite, held } from "../helpers/browser.js";
import { consoleGateway, openFirstCard, TRANSFER_TOOL } from "./helpers.js";

const suite = browserSuite();
const { cleanup } = suite;

describe("a huge argument value on the review card", () => {
  it("scrolls in a capped box that says so, and every argument's name and the buttons stay in view", async () => {
    const { stateDir, gw } = await consoleGateway(cleanup, [TRANSFER_TOOL]);
    const memo = Array.from({ length: 5000 }, (_, i) => `line ${i}`).join("\n");
    // before the payee, in the order the card draws them
    const args = { memo, wide: "W".repeat(20_000), short: "s".repeat(150), to: "mallory", amount: 5000 };
    const call = held(gw.client.callTool({ name: "transfer", arguments: args }));
    const page = suite.browser.page;
    const { card, viewport } = await openFirstCard(page, stateDir);

    // Every argument's name, the payee's value and the buttons are in the first screen.
    for (const name of Object.keys(args)) {
      const th = card.locator(".args th", { hasText: new RegExp(`^${name}$`) });
      const b = (await th.boundingBox())!;
      expect(b.y + b.height, name).toBeLessThanOrEqual(viewport.height);
    }
    for (const target of [
      card.locator(".args code.value", { hasText: '"mallory"' }),
      card.getByTestId("approve-call"),
      card.getByTestId("deny"),
    ]) {
      const b = (await target.boundingBox())!;
      expect(b.y + b.height, String(target)).toBeLessThanOrEqual(viewport.height);
    }

    // Each value is whole on the page (the box scrolls, nothing is cut), its box capped.
    const rows = card.locator(".args tbody tr");
    expect(await rows.count()).toBe(Object.keys(args).length);
    const memoRow = card.locator(".args tr", { has: page.locator("th", { hasText: /^memo$/ }) });
    expect(await memoRow.locator("code.value").textContent()).toBe(JSON.stringify(memo));
    const memoBox = memoRow.locator(".value-box");
    expect((await memoBox.boundingBox())!.height).toBeLessThanOrEqual(8 * 1.4 * 12 + 2);
    expect(await memoRow.getByTestId("cut-note").textContent()).toBe(
      `(${JSON.stringify(memo).length} characters; scroll to read all)`,
    );
    // Scrolled to its end, the box shows the value's last line.
    await memoBox.evaluate((b) => {
      b.scrollTop = b.scrollHeight;
    });
    await expect.poll(() => memoRow.getByText(/line 4999"$/).isVisible()).toBe(true);

    // A note shows exactly where its box does not show all of its value: the two huge ones, never
    // the payee's; the 150-character one as its column lays it out (the console writes its note,
    // since it may not fit a column 16 characters wide, and the page's script hides it where all of
    // it shows: at this width, it does).
    await expect
      .poll(() =>
        card.locator("[data-capped]").evaluateAll((boxes) =>
          boxes
            .filter((b) => b.closest("details:not([open])") === null)
            .map((b) => {
              const note = b.nextElementSibling as unknown as { hidden: boolean; offsetHeight: number };
              const cut = b.scrollHeight > b.clientHeight + 1;
              return cut === !note.hidden && note.offsetHeight > 0 === cut;
            }),
        ),
      )
      .not.toContain(false);
    for (const name of ["memo", "wide"]) {
      const row = card.locator(".args tr", { has: page.locator("th", { hasText: new RegExp(`^${name}$`) }) });
      expect(await row.getByTestId("cut-note").isVisible(), name).toBe(true);
    }
    // the page's CSP holds: the frames, caps and notes need no inline style or script
    expect(suite.browser.errors.filter((e) => /Content Security Policy/i.test(e))).toEqual([]);
    const payee = card.locator(".args tr", { has: page.locator("th", { hasText: /^to$/ }) });
    expect(await payee.getByTestId("cut-note").isVisible()).toBe(false);
    await gw.close();
    await call.catch(() => {});
  });

  it("a long argument name scrolls in a capped box that says so, and the payee stays in view", async () => {
    const { stateDir, gw } = await consoleGateway(cleanup, [TRANSFER_TOOL]);
    // 200 control characters: shown as their first 128, each written \u0001, then length and digest
    const long = "\u0001".repeat(200);
    const args = { [long]: "x", to: "mallory", amount: 5000 };
    const call = held(gw.client.callTool({ name: "transfer", arguments: args }));
    const page = suite.browser.page;
    const { card, viewport } = await openFirstCard(page, stateDir);
    for (const target of [
      card.locator(".args th", { hasText: /^to$/ }),
      card.locator(".args th", { hasText: /^amount$/ }),
      card.locator(".args code.value", { hasText: '"mallory"' }),
      card.getByTestId("approve-call"),
      card.getByTestId("deny"),
    ]) {
      const b = (await target.boundingBox())!;
      expect(b.y + b.height, String(target)).toBeLessThanOrEqual(viewport.height);
    }
    const box = card.locator(".args th .name-box");
    expect((await box.boundingBox())!.height).toBeLessThanOrEqual(8 * 1.4 * 12 + 2);
    // the name as the terminal shows it, whole in its box, and a note that it scrolls
    expect(await box.locator(".name").textContent()).toBe(displayName(long));
    const note = card.locator(".args th").getByTestId("cut-note");
    expect(await note.isVisible()).toBe(true);
    expect(await note.textContent()).toBe(`(${displayName(long).length} characters; scroll to read all)`);
    await gw.close();
    await call.catch(() => {});
  });
});
