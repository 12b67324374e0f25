// Every field of a card at its cap at once: the server's words (title, description, inputs, hints,
// serverInfo, the catalog diff), the agent's six arguments (names and values), and everything a
// process of the user can write into the request's row and review. The buttons landed 5,062 px down
// a 1280×720 window, with nothing at the card's top saying so: each argument's row was ~490 px, its
// stored note in a column one letter wide and its look-alike warning nine lines in the value's
// column. The notes keep a word's width, the warning has a row of its own, and a card taller than
// the window says so under its title with a link to the buttons (manyArguments.ts tallCardNote).
// Every piece is capped, so what is left is the bound, measured here.
import type { Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { openStore } from "../../src/store/db.js";
import { browserSuite, held } from "../helpers/browser.js";
import { consoleGateway, openFirstCard } from "./helpers.js";

const suite = browserSuite();
const { cleanup } = suite;

const SCREEN = { width: 1280, height: 720 };
const TALL = Array.from({ length: 5000 }, (_, i) => `line ${i}`).join("\n");
const WIDE = "W".repeat(5000);
const NAMES = ["a", "b", "c", "d", "e", "f"].map((c) => `${c}${"n".repeat(127)}`);

const HOSTILE_TOOL = {
  name: `t${"x".repeat(127)}`,
  title: TALL,
  description: TALL,
  inputSchema: {
    type: "object",
    properties: Object.fromEntries(NAMES.map((n) => [n, { type: "string", description: TALL }])),
  },
  annotations: {
    title: TALL,
    readOnlyHint: true,
    destructiveHint: false,
    idempotentHint: true,
    openWorldHint: false,
  },
};

/** Where the buttons' bottom edge may land at 1280×720 with every field at its cap (measured: 4,212). */
const BOUND = 4400;

/** Every capped box's note shows exactly when the box does not show all of its text (open details only). */
const NOTES_EXACT = `(() => Array.from(document.querySelectorAll("[data-capped]"))
  .filter((b) => b.closest("details:not([open])") === null)
  .map((b) => {
    const note = b.nextElementSibling;
    if (!note || note.className !== "cut-note") return true;
    const cut = b.scrollHeight > b.clientHeight + 1 || b.scrollWidth > b.clientWidth + 1;
    return cut === !note.hidden;
  }))()`;

async function bottom(page: Page, testId: string): Promise<number> {
  const b = (await page.getByTestId("pending-request").getByTestId(testId).boundingBox())!;
  return Math.ceil(b.y + b.height);
}

describe("a card with every field at its cap", () => {
  it("puts the buttons at most 4,400 px down a 1280×720 window, every box capped with its note", async () => {
    const { stateDir, gw } = await consoleGateway(cleanup, [HOSTILE_TOOL]);
    // a mixed-script value (its warning), each as tall as the agent likes
    const args = Object.fromEntries(NAMES.map((n) => [n, `pаypal ${TALL}`]));
    const call = held(gw.client.callTool({ name: HOSTILE_TOOL.name, arguments: args }));
    const page = suite.browser.page;
    const { req } = await openFirstCard(page, stateDir);
    await page.setViewportSize(SCREEN);

    const db = openStore(stateDir);
    const row = db
      .prepare("SELECT review_json FROM approval_requests WHERE request = ?")
      .get(req.request) as {
      review_json: string;
    };
    const review = JSON.parse(row.review_json);
    review.serverLabel = TALL;
    review.createdAt = WIDE;
    review.expiresAt = WIDE;
    review.agentRun.run = WIDE;
    review.agentRun.startedAt = WIDE;
    review.agentRun.chainDigest = WIDE;
    for (const e of review.agentRun.chain) {
      e.executable = WIDE;
      e.pid = WIDE;
    }
    review.epoch.current = WIDE;
    review.epoch.summary = TALL;
    review.epoch.changedParts = TALL.split("\n");
    review.epoch.record = {
      ...(review.epoch.record ?? {}),
      launchCommand: [WIDE],
      remote: { url: WIDE, certificateChainSha256: WIDE, serverInfo: { name: TALL, version: TALL } },
    };
    review.catalog.revision = WIDE;
    review.catalog.lastApprovedRevision = WIDE;
    review.catalog.classification = "expands";
    review.catalog.rendered = TALL;
    review.tool.fingerprint = WIDE;
    review.tool.sinceLastGrant = {
      grant: WIDE,
      revision: 1,
      fingerprint: WIDE,
      classification: WIDE,
      rendered: TALL,
    };
    review.credentialScope = [WIDE];
    review.scopeNote = TALL;
    review.newDestinations = TALL.split("\n");
    for (const a of review.arguments) a.note = TALL;
    db.prepare("UPDATE approval_requests SET server_label = ?, review_json = ? WHERE request = ?").run(
      TALL,
      JSON.stringify(review),
      req.request,
    );
    db.close();

    await page.reload();
    const card = page.getByTestId("pending-request");
    await card.waitFor();
    // The bound: the buttons' bottom edge, measured at 4,212 px (5.9 screens of 720); docs/console.md
    // and docs/security.md say it. It was 5,062 px: the notes' column one letter wide and each
    // look-alike warning nine lines in the value's column, every argument's row ~490 px.
    for (const id of ["approve-session", "approve-call", "deny"])
      expect(await bottom(page, id), id).toBeLessThanOrEqual(BOUND);
    // the arguments' stored notes keep a column a word wide (it was one letter wide, every row ~490 px)
    const notes = card.locator(".args td.note");
    expect(await notes.count()).toBe(6);
    for (let i = 0; i < 6; i++) expect((await notes.nth(i).boundingBox())!.width).toBeGreaterThanOrEqual(60);
    // every box on the card is capped, with its note exactly where it does not all show
    await expect.poll(() => page.evaluate<boolean[]>(NOTES_EXACT)).not.toContain(false);
    // The card says at its top, in the first screen, that it is longer than the window, and its
    // link brings the three buttons into view.
    const tall = card.getByTestId("tall-card");
    await expect.poll(() => tall.isVisible()).toBe(true);
    expect(await tall.textContent()).toContain(
      "the decision buttons come after all of it, the 6 arguments included",
    );
    const link = tall.getByTestId("to-decision");
    expect((await link.boundingBox())!.y + (await link.boundingBox())!.height).toBeLessThanOrEqual(
      SCREEN.height,
    );
    await link.click();
    for (const id of ["approve-session", "approve-call", "deny"]) {
      const b = (await card.getByTestId(id).boundingBox())!;
      expect(b.y, id).toBeGreaterThanOrEqual(0);
      expect(b.y + b.height, id).toBeLessThanOrEqual(SCREEN.height);
    }
    await gw.close();
    await call.catch(() => {});
  });
});
