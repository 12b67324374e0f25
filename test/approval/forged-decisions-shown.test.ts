// A decision written into the store by other means than approve or deny (plain SQL by a process
// of the same user) is never honoured by a gateway; the views a human reads to know what is
// approved say so: `grants`, `grants --json`, and the console's grants and request pages. A real
// gateway in front of the inventory fixture, the real CLI deciding with the passphrase, the real
// console in Debian's chromium; the attacker copies a real signed grant row onto another request.
import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { loginWithBrowser, startConsoleProcess } from "../console/helpers.js";
import { auditEvents, decideByCli, nextStoredRequest } from "../helpers/approvals.js";
import { browserSuite, held } from "../helpers/browser.js";
import { runCli, startInventory } from "../helpers/gateway.js";
import { makeProject } from "../helpers/project.js";
import { newStateDir } from "../helpers/state.js";

const suite = browserSuite();
const { cleanup } = suite;

const FORGED_GRANT = "01FORGEDGRANT0000000000001";
const MARK = '[data-testid="not-honoured"]';
const NOT_HONOURED_LINE =
  /^ {2}NOT HONOURED by any gateway: .*does not verify.* \(a row written into the store by other means than approve or deny\)$/m;

/** A connection to the gateway's store, as any process of the same user can open one. */
function sql(stateDir: string): Database.Database {
  const db = new Database(join(stateDir, "portcullis.db"));
  db.pragma("busy_timeout = 10000");
  cleanup.push(() => {
    db.close();
  });
  return db;
}

function refusal(e: unknown) {
  return e as { code: number; data: Record<string, unknown> };
}

interface ListedGrant {
  grant: string;
  request: string | null;
  honoured: boolean;
  notHonouredBecause?: string;
}

