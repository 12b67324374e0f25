import { afterEach, describe, expect, it } from "vitest";
import { DEPLOY_TOOL, httpLogin, post, raw, requestState, startConsoleProcess } from "../console/helpers.js";
import type { Pending } from "../helpers/approvals.js";
import { waitForPending } from "../helpers/approvals.js";
import { held } from "../helpers/browser.js";
import { heldDeploys } from "../helpers/heldDeploys.js";

const STATUS_TOOL = { name: "status", description: "Says the status.", inputSchema: { type: "object" } };

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

describe("a request's or a grant's JSON column rewritten in the store into something unreadable", () => {
  it("is listed as unreadable and grants nothing; the other rows keep working", async () => {
    const setup = await heldDeploys(cleanup, ["damaged", "fine"], [DEPLOY_TOOL, STATUS_TOOL]);
    const { stateDir, gw, db, cli } = setup;
    const [a, b] = setup.requests as [Pending, Pending];
    const [first, second] = setup.calls as [Promise<{ isError?: unknown }>, Promise<{ isError?: unknown }>];
    const c = await startConsoleProcess(stateDir);
    cleanup.push(() => c.stop());

    for (const [column, damaged, why] of [
      ["credential_scope_json", "{", "is not JSON"],
      ["credential_scope_json", '{"a":1}', "is not a list of names"],
      ["definition_json", "{", "is not JSON"],
    ] as const) {
      const was = db
        .prepare(`SELECT ${column} FROM approval_requests WHERE request = ?`)
        .pluck()
        .get(a!.request);
      db.prepare(`UPDATE approval_requests SET ${column} = ? WHERE request = ?`).run(damaged, a!.request);
      const at = `${column} ${damaged}`;

      const listed = await cli("approvals");
      expect(listed.code, `${at}: ${listed.stderr}`).toBe(0);
      const ofA = listed.stdout.split("\n").filter((l) => l.includes(a!.request));
      expect(ofA, at).toHaveLength(1);
      expect(ofA[0]).toContain(
        `approval request ${a!.request}: its row in the store cannot be read (approval_requests.${column} ${why}`,
      );
      expect(ofA[0]).toContain("nobody can approve or deny it");
      expect(listed.stdout).toContain(`portcullis approve ${b.request}`);
      const json = await cli("approvals", "--json");
      expect(json.code, `${at}: ${json.stderr}`).toBe(0);
      const jsonA = (JSON.parse(json.stdout) as { requests: Record<string, unknown>[] }).requests.find(
        (r) => r.request === a!.request,
      )!;
      expect(jsonA.review, at).toBeNull();
      expect(jsonA.unreadable).toContain(`approval_requests.${column}`);

      const approved = await cli("approve", a!.request, "--for", "session");
      expect(approved.code, `${at}: ${approved.stderr}`).toBe(1);
      expect(approved.stderr).toContain(`approval request ${a!.request} cannot be decided`);
      expect(approved.stderr).toContain(`approval_requests.${column}`);
      expect(requestState(stateDir, a!.request)).toBe("pending");

      const s = await httpLogin(c.url);
      const home = await raw(`${c.url}/`, { headers: { Cookie: s.cookie } });
      expect(home.status, at).toBe(200);
      const cards = home.body.split("<article").slice(1);
      const cardA = cards.find((x) => x.includes(`data-request-id="${a!.request}"`))!;
      expect(cardA, at).toContain('data-testid="unreadable-request"');
      expect(cardA).not.toMatch(/approve-(session|call)/);
      expect(cards.find((x) => x.includes(`data-request-id="${b.request}"`))).toContain(
        'data-testid="approve-call"',
      );
      // nor decided there: a denial posted anyway is refused, as any decision (decidableRequest)
      const denied = await post(
        c.url,
        `/requests/${a!.request}/decide`,
        { csrf: s.csrf, action: "deny", proof: s.proofKey ?? "" },
        { Cookie: s.cookie },
      );
      expect(denied.status, at).toBe(409);
      expect(denied.body).toContain(`approval_requests.${column}`);
      expect(requestState(stateDir, a!.request)).toBe("pending");

      if (column === "definition_json") continue; // A stays damaged for what follows
      db.prepare(`UPDATE approval_requests SET ${column} = ? WHERE request = ?`).run(was, a!.request);
    }

    // B approved for the session: its grant covers the next call, until its tool scope is damaged
    const approveB = await cli("approve", b.request, "--for", "session");
    expect(approveB.code, approveB.stderr).toBe(0);
    expect((await second).isError).toBeFalsy();
    expect(
      (await gw.client.callTool({ name: "deploy", arguments: { note: "covered" } })).isError,
    ).toBeFalsy();
    const grant = db
      .prepare("SELECT grant_id FROM grants WHERE request = ?")
      .pluck()
      .get(b.request) as string;
    db.prepare("UPDATE grants SET tool_scope_json = '{' WHERE grant_id = ?").run(grant);

    const grants = await cli("grants");
    expect(grants.code, grants.stderr).toBe(0);
    expect(grants.stdout).toContain(grant);
    expect(grants.stdout).toContain("grants.tool_scope_json is not JSON");
    expect(grants.stdout).toContain("covers no call");
    const grantsJson = await cli("grants", "--json");
    expect(grantsJson.code, grantsJson.stderr).toBe(0);
    const s = await httpLogin(c.url);
    const page = await raw(`${c.url}/grants`, { headers: { Cookie: s.cookie } });
    expect(page.status).toBe(200);
    expect(page.body).toContain("grants.tool_scope_json is not JSON");

    // A call its cached grants do not cover makes the gateway read them again: the damaged one is
    // read as covering nothing, the call is held for a human (no error), and so is deploy's next.
    for (const tool of ["status", "deploy"]) {
      const call = held(gw.client.callTool({ name: tool, arguments: {} }));
      const asked = await waitForPending(
        stateDir,
        (l) => l.find((p) => p.request !== a!.request && p.tool === tool),
        20_000,
        `${tool} held`,
      );
      const denied = await cli("deny", asked.request);
      expect(denied.code, denied.stderr).toBe(0);
      await expect(call).rejects.toThrow("A human denied this call");
    }
    await gw.close();
    await first.catch(() => {});
  }, 30_000);
});
