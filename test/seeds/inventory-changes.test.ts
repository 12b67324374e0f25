// Seed 003 ("Comment les changements de liste d'outils MCP modifient une session active"), played
// on one running server whose advertised list changes mid-session (no restart, same epoch):
// - post_comment added beside repo_search / read_issue / create_branch: an expansion, the run's
//   approvals end (a new decision before any further call);
// - delete_environment removed: a client that cached the old list may still try it; the gateway
//   refuses it though the server still has a handler;
// - search_logs renamed query_logs with a new `project` selector: shown as a rename candidate,
//   never merged, the selector in plain sight;
// - get_release "Get release details" → "Get and update release details", readOnlyHint
//   true → false: the new effect named; the client's list shows the new hint (seed 000);
// - the audit keeps both inventories and the classification (catalog_revised, grants_revoked).
// Real gateway, real catalog fixture, approvals by the real CLI with the passphrase.
import { afterEach, describe, expect, it } from "vitest";
import { decideByCli, nextStoredRequest, verifiedAuditEvents } from "../helpers/approvals.js";
import { DELETE_ENVIRONMENT, makeCatalog, type ToolDef } from "../helpers/catalog.js";
import { runCli, startGateway } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const obj = (props: Record<string, unknown>, required: string[]) => ({
  type: "object",
  properties: props,
  required,
});
const REPO_SEARCH: ToolDef = {
  name: "repo_search",
  description: "Search the repository.",
  inputSchema: obj({ query: { type: "string" } }, ["query"]),
  annotations: { readOnlyHint: true },
};
const READ_ISSUE: ToolDef = {
  name: "read_issue",
  description: "Read an issue.",
  inputSchema: obj({ issue_id: { type: "string" } }, ["issue_id"]),
  annotations: { readOnlyHint: true },
};
const CREATE_BRANCH: ToolDef = {
  name: "create_branch",
  description: "Create a branch.",
  inputSchema: obj({ name: { type: "string" } }, ["name"]),
};
const GET_RELEASE: ToolDef = {
  name: "get_release",
  description: "Get release details",
  inputSchema: obj({ version: { type: "string" } }, ["version"]),
  annotations: { readOnlyHint: true },
};
const GET_RELEASE_2: ToolDef = {
  ...GET_RELEASE,
  description: "Get and update release details",
  annotations: { readOnlyHint: false },
};
const SEARCH_LOGS: ToolDef = {
  name: "search_logs",
  description: "Search the build logs of this project.",
  inputSchema: obj({ query: { type: "string" } }, ["query"]),
};
const QUERY_LOGS: ToolDef = {
  name: "query_logs",
  description: "Query build logs.",
  inputSchema: obj({ project: { type: "string" }, query: { type: "string" } }, ["query"]),
};
const POST_COMMENT: ToolDef = {
  name: "post_comment",
  description: "Post a comment on an issue.",
  inputSchema: obj({ issue_id: { type: "string" }, body: { type: "string" } }, ["issue_id", "body"]),
};

function refusal(e: unknown) {
  return e as { code: number; data: Record<string, unknown> };
}

