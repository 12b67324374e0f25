// Text from the store or the configuration, as long as a process of the user makes it. The server's
// words and the agent's argument values are capped (serverText.ts), but a server's label, the
// credential scope names, the epoch's summary, the process chain, an argument's note, the new
// egress destinations and a grant's fields were drawn at their full height and width: a 10,000-line
// label in the card's title, a 5,000-character scope name, pushed the payee and the decision
// buttons out of the first screen. A same-user agent can write all of it (it edits portcullis.json
// and the store's rows), so each is now capped like the server's words, with its note, under no
// caption (storedText.ts). Here the request's row and its review are rewritten in the store, both
// alike so that the request stays decidable, and a catalog revision is recorded under the label.
import type { Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { insertPasskeyRow } from "../../src/approval/passkeyRows.js";
import { recordRevision, snapshotOf } from "../../src/catalog/index.js";
import { atPasskeyOrigin } from "../../src/console/passkeyOrigin.js";
import { openStore } from "../../src/store/db.js";
import { browserSuite, held } from "../helpers/browser.js";
import { removeDir } from "../helpers/files.js";
import { newStateDir, TEST_PASSPHRASE } from "../helpers/state.js";
import {
  consoleGateway,
  consoleOf,
  loginWithBrowser,
  openFirstCard,
  startConsoleProcess,
  TRANSFER_TOOL,
} from "./helpers.js";

const suite = browserSuite();
const { cleanup } = suite;

const CAP = 8 * 1.4 * 12 + 2;
/** 10,001 lines, a fake heading every 500 */
const LABEL = ["shop", ...Array.from({ length: 10_000 }, (_, i) => (i % 500 === 0 ? "ARGUMENTS" : ""))].join(
  "\n",
);
const SCOPE = "S".repeat(5000);
const CATALOG_LABEL = `A${"\n".repeat(1000)}${"L".repeat(1000)}`;
const TALL = Array.from({ length: 10_000 }, (_, i) => `line ${i}`).join("\n");
const WIDE = "W".repeat(5000);

/** Every capped box's note shows exactly when the box does not show all of its text (open details only). */
const NOTES_EXACT = `(() => Array.from(document.querySelectorAll("[data-capped]"))
  .filter((b) => b.closest("details:not([open])") === null)
  .map((b) => {
    const note = b.nextElementSibling;
    const cut = b.scrollHeight > b.clientHeight + 1 || b.scrollWidth > b.clientWidth + 1;
    return cut === !note.hidden && (note.offsetHeight > 0) === cut;
  }))()`;

/** The page scrolls not sideways: nothing on it is wider than the window. */
const PAGE_WIDTH = "document.documentElement.scrollWidth";

async function inView(page: Page, targets: ReturnType<Page["locator"]>[]): Promise<void> {
  const viewport = page.viewportSize()!;
  for (const target of targets) {
    const b = (await target.boundingBox())!;
    expect(b, String(target)).not.toBeNull();
    expect(b.y + b.height, String(target)).toBeLessThanOrEqual(viewport.height);
    expect(b.x + b.width, String(target)).toBeLessThanOrEqual(viewport.width);
  }
}

async function storedBoxesCapped(page: Page): Promise<void> {
  const boxes = page.getByTestId("stored-text").filter({ visible: true });
  const n = await boxes.count();
  expect(n).toBeGreaterThan(0);
  for (let i = 0; i < n; i++) expect((await boxes.nth(i).boundingBox())!.height).toBeLessThanOrEqual(CAP);
  await expect.poll(() => page.evaluate<boolean[]>(NOTES_EXACT)).not.toContain(false);
  expect(await page.evaluate<number>(PAGE_WIDTH)).toBeLessThanOrEqual(page.viewportSize()!.width);
  expect(suite.browser.errors.filter((e) => /Content Security Policy/i.test(e))).toEqual([]);
}

describe("hostile text from the store and the configuration on the console's pages", () => {
  it("is capped on the card, the passphrase page, the Grants, Servers and Catalog pages: the payee and the buttons stay in view", async () => {
    const { stateDir, gw } = await consoleGateway(cleanup, [TRANSFER_TOOL]);
    const call = held(gw.client.callTool({ name: "transfer", arguments: { to: "mallory", amount: 5000 } }));
    const base = await consoleOf(stateDir);
    const page = suite.browser.page;
    const { req } = await openFirstCard(page, stateDir);

    const db = openStore(stateDir);
    const row = db
      .prepare("SELECT review_json FROM approval_requests WHERE request = ?")
      .get(req.request) as {
      review_json: string;
    };
    const review = JSON.parse(row.review_json);
    review.serverLabel = LABEL;
    review.credentialScope = [SCOPE, "bank"];
    review.scopeNote = TALL;
    review.createdAt = WIDE;
    review.epoch.summary = TALL;
    review.epoch.changedParts = Array.from({ length: 1000 }, (_, i) => `part ${i}`);
    review.agentRun.chain[0].executable = WIDE;
    review.agentRun.startedAt = TALL;
    review.newDestinations = Array.from({ length: 2000 }, (_, i) => `host${i}.example:443`);
    // the payee's note (a review rewritten in the store can also list 50 arguments, which puts the
    // buttons below the first screen by design, behind the card's link to them: hostileManyArguments)
    review.arguments.find((a: { name: string }) => a.name === "to").note = TALL;
    db.prepare(
      "UPDATE approval_requests SET server_label = ?, credential_scope_json = ?, review_json = ? WHERE request = ?",
    ).run(LABEL, JSON.stringify(review.credentialScope), JSON.stringify(review), req.request);
    db.prepare("UPDATE gateways SET server_label = ?").run(LABEL);
    // a label sorted before the real one ("shop"), short enough to be asked for in a URL
    recordRevision(db, CATALOG_LABEL, snapshotOf([TRANSFER_TOOL], 1), null);
    db.close();

    await page.reload();
    const card = page.getByTestId("pending-request");
    await card.waitFor();
    await inView(page, [
      card.locator(".args code.value", { hasText: '"mallory"' }),
      card.locator(".args th", { hasText: /^amount$/ }),
      card.getByTestId("approve-session"),
      card.getByTestId("approve-call"),
      card.getByTestId("deny"),
    ]);
    // each piece whole in its box (the box scrolls, nothing is cut), under no caption of the server's
    const title = card.locator("header h2 [data-testid=stored-text]");
    expect(await title.textContent()).toBe(LABEL);
    expect(await title.locator("xpath=ancestor::figure").count()).toBe(0);
    expect(await card.locator(".args [data-testid=stored-text]", { hasText: SCOPE }).textContent()).toBe(
      `${SCOPE}, bank`,
    );
    await expect.poll(() => title.locator("xpath=following-sibling::*[1]").isVisible()).toBe(true);
    expect(await title.locator("xpath=following-sibling::*[1]").textContent()).toBe(
      `(${LABEL.split("\n").length} lines; scroll to read all)`,
    );
    await storedBoxesCapped(page);

    // The decision's passphrase page names the label too; its field and button stay in view.
    await page.evaluate("localStorage.removeItem('portcullis-proof')");
    // (the row rewritten in the store is one its gateway no longer vouches for: approving it needs
    // the box ticked, below the buttons)
    await card.getByTestId("confirm-unvouched").check();
    await card.getByTestId("approve-session").click();
    await page.getByTestId("decision-proof").waitFor();
    await inView(page, [page.getByTestId("decision-proof"), page.getByTestId("decision-submit")]);
    await storedBoxesCapped(page);
    await page.getByTestId("decision-proof").fill(TEST_PASSPHRASE);
    await page.getByTestId("decision-submit").click();
    await page.waitForURL((u) => !u.pathname.endsWith("/decide"));

    // The grant made from the rewritten row carries the label and the scopes: Revoke stays in view.
    await page.goto(`${base}/grants`);
    const grant = page.getByTestId("grant");
    await grant.waitFor();
    await inView(page, [grant.getByTestId("revoke")]);
    await storedBoxesCapped(page);

    // The Servers page: the gateway's row under the label, its execution record after it in view.
    await page.goto(`${base}/servers`);
    await page.locator("article.server").waitFor();
    await inView(page, [page.locator("article.server dt", { hasText: "identity" })]);
    await storedBoxesCapped(page);

    // The Catalog page: the label among the labels, the next one ("shop") in view; and its revisions.
    await page.goto(`${base}/catalog`);
    await inView(page, [page.locator("ul.labels a", { hasText: /^shop$/ })]);
    await storedBoxesCapped(page);
    await page.goto(`${base}/catalog?label=${encodeURIComponent(CATALOG_LABEL)}`);
    await inView(page, [page.locator("main table tbody tr").first()]);
    await storedBoxesCapped(page);
    await gw.close();
    await call.catch(() => {});
  });

  it("a passkey row written into the store with a long name is capped on the Passkeys page, its Remove button and the form to add one in view", async () => {
    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    const db = openStore(stateDir);
    // no pin in the audit chain: listed by the table's name, as not honoured
    insertPasskeyRow(db, {
      credentialId: "forged-credential",
      name: TALL,
      publicKey: "AAAA",
      counter: 0,
      rpId: "localhost",
      transports: [],
      createdAt: WIDE,
      pinSeq: 1,
    });
    db.close();
    const c = await startConsoleProcess(stateDir);
    cleanup.push(() => c.stop());
    const page = suite.browser.page;
    await page.setViewportSize({ width: 1400, height: 1000 });
    await loginWithBrowser(page, `${atPasskeyOrigin(c.url)}/passkeys`);
    const row = page.getByTestId("passkey");
    await row.waitFor();
    await inView(page, [row.getByTestId("passkey-remove"), page.getByTestId("passkey-register")]);
    expect(await row.locator("[data-testid=stored-text]", { hasText: "line 9999" }).textContent()).toBe(TALL);
    await storedBoxesCapped(page);
  });

  it("an unreadable request's card above the real one is capped: the real card's buttons stay in view", async () => {
    const { stateDir, gw } = await consoleGateway(cleanup, [TRANSFER_TOOL]);
    const call = held(gw.client.callTool({ name: "transfer", arguments: { to: "mallory", amount: 5000 } }));
    const page = suite.browser.page;
    const { req } = await openFirstCard(page, stateDir);
    // A copy of the request's row, listed first (made later: the list is newest first), its scope
    // not JSON (so it is drawn as unreadable), its id and its expiry as long as the writer likes.
    const db = openStore(stateDir);
    const row = db.prepare("SELECT * FROM approval_requests WHERE request = ?").get(req.request) as Record<
      string,
      unknown
    >;
    const copy = {
      ...row,
      request: `0${"I".repeat(5000)}`,
      created_at: new Date().toISOString(),
      credential_scope_json: "{",
      expires_at: `${row.expires_at as string}${"\n".repeat(10_000)}later`,
    };
    const columns = Object.keys(copy);
    db.prepare(
      `INSERT INTO approval_requests (${columns.join(", ")}) VALUES (${columns.map(() => "?").join(", ")})`,
    ).run(...Object.values(copy));
    db.close();

    await page.goto(`${await consoleOf(stateDir)}/`);
    const unreadable = page.getByTestId("unreadable-request");
    await unreadable.waitFor();
    const card = page.locator(`[data-testid=pending-request][data-request-id="${req.request}"]`);
    await inView(page, [
      card.locator(".args code.value", { hasText: '"mallory"' }),
      card.getByTestId("approve-session"),
      card.getByTestId("approve-call"),
      card.getByTestId("deny"),
    ]);
    expect(await unreadable.locator("h2 [data-testid=stored-text]").textContent()).toBe(copy.request);
    await storedBoxesCapped(page);
    await gw.close();
    await call.catch(() => {});
  });
});
