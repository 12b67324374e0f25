// Any process of the user can append records to the audit log (they are sealed to the keyring's
// public key, which every process can read): thousands of runs of its own. The Audit page's
// Sessions table drew every run, in the order they started: 3,000 made a table of megabytes above
// the Activity table, the human's gateway's run first and the rest after it, or after all of them
// once it starts later. It now draws 25, the runs whose gateway still runs first, then the latest
// started, says how many there are and offers the next ones (the proof held, or the passphrase).
import { describe, expect, it } from "vitest";
import { AuditLog } from "../../src/audit/log.js";
import { openStore } from "../../src/store/db.js";
import { browserSuite } from "../helpers/browser.js";
import { TEST_PASSPHRASE } from "../helpers/state.js";
import { openAuditPage } from "./auditPageKit.js";
import { consoleGateway, startConsoleProcess, TRANSFER_TOOL } from "./helpers.js";

const suite = browserSuite();
const { cleanup } = suite;

const FORGED = 3000;

/** `n` runs of its own appended to the audit log, as any process of the user can. */
function appendRuns(stateDir: string, n: number): string {
  const db = openStore(stateDir);
  const realRun = db.prepare("SELECT run FROM runs").pluck().get() as string;
  const log = AuditLog.open(db, stateDir);
  log.appendMany(
    Array.from({ length: n }, (_, i) => ({
      type: "run_started" as const,
      run: `forged-${String(i).padStart(4, "0")}`,
      serverLabel: "shop",
    })),
  );
  log.close();
  db.close();
  return realRun;
}

describe("thousands of runs appended to the audit log", () => {
  it("leave the Audit page's Sessions table 25 rows long, the running gateway's run first, the rest counted and a click away", async () => {
    const { stateDir } = await consoleGateway(cleanup, [TRANSFER_TOOL]);
    const realRun = appendRuns(stateDir, FORGED);
    const c = await startConsoleProcess(stateDir);
    cleanup.push(() => c.stop());
    const page = suite.browser.page;
    const runs = await openAuditPage(page, c.url);
    expect(await runs.count()).toBe(25);
    expect(await runs.first().textContent()).toBe(realRun);
    // then the latest started: the last appended
    expect(await runs.nth(1).textContent()).toBe("forged-2999");
    expect(await page.getByTestId("sessions-capped").textContent()).toContain(
      `${(FORGED + 1).toLocaleString("en-US")} runs are in the audit; this table shows 1 to 25: the runs whose gateway still runs first, then the latest started first`,
    );
    expect((await page.content()).length).toBeLessThan(50_000);

    // the next 25: the held proof opens them, nothing asked
    await page.getByTestId("sessions-next").click();
    await expect.poll(() => runs.first().textContent()).toBe("forged-2975");
    expect(await runs.count()).toBe(25);
    expect(await page.getByTestId("sessions-capped").textContent()).toContain("this table shows 26 to 50");
    await page.getByTestId("sessions-previous").click();
    await expect.poll(() => runs.first().textContent()).toBe(realRun);
  });

  it("with no proof held (--proof-window 0), the next page asks for the passphrase again", async () => {
    const { stateDir } = await consoleGateway(cleanup, [TRANSFER_TOOL]);
    const realRun = appendRuns(stateDir, 30);
    const c = await startConsoleProcess(stateDir, ["--proof-window", "0"]);
    cleanup.push(() => c.stop());
    const page = suite.browser.page;
    const runs = await openAuditPage(page, c.url);
    await expect.poll(() => runs.first().textContent()).toBe(realRun);
    await page.getByTestId("sessions-next-proof").fill(TEST_PASSPHRASE);
    await page.getByTestId("sessions-next").click();
    await expect.poll(() => runs.first().textContent()).toBe("forged-0005");
    expect(await runs.count()).toBe(6);
    expect(await page.getByTestId("sessions-capped").textContent()).toContain(
      "31 runs are in the audit; this table shows 26 to 31",
    );
  });
});
