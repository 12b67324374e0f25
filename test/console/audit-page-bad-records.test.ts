// Any process of the user can append rows to the store's audit table: records sealed to the
// keyring's public key, which it reads, or bytes that open with nothing under a header of its
// choosing (the human's gateway's pid and writer id included, read from the store and the
// headers). One such record the Audit page picked to open (a `run_started` carrying the pid of
// the gateway that runs now is opened on every page) made every page say only "the audit could not
// be opened"; one that broke the chain hid every record after it, the human's own run's calls
// among them. The page now shows what it can: the human's run as `audit sessions` counts it, the
// bad records named with their seq and why, and the command that checks the log.
import type { Locator, Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { AuditLog } from "../../src/audit/log.js";
import { openStore } from "../../src/store/db.js";
import { decideByCli, nextStoredRequest } from "../helpers/approvals.js";
import { browserSuite } from "../helpers/browser.js";
import { runCli } from "../helpers/gateway.js";
import { passphraseEnv, TEST_PASSPHRASE } from "../helpers/state.js";
import { appendForged, gatewayOfRun } from "./forgedAudit.js";
import { consoleGateway, consoleOf, loginWithBrowser, TRANSFER_TOOL } from "./helpers.js";

const suite = browserSuite();
const { cleanup } = suite;

function section(page: Page, title: string): Locator {
  return page.locator("section", { has: page.locator("h2", { hasText: new RegExp(`^${title}$`) }) });
}

interface SessionJson {
  run: string | null;
  calls: number;
  epochs: string[];
  approvals: { requested: number; granted: number; denied: number };
}

/** The human's run as `portcullis audit sessions --json` shows it (the complete view). */
async function realSession(stateDir: string): Promise<SessionJson> {
  const full = await runCli(["audit", "sessions", "--json", "--state-dir", stateDir], {
    env: passphraseEnv(),
  });
  expect(full.code, full.stderr).toBe(0);
  const runs = (JSON.parse(full.stdout) as SessionJson[]).filter((s) => s.run !== null);
  expect(runs).toHaveLength(1);
  return runs[0]!;
}

/** Opens the audit in the console the gateway started, logged in with the passphrase. */
async function openAudit(stateDir: string): Promise<Page> {
  const page = suite.browser.page;
  await loginWithBrowser(page, `${await consoleOf(stateDir)}/audit`);
  await page.getByTestId("audit-proof").fill(TEST_PASSPHRASE);
  await page.getByRole("button", { name: "Open the audit" }).click();
  await page.locator("section h2", { hasText: /^(Sessions|Sessions and activity)$/ }).waitFor();
  return page;
}

async function cells(row: Locator): Promise<string[]> {
  return (await row.locator("td").allTextContents()).map((t) => t.trim());
}

describe("records on the Audit page that do not open, or break the chain", () => {
  it("a start forged with the running gateway's pid and writer, and a decision that does not open, are named; the human's run is shown whole", async () => {
    const { stateDir, gw } = await consoleGateway(cleanup, [TRANSFER_TOOL]);
    const call = gw.client.callTool({ name: "transfer", arguments: { to: "bob", amount: 5 } });
    await decideByCli(stateDir, "approve", (await nextStoredRequest(stateDir)).request);
    expect((await call).isError).toBeFalsy();
    const real = await realSession(stateDir);
    expect(real.approvals).toMatchObject({ requested: 1, granted: 1, denied: 0 });

    const gateway = gatewayOfRun(stateDir);
    const forgedStart = appendForged(stateDir, { type: "run_started", ...gateway });
    const forgedDecision = appendForged(stateDir, { type: "approval_granted" });
    const refused = await runCli(["audit", "sessions", "--state-dir", stateDir], { env: passphraseEnv() });
    expect(refused.code).toBe(1);

    const page = await openAudit(stateDir);
    expect(await page.locator("body").textContent()).not.toContain("could not be opened");
    // the human's run, as the complete view counted it before the forged records; the forged start
    // names no run, so it is no row
    const rows = section(page, "Sessions").locator("tbody tr");
    expect(await rows.count()).toBe(1);
    const first = await cells(rows.first());
    expect(first[0]).toBe(real.run);
    expect(first[4]).toBe(String(real.epochs.length));
    expect(first[5]).toBe("1");
    expect(first[7]).toBe("1 asked, 1 granted, 0 denied");
    expect(await section(page, "Activity").locator("tbody tr", { hasText: "transfer" }).count()).toBe(1);
    // each bad record named, with why, and the command that checks the log
    const notice = page.getByTestId("audit-left-out");
    expect(await notice.getAttribute("role")).toBe("alert");
    expect(await page.getByTestId("audit-left-out-record").allTextContents()).toEqual([
      `record ${forgedStart} does not open with the audit key (modified or forged payload)`,
      `record ${forgedDecision} does not open with the audit key (modified or forged payload)`,
    ]);
    expect(await notice.textContent()).toContain("portcullis audit verify");
  });

  it("a record that breaks the chain hides none of the human's records after it", async () => {
    const { stateDir, gw } = await consoleGateway(cleanup, [TRANSFER_TOOL]);
    const call = gw.client.callTool({ name: "transfer", arguments: { to: "bob", amount: 5 } });
    await decideByCli(stateDir, "approve", (await nextStoredRequest(stateDir)).request);
    expect((await call).isError).toBeFalsy();
    const broken = appendForged(stateDir, { type: "tool_result", breaks: true });
    // the human's run goes on: its gateway chains its next records to the forged head
    await gw.client.callTool({ name: "transfer", arguments: { to: "carol", amount: 7 } });
    const verify = await runCli(["audit", "verify", "--state-dir", stateDir], { env: passphraseEnv() });
    expect(verify.code).toBe(1);
    expect(verify.stderr + verify.stdout).toContain(`seq ${broken}`);

    const page = await openAudit(stateDir);
    const rows = section(page, "Sessions").locator("tbody tr");
    expect(await rows.count()).toBe(1);
    // both calls of the run: the second was recorded after the break
    expect((await cells(rows.first()))[5]).toBe("2");
    expect(await section(page, "Activity").locator("tbody tr", { hasText: "transfer" }).count()).toBe(2);
    // the break named where the chain is verified, with the command that says where it stops holding
    expect(await section(page, "Verification").textContent()).toContain(
      `the chain is broken at record ${broken}`,
    );
    expect(await section(page, "Verification").textContent()).toContain("portcullis audit verify");
  });

  it("a start sealed to the public key naming the running run under its gateway's pid adds to that run, never takes its place", async () => {
    const { stateDir, gw } = await consoleGateway(cleanup, [TRANSFER_TOOL]);
    const call = gw.client.callTool({ name: "transfer", arguments: { to: "bob", amount: 5 } });
    await decideByCli(stateDir, "approve", (await nextStoredRequest(stateDir)).request);
    expect((await call).isError).toBeFalsy();
    const real = await realSession(stateDir);
    // a start of the human's run, its gateway's pid in the header, by a writer of its own; then
    // runs enough to put the gateway's own start off the first page of the latest started
    appendForged(stateDir, {
      type: "run_started",
      pid: gatewayOfRun(stateDir).pid,
      writer: "01ARZ3NDEKTSV4RRFFQ69G5FAV",
      event: { run: real.run, serverLabel: "shop" },
    });
    const db = openStore(stateDir);
    for (let i = 0; i < 30; i++) {
      const log = AuditLog.open(db, stateDir);
      log.append({ type: "run_started", run: `appended-${i}`, serverLabel: "shop" });
      log.close();
    }
    db.close();

    const page = await openAudit(stateDir);
    const first = await cells(section(page, "Sessions").locator("tbody tr").first());
    expect(first[0]).toBe(real.run);
    expect(first[5]).toBe("1");
    expect(first[7]).toBe("1 asked, 1 granted, 0 denied");
    expect(await page.getByTestId("audit-left-out").count()).toBe(0);
  });
});
