// A forged copy of a running gateway's request, seen in a real browser (Debian chromium) on the
// Requests page: its card says its gateway does not vouch for it, in the CLI's words; with the
// passphrase proof the login holds, a click on its approve button decides nothing until the box
// "a gateway printed this request's ID for me" is ticked (the browser will not send the form
// without it); the gateway's own request is not marked. Linux only (elsewhere no gateway vouches).
// A real gateway before the catalog fixture, the console it starts, a forged row written with SQLite.
import { describe, expect, it } from "vitest";
import { NOT_VOUCHED_NOTE } from "../../src/approval/vouch.js";
import { nextRequest } from "../helpers/approvals.js";
import { browserSuite, held } from "../helpers/browser.js";
import { waitFor } from "../helpers/files.js";
import { forgeInSameRun } from "../helpers/forgedRequests.js";
import {
  CARD_VIEWPORT,
  consoleGateway,
  consoleOf,
  loginWithBrowser,
  requestState,
  TRANSFER_TOOL,
} from "./helpers.js";

const suite = browserSuite();
const { cleanup } = suite;

const FORGED = "01M95GYS1Q2PM811SG8AHB299F";

describe.skipIf(process.platform !== "linux")("a forged request's card in the browser", () => {
  it("is marked not vouched, and its approval goes through only with the box ticked", async () => {
    const { stateDir, gw } = await consoleGateway(cleanup, [TRANSFER_TOOL]);
    held(gw.client.callTool({ name: "transfer", arguments: { to: "mallory", amount: 5 } }));
    const real = await nextRequest(stateDir, new Set());
    forgeInSameRun(stateDir, real.request, FORGED);
    const page = suite.browser.page;
    await page.setViewportSize(CARD_VIEWPORT);
    await loginWithBrowser(page, `${await consoleOf(stateDir)}/`);

    const forged = page.locator(`[data-request-id="${FORGED}"]`);
    const own = page.locator(`[data-request-id="${real.request}"]`);
    await forged.waitFor();
    await expect(forged.getByTestId("not-vouched").textContent()).resolves.toBe(NOT_VOUCHED_NOTE);
    expect(await forged.getByTestId("not-vouched").isVisible()).toBe(true);
    expect(await own.getByTestId("not-vouched").count()).toBe(0);
    expect(await own.getByTestId("confirm-unvouched").count()).toBe(0);

    // a click without the box: the browser does not send the form; nothing is decided
    await forged.getByTestId("approve-session").click();
    expect(
      await forged
        .getByTestId("confirm-unvouched")
        .evaluate((e) => (e as unknown as { validity: { valid: boolean } }).validity.valid),
    ).toBe(false);
    expect(page.url()).toBe(`${await consoleOf(stateDir)}/`);
    expect(requestState(stateDir, FORGED)).toBe("pending");

    // ticked: decided with the proof the login holds
    await forged.getByTestId("confirm-unvouched").check();
    await forged.getByTestId("approve-session").click();
    await waitFor(() => requestState(stateDir, FORGED) === "approved", 10_000, "the forged request approved");
    expect(requestState(stateDir, real.request)).toBe("pending");
  }, 60_000);
});