describe("seed 003: the tool list changes under a running session", () => {
  it("added, removed, renamed and reworded tools: the run's approvals end, a cached removed tool is refused, the review shows each difference, the audit keeps both inventories", async () => {
    const stateDir = newStateDir();
    const before = [REPO_SEARCH, READ_ISSUE, CREATE_BRANCH, GET_RELEASE, SEARCH_LOGS, DELETE_ENVIRONMENT];
    const cat = makeCatalog(before);
    const gw = await startGateway({
      args: [
        "--label",
        "tickets",
        "--approval-timeout",
        "30000",
        "--approval",
        "session",
        "--",
        ...fixtureCommand("catalog"),
      ],
      env: cat.env,
      stateDir,
    });
    cleanup.push(
      () => gw.close(),
      () => cat.cleanup(),
    );
    await gw.client.listTools();
    const epoch = JSON.parse((await runCli(["status", "--json"], { stateDir })).stdout).gateways[0].epoch;
    const seen = new Set<string>();
    const approveSession = async (name: string, args: Record<string, unknown>) => {
      const call = gw.client.callTool({ name, arguments: args });
      const r = await nextStoredRequest(stateDir, seen);
      expect(r.tool).toBe(name);
      await decideByCli(stateDir, "approve", r.request, "--for", "session");
      expect((await call).isError).toBeFalsy();
      return r;
    };
    await approveSession("read_issue", { issue_id: "1" });
    await approveSession("get_release", { version: "1.0" });
    // both covered now
    expect(
      (await gw.client.callTool({ name: "read_issue", arguments: { issue_id: "2" } })).isError,
    ).toBeFalsy();

    // the list changes under the running session (same process, same code)
    const from = gw.received().length;
    cat.write([REPO_SEARCH, READ_ISSUE, CREATE_BRANCH, GET_RELEASE_2, QUERY_LOGS, POST_COMMENT]);
    await gw.waitForNotification("notifications/tools/list_changed", 10_000, from);

    // a client that kept the old list still tries the removed tool: refused by the gateway
    const removed = refusal(
      await gw.client
        .callTool({ name: "delete_environment", arguments: { environment: "prod" } })
        .catch((e) => e),
    );
    expect([-32052, -32055]).toContain(removed.code);
    expect(cat.records().map((r) => r.tool)).not.toContain("delete_environment");

    // the refreshed list shows the new hint, so what the user sees stays accurate
    const listed = (await gw.client.listTools()).tools;
    expect(listed.find((t) => t.name === "get_release")?.annotations?.readOnlyHint).toBe(false);
    expect(listed.map((t) => t.name)).not.toContain("delete_environment");
    // after listing, the gateway still refuses it (the server would answer it)
    const removedAgain = refusal(
      await gw.client
        .callTool({ name: "delete_environment", arguments: { environment: "prod" } })
        .catch((e) => e),
    );
    expect(removedAgain.data).toMatchObject({ error: "tool_not_in_catalog" });

    // the unchanged read_issue asks again: the run's approval no longer means what it meant
    const again = gw.client.callTool({ name: "read_issue", arguments: { issue_id: "3" } });
    const r3 = await nextStoredRequest(stateDir, seen);
    expect(r3.tool).toBe("read_issue");
    expect(r3.executionEpoch).toBe(epoch);
    const review = await runCli(["approvals", "--verbose"], { stateDir });
    expect(review.code).toBe(0);
    const text = review.stdout;
    expect(text).toMatch(/\+ added\s+post_comment\s+expands/);
    expect(text).toMatch(/\+ added\s+query_logs\s+expands\s+\(renamed\? from search_logs\)/);
    expect(text).toMatch(/inputSchema\.properties\.project: property added/);
    expect(text).toMatch(/~ modified get_release\s+expands/);
    expect(text).toMatch(/names new effects \[new effects: update\]/);
    expect(text).toMatch(/readOnlyHint true→false/);
    expect(text).toMatch(/- removed\s+delete_environment\s+narrows/);
    await decideByCli(stateDir, "approve", r3.request, "--for", "session");
    expect((await again).isError).toBeFalsy();

    // the renamed tool is a new tool: asked about on its own
    // its refusal is caught at once: it comes while the deny below is awaited
    const logs = gw.client
      .callTool({ name: "query_logs", arguments: { query: "err", project: "other" } })
      .catch((e: unknown) => e);
    const r4 = await nextStoredRequest(stateDir, seen);
    expect(r4.tool).toBe("query_logs");
    await decideByCli(stateDir, "deny", r4.request, "--reason", "cross-project read");
    expect(refusal(await logs).data).toMatchObject({ error: "approval_denied" });
    expect(cat.records().map((r) => r.tool)).toEqual([
      "read_issue",
      "get_release",
      "read_issue",
      "read_issue",
    ]);

    await gw.close();
    const events = await verifiedAuditEvents(stateDir);
    const revised = events.filter((e) => e.type === "catalog_revised");
    expect(revised).toHaveLength(2);
    const names = (e: Record<string, unknown>) =>
      (e.inventory as { name: string }[]).map((t) => t.name).sort();
    expect(names(revised[0]!)).toEqual(before.map((t) => t.name).sort());
    expect(names(revised[1]!)).toEqual(
      ["create_branch", "get_release", "post_comment", "query_logs", "read_issue", "repo_search"].sort(),
    );
    expect(revised[1]!.diff).toBeTruthy();
    const revoked = events.filter((e) => e.type === "grants_revoked");
    expect(revoked).toHaveLength(1);
    const expanding = (revoked[0]!.expanding as { tool: string; kind: string }[]).map((x) => x.tool).sort();
    expect(expanding).toEqual(["get_release", "post_comment", "query_logs"]);
    expect((revoked[0]!.grants as string[]).length).toBe(2);
  });
});
