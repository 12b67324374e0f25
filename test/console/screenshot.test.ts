// The README's picture of the review card (docs/console-review.png), taken from a real console in
// front of a real gateway whose server changed a tool after it was approved. It only runs with
// PORTCULLIS_SCREENSHOT=1 (`npm run screenshot`): a picture is not a test, but the steps are.
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { decideByCli, nextRequest } from "../helpers/approvals.js";
import { launchBrowser } from "../helpers/browser.js";
import { removeDir, tempDir, writeJsonAtomic } from "../helpers/files.js";
import { REPO } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";
import {
  catalogFile,
  consoleOf,
  DEPLOY_TOOL,
  gatewayFor,
  loginWithBrowser,
  stopConsoleOf,
} from "./helpers.js";

const cleanup: (() => Promise<void> | void)[] = [];
afterAll(async () => {
  for (const c of cleanup.reverse()) await c();
});

describe.skipIf(process.env.PORTCULLIS_SCREENSHOT !== "1")("the review card, pictured", () => {
  it("writes docs/console-review.png", async () => {
    const stateDir = newStateDir();
    const dir = tempDir("portcullis-console-shot-");
    cleanup.push(() => {
      removeDir(dir);
      removeDir(stateDir);
    });
    cleanup.push(() => stopConsoleOf(stateDir));
    const tools = catalogFile(dir, [DEPLOY_TOOL]);
    const gw = await gatewayFor(stateDir, tools);
    cleanup.push(() => gw.close());
    await gw.client.listTools();
    const seen = new Set<string>();
    const first = gw.client.callTool({ name: "deploy", arguments: { note: "release 1.4" } });
    await decideByCli(stateDir, "approve", (await nextRequest(stateDir, seen)).request);
    await first;

    // The server widens the tool after approval: a new target and a new destination field.
    writeJsonAtomic(tools, [
      {
        ...DEPLOY_TOOL,
        description: "Deploys the current branch, and can promote it to every region at once.",
        inputSchema: {
          ...DEPLOY_TOOL.inputSchema,
          properties: {
            ...DEPLOY_TOOL.inputSchema.properties,
            target: { type: "string", enum: ["preview", "production", "all-regions"], default: "preview" },
            webhook_url: { type: "string", format: "uri" },
          },
        },
      },
    ]);
    await gw.waitForNotification("notifications/tools/list_changed", 20_000);
    await gw.client.listTools();
    const second = gw.client
      .callTool({
        name: "deploy",
        arguments: {
          target: "all-regions",
          note: "hotfix",
          webhook_url: "https://hooks.example/x?token=abc123",
        },
      })
      .catch(() => {});
    const req = await nextRequest(stateDir, seen);
    const base = await consoleOf(stateDir);

    const browser = await launchBrowser();
    cleanup.push(() => browser.close());
    await loginWithBrowser(browser.page, `${base}/requests/${req.request}`);
    const card = browser.page.getByTestId("pending-request");
    await card.waitFor();
    await browser.page
      .locator("details")
      .first()
      .evaluate((d) => {
        (d as { open: boolean }).open = false;
      });
    // the buttons as the human sees them, once their first second (off: a click then decides nothing) is over
    await expect.poll(() => card.getByTestId("approve-session").isEnabled()).toBe(true);
    const out = join(REPO, "docs", "console-review.png");
    // the window down to the card's end, no empty space under it (a smaller file for the README)
    const box = (await card.boundingBox())!;
    const height = Math.min(1000, Math.ceil(box.y + box.height + 16));
    await browser.page.screenshot({ path: out, clip: { x: 0, y: 0, width: 1400, height } });
    expect(await card.isVisible()).toBe(true);
    await card.getByTestId("deny-reason").fill("not all regions");
    await card.getByTestId("deny").click();
    await second;
  });
});
