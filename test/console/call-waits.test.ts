// The console says whether a call waits on each pending request right now, in Debian's chromium
// (playwright-core): a raw client calls a guarded tool of the catalog fixture through a real
// gateway, the card says a call waits on its request; the client cancels the call
// (notifications/cancelled), and the page, updating itself, says no call waits on it any more
// and when the client cancelled it (before, it said `pending` as when a call waits); the same
// call again makes the request's own page say a call waits on it again.
import { describe, expect, it } from "vitest";
import { nextStoredRequest } from "../helpers/approvals.js";
import { browserSuite } from "../helpers/browser.js";
import { removeDir, tempDir, waitFor } from "../helpers/files.js";
import { FIXTURES, NODE } from "../helpers/paths.js";
import { rawGateway } from "../helpers/raw.js";
import { catalogFile, DEPLOY_TOOL, loginWithBrowser, startConsoleProcess } from "./helpers.js";

const suite = browserSuite();
const { cleanup } = suite;

describe("the console's request card", () => {
  it("says a call waits on the request, then that none does once the client cancelled it, then that one does again", async () => {
    const dir = tempDir("portcullis-console-call-waits-");
    cleanup.push(() => removeDir(dir));
    const gw = rawGateway({
      args: ["--label", "shop", "--approval", "session", "--approval-timeout", "600000"].concat([
        "--",
        NODE,
        FIXTURES.catalog,
      ]),
      env: { FIXTURE_CATALOG: catalogFile(dir, [DEPLOY_TOOL]) },
    });
    cleanup.push(() => gw.close());
    await gw.initialize();
    expect((await gw.request("tools/list")).result).toBeDefined();
    const call = (id: string) =>
      gw.send({
        jsonrpc: "2.0",
        id,
        method: "tools/call",
        params: { name: "deploy", arguments: { note: "ship it" } },
      });
    call("first");
    const { request } = await nextStoredRequest(gw.stateDir);

    const c = await startConsoleProcess(gw.stateDir);
    cleanup.push(() => c.stop());
    const page = suite.browser.page;
    await loginWithBrowser(page, `${c.url}/`);
    // the pointer off every control, so that the page swaps in what changed at once
    await page.mouse.move(1, 1);
    const card = page.locator(`[data-request-id="${request}"]`);
    const says = card.getByTestId("call-wait");
    await expect(says.getAttribute("data-call-waiting")).resolves.toBe("yes");
    expect(await says.textContent()).toMatch(
      /^a call waits on it \(since (?:\d{4}-\d\d-\d\d )?\d\d:\d\d:\d\d UTC\)$/,
    );

    gw.send({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: "first" } });
    await page.waitForSelector(`[data-request-id="${request}"] [data-call-waiting="no"]`);
    expect(await says.textContent()).toMatch(
      /^no call waits on it \(the client cancelled its call at (?:\d{4}-\d\d-\d\d )?\d\d:\d\d:\d\d UTC\); approving it for the session still covers this run's later calls of the tool$/,
    );
    // still a pending request a human may decide: its form is there
    await expect(card.getByTestId("approve-session").count()).resolves.toBe(1);

    // the request's own page (where gateways send humans) says the same, and follows the retry
    await page.goto(`${c.url}/requests/${request}`);
    await page.mouse.move(1, 1);
    await expect(says.getAttribute("data-call-waiting")).resolves.toBe("no");
    call("again");
    await waitFor(
      () => gw.stderr().includes(`joins approval request ${request}`) || null,
      20_000,
      "the retry to join the request",
    );
    await page.waitForSelector(`[data-request-id="${request}"] [data-call-waiting="yes"]`);
    expect(await says.textContent()).toMatch(
      /^a call waits on it \(since (?:\d{4}-\d\d-\d\d )?\d\d:\d\d:\d\d UTC\)$/,
    );
    expect(suite.browser.errors).toEqual([]);
  });
});
