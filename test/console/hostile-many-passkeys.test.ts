// Any process of the user can write passkey rows into the store: a thousand of them, made before
// the human's own. The Passkeys page drew every one, so the human's passkey, its Remove button and
// the form to add one were tens of thousands of pixels down. A row the audit chain does not pin is
// honoured by no gateway: the page lists the honoured ones first and draws five rows, saying how many
// there are and how many are honoured (passkeyPages.ts).
import type { Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { insertPasskeyRow } from "../../src/approval/passkeyRows.js";
import { atPasskeyOrigin } from "../../src/console/passkeyOrigin.js";
import { openStore } from "../../src/store/db.js";
import { browserSuite } from "../helpers/browser.js";
import { removeDir } from "../helpers/files.js";
import { newStateDir } from "../helpers/state.js";
import { loginWithBrowser, startConsoleProcess } from "./helpers.js";

const suite = browserSuite();
const { cleanup } = suite;

const SCREEN = { width: 1280, height: 720 };

async function bottomOf(target: ReturnType<Page["locator"]>): Promise<number> {
  const b = (await target.boundingBox())!;
  return b.y + b.height;
}

describe("a thousand passkey rows written into the store", () => {
  it("leave the human's passkey first, its Remove button and the form to add one in view", async () => {
    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    const c = await startConsoleProcess(stateDir);
    cleanup.push(() => c.stop());
    const page = suite.browser.page;
    const cdp = await page.context().newCDPSession(page);
    await cdp.send("WebAuthn.enable");
    const { authenticatorId } = await cdp.send("WebAuthn.addVirtualAuthenticator", {
      options: {
        protocol: "ctap2",
        transport: "internal",
        hasResidentKey: true,
        hasUserVerification: true,
        isUserVerified: true,
        automaticPresenceSimulation: true,
      },
    });
    cleanup.push(async () => {
      await cdp.send("WebAuthn.removeVirtualAuthenticator", { authenticatorId }).catch(() => {});
      await cdp.detach().catch(() => {});
    });
    const url = `${atPasskeyOrigin(c.url)}/passkeys`;
    await page.setViewportSize(SCREEN);
    await loginWithBrowser(page, url);
    await page.getByTestId("passkey-name").fill("laptop");
    await page.getByTestId("passkey-register").click();
    await page.getByTestId("passkey").waitFor();
    const realId = await page.getByTestId("passkey").getAttribute("data-passkey-id");

    const db = openStore(stateDir);
    db.transaction(() => {
      for (let i = 0; i < 1000; i++)
        insertPasskeyRow(db, {
          credentialId: `forged-${String(i).padStart(4, "0")}`,
          name: `laptop ${i}`,
          publicKey: "AAAA",
          counter: 0,
          rpId: "localhost",
          transports: [],
          createdAt: "2000-01-01T00:00:00.000Z",
          pinSeq: 1,
        });
    })();
    db.close();

    await page.goto(url);
    const rows = page.getByTestId("passkey");
    await rows.first().waitFor();
    expect(await rows.count()).toBe(5);
    expect(await rows.first().getAttribute("data-passkey-id")).toBe(realId);
    expect(await bottomOf(rows.first().getByTestId("passkey-remove"))).toBeLessThanOrEqual(SCREEN.height);
    expect(await bottomOf(page.getByTestId("passkey-register"))).toBeLessThanOrEqual(SCREEN.height);
    expect(await page.getByTestId("passkeys-capped").textContent()).toContain(
      "1001 passkey rows are in the store, 1 of them honoured by gateways; 5 are listed here",
    );
  });
});
