// Rows in the store name a gateway by its pid and start time, and any process of the user can write
// rows naming a live process of its own, which passed for a running gateway: the Audit page puts
// the runs whose gateway runs first, the Catalog page the labels of running gateways, and such
// rows, the latest, came before the human's. A row now counts as running only when its live
// process is a portcullis `run` by its command line (src/console/gatewayProcesses.ts). Here the
// rows name this test's own process, which is alive and is no portcullis gateway; every other row
// says it ran in another PID namespace, which a row is free to say and the console cannot check.
import { describe, expect, it } from "vitest";
import { AuditLog } from "../../src/audit/log.js";
import { processStartTime } from "../../src/identity/proc.js";
import { recordedPlace } from "../../src/identity/procLiveness.js";
import { openStore } from "../../src/store/db.js";
import { browserSuite } from "../helpers/browser.js";
import { TEST_PASSPHRASE } from "../helpers/state.js";
import { consoleGateway, loginWithBrowser, startConsoleProcess, TRANSFER_TOOL } from "./helpers.js";

const suite = browserSuite();
const { cleanup } = suite;

const FORGED = 40;

/**
 * This process as a row records a gateway's process: alive, and not a portcullis `run`; for odd
 * `i`, in a PID namespace other than the console's, where its process cannot be read.
 */
function thisProcess(i: number) {
  const place = recordedPlace();
  const pidNs = i % 2 === 1 ? "pid:[4026599999]" : place.pidNs;
  return { pid: process.pid, start: processStartTime(process.pid), pidNs, boot: place.boot };
}

describe("rows naming a live process that is no portcullis gateway", () => {
  it("do not put their runs before the human's on the Audit page", async () => {
    const { stateDir } = await consoleGateway(cleanup, [TRANSFER_TOOL]);
    const db = openStore(stateDir);
    const realRun = db.prepare("SELECT run FROM runs").pluck().get() as string;
    const insert = db.prepare(
      `INSERT INTO runs (run, server_label, gateway_pid, gateway_pid_start, gateway_pid_ns, gateway_boot,
         chain_json, chain_digest, started_at) VALUES (?, 'shop', ?, ?, ?, ?, '[]', 'sha256:0', ?)`,
    );
    // each run's start in the log (its header carries this process's pid) and its row, not ended
    const log = AuditLog.open(db, stateDir);
    for (let i = 0; i < FORGED; i++) {
      const run = `forged-${String(i).padStart(2, "0")}`;
      const me = thisProcess(i);
      log.append({ type: "run_started", run, serverLabel: "shop" });
      insert.run(run, me.pid, me.start, me.pidNs, me.boot, new Date().toISOString());
    }
    log.close();
    db.close();
    const c = await startConsoleProcess(stateDir);
    cleanup.push(() => c.stop());
    const page = suite.browser.page;
    await loginWithBrowser(page, `${c.url}/audit`);
    await page.getByTestId("audit-proof").fill(TEST_PASSPHRASE);
    await page.getByRole("button", { name: "Open the audit" }).click();
    const runs = page.getByTestId("session-run");
    await runs.first().waitFor();
    expect(await runs.first().textContent()).toBe(realRun);
    expect(await runs.nth(1).textContent()).toBe(`forged-${FORGED - 1}`);
    expect(await page.getByTestId("sessions-capped").textContent()).toContain(
      `${FORGED + 1} runs are in the audit; this table shows 1 to 25`,
    );
  });

  it("do not put their labels before the running server's on the Catalog page", async () => {
    const { stateDir } = await consoleGateway(cleanup, [TRANSFER_TOOL]);
    const db = openStore(stateDir);
    const gateway = db.prepare("SELECT * FROM gateways").get() as Record<string, unknown>;
    const revision = db.prepare("SELECT * FROM catalog_revisions").get() as Record<string, unknown>;
    const row = (table: string, r: Record<string, unknown>) =>
      db
        .prepare(
          `INSERT INTO ${table} (${Object.keys(r).join(", ")}) VALUES (${Object.keys(r)
            .map(() => "?")
            .join(", ")})`,
        )
        .run(...Object.values(r));
    db.transaction(() => {
      for (let i = 0; i < FORGED; i++) {
        const label = `forged-${String(i).padStart(2, "0")}`;
        const me = thisProcess(i);
        // a gateway of its own, and a revision said to be later than the real server's
        row("gateways", {
          ...gateway,
          gateway_id: `forged${i}`,
          server_label: label,
          pid: me.pid,
          pid_start: me.start,
          pid_ns: me.pidNs,
          boot: me.boot,
        });
        row("catalog_revisions", {
          ...revision,
          server_label: label,
          first_seen_at: "2999-01-01T00:00:00.000Z",
        });
      }
    })();
    db.close();
    const c = await startConsoleProcess(stateDir);
    cleanup.push(() => c.stop());
    const page = suite.browser.page;
    await loginWithBrowser(page, `${c.url}/catalog`);
    const labels = page.locator("ul.labels li");
    await labels.first().waitFor();
    expect(await labels.first().textContent()).toBe(revision.server_label);
    expect(await labels.nth(1).textContent()).toBe("forged-00");
  });
});