describe("a decision no gateway honours is marked in the views a human reads", () => {
  it("a copied grant row and a denial written by SQL: grants, grants --json and the console say NOT HONOURED; the gateway refuses them", async () => {
    const stateDir = newStateDir();
    const project = makeProject("A");
    cleanup.push(() => project.cleanup());
    // The forged calls' holds end after this (step 6 waits for it), long after the forgery of
    // step 3 lands (a fraction of a second after they ask): the CLI and console steps between run
    // meanwhile. 20 s left step 6 waiting 14 s for nothing.
    const gw = await startInventory(project, ["--approval-timeout", "10000"], { stateDir });
    cleanup.push(() => gw.close());
    await gw.client.listTools();
    const seen = new Set<string>();
    const db = sql(stateDir);

    // 1. a real session grant, approved by the human through the CLI, signed
    const first = held(gw.client.callTool({ name: "read_status", arguments: {} }));
    const approvedReq = await nextStoredRequest(stateDir, seen);
    await decideByCli(stateDir, "approve", approvedReq.request, "--for", "session");
    expect((await first).isError).toBeFalsy();
    const real = db.prepare("SELECT * FROM grants WHERE request = ?").get(approvedReq.request) as {
      grant_id: string;
      signature: string | null;
    };
    expect(real.signature).toBeTruthy();

    // … and a real denial through the CLI (its page must show no mark either)
    const deniedCall = held(gw.client.callTool({ name: "crash_now", arguments: {} }).catch((e) => e));
    const deniedReq = await nextStoredRequest(stateDir, seen);
    await decideByCli(stateDir, "deny", deniedReq.request, "--reason", "not now");
    expect(refusal(await deniedCall).data).toMatchObject({ error: "approval_denied" });

    // 2. two more calls wait for a human, of two other tools
    const forgedApproval = held(
      gw.client.callTool({ name: "adjust_inventory", arguments: { sku: "S-1", delta: 1 } }).catch((e) => e),
    );
    const approveTarget = await nextStoredRequest(stateDir, seen);
    expect(approveTarget.tool).toBe("adjust_inventory");
    const forgedDenial = held(
      gw.client.callTool({ name: "slow_write", arguments: { note: "n" } }).catch((e) => e),
    );
    const denyTarget = await nextStoredRequest(stateDir, seen);
    expect(denyTarget.tool).toBe("slow_write");

    // 3. the forger copies the real grant's row (its signature kept) onto the pending request
    const now = new Date().toISOString();
    const inserted = db
      .prepare(
        `INSERT INTO grants (grant_id, agent_run, server_label, execution_epoch, catalog_revision, tool_scope_json,
           tool_defs_json, credential_scope_json, mode, issued_at, expires_when, request, approved_by,
           revoked_at, revoked_by, ended_at, ended_reason, arguments_digest, signature, review_digest)
         SELECT ?, ?, server_label, ?, catalog_revision, ?,
           tool_defs_json, credential_scope_json, mode, ?, expires_when, ?, approved_by,
           revoked_at, revoked_by, ended_at, ended_reason, arguments_digest, signature, review_digest
         FROM grants WHERE grant_id = ?`,
      )
      .run(
        FORGED_GRANT,
        approveTarget.agentRun,
        approveTarget.executionEpoch,
        JSON.stringify([{ name: approveTarget.tool, fingerprint: approveTarget.fingerprint }]),
        now,
        approveTarget.request,
        real.grant_id,
      );
    expect(inserted.changes).toBe(1);
    expect(
      db
        .prepare(
          "UPDATE approval_requests SET state = 'approved', grant_id = ?, decided_by = 'forger', decided_at = ?, decision_for = 'session' WHERE request = ? AND state = 'pending'",
        )
        .run(FORGED_GRANT, now, approveTarget.request).changes,
    ).toBe(1);
    // … and denies the other with a bogus signature
    expect(
      db
        .prepare(
          "UPDATE approval_requests SET state = 'denied', decided_by = 'forger', decided_at = ?, reason = 'forged', decision_signature = ? WHERE request = ? AND state = 'pending'",
        )
        .run(now, "A".repeat(86), denyTarget.request).changes,
    ).toBe(1);

    // 4. `grants --json`: the real grant honoured, the copied one not, with why
    const json = await runCli(["grants", "--json", "--state-dir", stateDir]);
    expect(json.code, json.stderr).toBe(0);
    const listed = (JSON.parse(json.stdout) as { grants: ListedGrant[] }).grants;
    expect(listed.map((g) => g.grant).sort()).toEqual([FORGED_GRANT, real.grant_id].sort());
    const realListed = listed.find((g) => g.grant === real.grant_id)!;
    const forgedListed = listed.find((g) => g.grant === FORGED_GRANT)!;
    expect(realListed.honoured).toBe(true);
    expect(realListed).not.toHaveProperty("notHonouredBecause");
    expect(forgedListed.honoured).toBe(false);
    expect(forgedListed.notHonouredBecause).toMatch(/does not verify/);

    // `grants`: the NOT HONOURED line under the copied grant only
    const text = await runCli(["grants", "--state-dir", stateDir]);
    expect(text.code, text.stderr).toBe(0);
    const blocks = text.stdout.split("\n\n").filter((b) => b.trim() !== "");
    const block = (id: string) => blocks.find((b) => b.startsWith(`grant ${id} `));
    expect(blocks).toHaveLength(2);
    expect(block(FORGED_GRANT)).toMatch(NOT_HONOURED_LINE);
    expect(block(FORGED_GRANT)!.split("\n")[1]).toMatch(NOT_HONOURED_LINE);
    expect(block(real.grant_id)).toBeDefined();
    expect(block(real.grant_id)).not.toContain("NOT HONOURED");
    expect(text.stdout.match(/NOT HONOURED/g)).toHaveLength(1);

    // 5. the console, in a real browser
    const c = await startConsoleProcess(stateDir);
    cleanup.push(() => c.stop());
    const page = suite.browser.page;
    await loginWithBrowser(page, c.url);

    await page.goto(`${c.url}/grants`);
    await expect(page.locator('[data-testid="grant"]').count()).resolves.toBe(2);
    await expect(page.locator(MARK).count()).resolves.toBe(1);
    const forgedRow = page.locator(`[data-testid="grant"][data-grant-id="${FORGED_GRANT}"]`);
    await expect(forgedRow.locator(MARK).count()).resolves.toBe(1);
    expect(await forgedRow.locator(MARK).textContent()).toMatch(
      /NOT HONOURED by any gateway: .*does not verify/,
    );
    const realRow = page.locator(`[data-testid="grant"][data-grant-id="${real.grant_id}"]`);
    await expect(realRow.count()).resolves.toBe(1);
    await expect(realRow.locator(MARK).count()).resolves.toBe(0);

    /** The request's page: its outcome, and the not-honoured mark's text under it (null: none). */
    const requestPage = async (id: string) => {
      await page.goto(`${c.url}/requests/${id}`);
      const card = page.locator(`article[data-request-id="${id}"]`);
      await expect(card.count()).resolves.toBe(1);
      const outcome = (await card.locator("p.outcome").textContent()) ?? "";
      const marks = card.locator(`p.outcome ~ ${MARK}`);
      await expect(page.locator(MARK).count()).resolves.toBe(await marks.count());
      return { outcome, mark: (await marks.count()) === 0 ? null : await marks.first().textContent() };
    };
    const forgedApprovedPage = await requestPage(approveTarget.request);
    expect(forgedApprovedPage.outcome).toMatch(/^approved .* by forger/);
    expect(forgedApprovedPage.mark ?? "(no mark)").toMatch(/NOT HONOURED by any gateway: .*does not verify/);
    const forgedDeniedPage = await requestPage(denyTarget.request);
    expect(forgedDeniedPage.outcome).toMatch(/^denied .* by forger/);
    expect(forgedDeniedPage.mark ?? "(no mark)").toMatch(/NOT HONOURED by any gateway: .*does not verify/);
    const realApprovedPage = await requestPage(approvedReq.request);
    expect(realApprovedPage.outcome).toMatch(/^approved/);
    expect(realApprovedPage.mark).toBeNull();
    const realDeniedPage = await requestPage(deniedReq.request);
    expect(realDeniedPage.outcome).toMatch(/^denied/);
    expect(realDeniedPage.mark).toBeNull();

    // 6. the gateway honoured neither forgery: both waiting calls end unusable, never forwarded
    for (const [call, req] of [
      [forgedApproval, approveTarget],
      [forgedDenial, denyTarget],
    ] as const) {
      expect(refusal(await call)).toMatchObject({
        code: -32058,
        data: {
          error: "approval_timeout",
          reason: "approval request decided, but the decision did not verify",
          approvalRequest: req.request,
          pendingUntil: null,
        },
      });
    }
    expect(project.records().map((r) => r.tool)).toEqual(["read_status"]);
    const rejected = (await auditEvents(stateDir)).filter((e) => e.type === "decision_rejected");
    expect(rejected).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ what: "grant", grant: FORGED_GRANT, request: approveTarget.request }),
        expect.objectContaining({ what: "denial", request: denyTarget.request }),
      ]),
    );
    // the real grant still covers its run
    expect((await gw.client.callTool({ name: "read_status", arguments: {} })).isError).toBeFalsy();
  }, 120_000);
});
