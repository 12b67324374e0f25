// Any process of the user can write rows into the store: thousands of pending requests. The
// Requests page drew every one as a card (a page of tens of megabytes), oldest first, so rows dated
// in the past stood above the human's real request and its buttons, and a row dated in the future
// stood above every request a gateway would ever make; a forged row's process chain of thousands
// of processes made its card as long. The page now draws ten cards, newest first (rows said to be
// made at a time still to come after all the others), says how many it does not show with links to
// them, and opens a request by its ID alone; the chain is capped (requestList.ts, card.ts).
// `portcullis approvals` printed all of them too, the real one lost in the scroll: it prints the
// 20 newest, the newest last, and says how many are pending.

import { spawn } from "node:child_process";
import type { Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { openStore } from "../../src/store/db.js";
import { browserSuite, held } from "../helpers/browser.js";
import { waitFor } from "../helpers/files.js";
import { hostEnv, runCli } from "../helpers/gateway.js";
import { CLI, NODE } from "../helpers/paths.js";
import { consoleGateway, consoleOf, openFirstCard, TRANSFER_TOOL } from "./helpers.js";

const suite = browserSuite();
const { cleanup } = suite;

const SCREEN = { width: 1280, height: 720 };
const CAP = 8 * 1.4 * 12 + 2;

async function inView(targets: ReturnType<Page["locator"]>[]): Promise<void> {
  for (const target of targets) {
    const b = (await target.boundingBox())!;
    expect(b, String(target)).not.toBeNull();
    expect(b.y + b.height, String(target)).toBeLessThanOrEqual(SCREEN.height);
  }
}

function forge(
  stateDir: string,
  real: string,
  rows: { id: string; createdAt: string; chain?: number }[],
): void {
  const db = openStore(stateDir);
  const row = db.prepare("SELECT * FROM approval_requests WHERE request = ?").get(real) as Record<
    string,
    unknown
  >;
  const insert = db.prepare(
    `INSERT INTO approval_requests (${Object.keys(row).join(", ")}) VALUES (${Object.keys(row)
      .map(() => "?")
      .join(", ")})`,
  );
  db.transaction(() => {
    for (const f of rows) {
      const review = JSON.parse(row.review_json as string);
      review.createdAt = f.createdAt;
      if (f.chain !== undefined) {
        const one = review.agentRun.chain[0];
        review.agentRun.chain = Array.from({ length: f.chain }, (_, i) => ({ ...one, pid: 100_000 + i }));
      }
      insert.run(
        ...Object.values({
          ...row,
          request: f.id,
          created_at: f.createdAt,
          review_json: JSON.stringify(review),
        }),
      );
    }
  })();
  db.close();
}

const realCard = (page: Page, id: string) =>
  page.locator(`[data-testid=pending-request][data-request-id="${id}"]`);

describe("thousands of pending requests written into the store", () => {
  it("leave the real request first with its buttons in view, the page ten cards long, the rest a link away, and the real one openable by its ID", async () => {
    const { stateDir, gw } = await consoleGateway(cleanup, [TRANSFER_TOOL]);
    const call = held(gw.client.callTool({ name: "transfer", arguments: { to: "mallory", amount: 5000 } }));
    const page = suite.browser.page;
    const { req } = await openFirstCard(page, stateDir);
    await page.setViewportSize(SCREEN);
    const base = await consoleOf(stateDir);

    // 1,000 dated before it, 1,000 dated years ahead, 500 with no date an ISO string holds
    forge(stateDir, req.request, [
      ...Array.from({ length: 1000 }, (_, i) => ({
        id: `old${i}`,
        createdAt: `2000-01-01T00:00:${String(i % 60).padStart(2, "0")}.000Z`,
      })),
      ...Array.from({ length: 1000 }, (_, i) => ({
        id: `ahead${i}`,
        createdAt: `2099-01-01T00:00:${String(i % 60).padStart(2, "0")}.000Z`,
      })),
      ...Array.from({ length: 500 }, (_, i) => ({ id: `nodate${i}`, createdAt: `zz ${i}` })),
    ]);
    await page.goto(`${base}/`);
    const cards = page.getByTestId("pending-request");
    await cards.first().waitFor();
    expect(await cards.count()).toBe(10);
    expect(await cards.first().getAttribute("data-request-id")).toBe(req.request);
    const real = realCard(page, req.request);
    await inView([
      real.locator(".args code.value", { hasText: '"mallory"' }),
      real.getByTestId("approve-session"),
      real.getByTestId("approve-call"),
      real.getByTestId("deny"),
    ]);
    // a card that fits the window does not say it is longer than it (hostile-card-every-field)
    expect(await real.getByTestId("tall-card").isHidden()).toBe(true);
    expect(await page.getByTestId("requests-capped").textContent()).toContain(
      "2,501 requests are pending; this page shows 1 to 10",
    );
    expect(await page.getByTestId("requests-pager").textContent()).toContain(
      "2,491 more pending requests are not shown",
    );
    // the page is ten cards, not 2,501 (each card's HTML is several kilobytes)
    expect(await page.evaluate<number>("document.documentElement.outerHTML.length")).toBeLessThan(400_000);

    // `portcullis approvals` prints the 20 newest, the real one last (next to the prompt), and says
    // how many it leaves out; --all lists every one
    const listed = await runCli(["approvals", "--state-dir", stateDir]);
    expect(listed.code).toBe(0);
    expect(listed.stdout.split("\n")[0]).toContain(
      "2501 approval requests are pending; the 20 newest are listed",
    );
    const decideLines = listed.stdout.split("\n").filter((l) => l.startsWith("  decide "));
    expect(decideLines).toHaveLength(20);
    expect(decideLines.at(-1)).toContain(`approve ${req.request}`);
    const every = await runCli(["approvals", "--all", "--state-dir", stateDir]);
    expect(every.stdout.split("\n").filter((l) => l.startsWith("  decide "))).toHaveLength(2501);

    // `approvals --watch` draws the same 20, saying how many are pending
    const watch = spawn(NODE, [CLI, "approvals", "--watch", "--state-dir", stateDir], {
      env: hostEnv(),
      stdio: ["ignore", "pipe", "pipe"],
    });
    cleanup.push(() => {
      if (watch.exitCode === null) watch.kill("SIGKILL");
    });
    let frame = "";
    watch.stdout!.on("data", (d: Buffer) => {
      frame += d.toString();
    });
    await waitFor(() => frame.includes("decide the next:"), 20_000, "the watch's first frame");
    watch.kill("SIGTERM");
    expect(frame.split("\n")[0]).toContain(
      "2501 pending approval request(s); the 20 newest are shown, the newest last",
    );
    expect(frame).toContain(req.request);
    expect(new Set(frame.match(/\b(old|ahead|nodate)\d+\b/g)).size).toBe(19);

    // the rest are a link away, ten at a time; the ones dated ahead and undated come last
    await page.getByTestId("requests-next").click();
    await page.waitForURL((u) => u.search === "?from=10");
    expect(await cards.count()).toBe(10);
    expect(await realCard(page, req.request).count()).toBe(0);
    await page.goto(`${base}/?from=2500`);
    expect(await cards.count()).toBe(1);
    expect(await cards.first().getAttribute("data-request-id")).toMatch(/^(ahead|nodate)/);

    // Rows written after it, dated now, come first: they are newer. The real one is still one
    // form away, by the ID its gateway printed, alone on its page with its buttons in view; and a
    // forged chain of 5,000 processes is drawn 32 in a capped box.
    const now = new Date().toISOString();
    forge(stateDir, req.request, [
      ...Array.from({ length: 14 }, (_, i) => ({ id: `newer${i}`, createdAt: now })),
      { id: "newest", createdAt: now, chain: 5000 },
    ]);
    await page.goto(`${base}/`);
    await cards.first().waitFor();
    expect(await realCard(page, req.request).count()).toBe(0);
    const newest = page.locator('[data-request-id="newest"]');
    await newest.locator("details summary", { hasText: "full process chain (5000)" }).click();
    const chain = newest.getByTestId("chain-box");
    expect(await chain.locator("li").count()).toBe(32);
    expect((await chain.boundingBox())!.height).toBeLessThanOrEqual(CAP);
    expect(await newest.getByTestId("chain-not-shown").textContent()).toContain("4968 more processes");
    await page.getByTestId("open-id").fill(req.request);
    await page.getByTestId("open-by-id").locator("button").click();
    await page.waitForURL((u) => u.pathname === `/requests/${req.request}`);
    await inView([
      real.getByTestId("approve-session"),
      real.getByTestId("approve-call"),
      real.getByTestId("deny"),
    ]);
    await gw.close();
    await call.catch(() => {});
  });
});
