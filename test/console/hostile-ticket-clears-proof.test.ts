// A page on another loopback port, written by an agent that runs as the user, against a human
// logged in to the console with the passphrase proof held. The ticketed link answers a browser
// without the ticket cookie with `Clear-Site-Data: "cache", "storage"` (what an earlier server on
// the port left goes), and the storage is where the console's page keeps the held proof's key.
// Cookies are shared by every port of the host, so the page drops the ticket cookie (Max-Age=0),
// and the ticket is in console.json, which the agent reads: it sends the human's tab to the
// ticketed link, and the key went, the next decision asking for the passphrase again. Now the
// storage is cleared only for a request that brings no live session (there is no held proof to
// lose then); with one, only the cache: the key stays, and the human still decides with a click.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { readConsoleAddress } from "../../src/console/address.js";
import { storedPending, waitForPending } from "../helpers/approvals.js";
import { browserSuite, held } from "../helpers/browser.js";
import { consoleGateway, consoleOf, loginWithBrowser, TRANSFER_TOOL } from "./helpers.js";

const suite = browserSuite();
const { cleanup } = suite;

const proofKey = "localStorage.getItem('portcullis-proof')";

describe("a ticketed link a page on another port sends the human's tab to", () => {
  it("leaves the held proof's key of a live session: the next decision is still one click", async () => {
    const { stateDir, gw } = await consoleGateway(cleanup, [TRANSFER_TOOL]);
    const call = held(gw.client.callTool({ name: "transfer", arguments: { to: "mallory", amount: 5 } }));
    const req = await waitForPending(stateDir, (l) => l[0], 20_000, "a request", storedPending);
    const base = await consoleOf(stateDir);
    const port = new URL(base).port;
    const ticket = readConsoleAddress(stateDir)!.ticket!;
    const page = suite.browser.page;
    // the human comes by the printed link and gives the passphrase: the key is kept
    await loginWithBrowser(page, `${base}/?ticket=${ticket}`);
    const key = await page.evaluate(proofKey);
    expect(key).toMatch(/./);

    // The agent's page: its answer drops the console's ticket cookie, its script sends the tab to
    // the ticketed link of the request.
    const dev = createServer((_r, res) => {
      res.setHeader("Set-Cookie", `portcullis_ticket_${port}=; Max-Age=0; Path=/`);
      res.setHeader("Content-Type", "text/html");
      res.end(
        `<!doctype html><body><script>location.href = ${JSON.stringify(`${base}/requests/${req.request}?ticket=${ticket}`)};</script></body>`,
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
    const cleared: Promise<string | null>[] = [];
    page.on("response", (r) => {
      if (r.url().includes("ticket=")) cleared.push(r.allHeaders().then((h) => h["clear-site-data"] ?? null));
    });
    await page.goto(`http://127.0.0.1:${(dev.address() as AddressInfo).port}/`);
    await page.waitForURL(`${base}/requests/${req.request}`);
    await page.getByTestId("pending-request").waitFor();
    // the key is still there: the link was followed without the ticket cookie (so the cache was
    // cleared), but the storage was not
    expect(await page.evaluate(proofKey)).toBe(key);
    expect(await Promise.all(cleared)).toEqual(['"cache"']);

    // The human opens the request from the console and approves it with one click.
    await page.goto(`${base}/requests/${req.request}`);
    await page.waitForSelector("main#live:not([data-settling])");
    await page.getByTestId("approve-call").click();
    await page.waitForSelector("p.outcome");
    expect(await page.getByTestId("decision-proof").count()).toBe(0);
    expect(storedPending(stateDir)).toEqual([]);
    expect((await call).isError).toBeFalsy();
  });
});
