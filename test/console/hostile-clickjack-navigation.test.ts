// Double-click-jacking by navigation: the page swap is guarded (browser.test.ts, "a page that
// changes under the pointer"), a fresh page load is not. The agent's dev server on another
// loopback port is same-site with the console (ports do not make sites), so a navigation from it
// carries the console's SameSite=Strict session cookie, and the console's own script then adds
// the proof key from its origin's storage. The dev page moves the tab to request B's page on the
// human's first click; the second click of the double-click lands on "Approve this call".
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { storedPending, waitForPending } from "../helpers/approvals.js";
import { browserSuite, held } from "../helpers/browser.js";
import { sleep } from "../helpers/files.js";
import { consoleGateway, consoleOf, DEPLOY_TOOL, loginWithBrowser } from "./helpers.js";

const suite = browserSuite();
const { cleanup } = suite;

describe("a console page loaded under the human's pointer by another page", () => {
  it("a click landing within a moment of the load decides nothing (as after a swap)", async () => {
    const { stateDir, gw } = await consoleGateway(cleanup, [DEPLOY_TOOL]);
    const callB = held(
      gw.client.callTool({ name: "deploy", arguments: { target: "production", note: "B" } }),
    );
    const b = await waitForPending(stateDir, (l) => l[0], 20_000, "request B", storedPending);
    const base = await consoleOf(stateDir);

    // The human logged in a while ago (the proof is held for the window, as by default).
    const page = suite.browser.page;
    await loginWithBrowser(page, base);

    // Where B's "Approve this call" is drawn: the agent knows the console's layout (measured here
    // in a tab of its own, closed before the attack).
    const probe = await suite.browser.newPage();
    await probe.goto(`${base}/requests/${b.request}`);
    const box = (await probe.getByTestId("approve-call").boundingBox())!;
    await probe.close();
    const x = box.x + box.width / 2;
    const y = box.y + box.height / 2;

    // The agent's dev server: "double-click to open the preview". The first click sends the tab
    // to B's page; the second lands where B's approve button now is.
    const target = `${base}/requests/${b.request}`;
    const dev = createServer((_r, res) => {
      res.setHeader("Content-Type", "text/html");
      res.end(
        `<!doctype html><body style="margin:0"><button id="go" style="position:absolute;left:${x - 60}px;top:${y - 20}px;width:120px;height:40px">open preview</button>
<script>document.getElementById("go").addEventListener("mousedown", function () { location.href = ${JSON.stringify(target)}; });</script></body>`,
      );
    });
    await new Promise<void>((r) => dev.listen(0, "127.0.0.1", r));
    cleanup.push(
      () =>
        new Promise<void>((r) => {
          dev.close(() => r());
          dev.closeAllConnections();
        }),
    );
    await page.goto(`http://127.0.0.1:${(dev.address() as AddressInfo).port}/`);
    await page.mouse.click(x, y);
    // a slow double-click: the second click 400 ms after the first
    await sleep(400);
    expect(page.url()).toBe(target);
    await page.mouse.click(x, y);
    await sleep(1500);

    // The human never saw B's card before the click: B must still be pending.
    const outcome = (await page.locator("p.outcome").count())
      ? await page.locator("p.outcome").textContent()
      : null;
    expect({ pending: storedPending(stateDir).map((p) => p.request), outcome }).toEqual({
      pending: [b.request],
      outcome: null,
    });
    // Long after the load, the page another page opened still decides nothing (Sec-Fetch-Site:
    // same-site): its buttons are off and a line says to open it here.
    await expect(page.getByTestId("opened-from").isVisible()).resolves.toBe(true);
    expect(await page.getByTestId("approve-call").isDisabled()).toBe(true);
    await page.mouse.click(x, y);
    await sleep(500);
    expect(storedPending(stateDir).map((p) => p.request)).toEqual([b.request]);
    // Opened from the console itself, the same page decides.
    await page.getByTestId("opened-from").getByRole("link").click();
    await page.waitForSelector("main#live:not([data-opened-from]):not([data-settling])");
    await page.getByTestId("approve-call").click();
    await page.waitForSelector("p.outcome");
    expect(storedPending(stateDir)).toEqual([]);
    await gw.close();
    await callB.catch(() => {});
  });
});
