// A server that lists one tool name twice with different definitions. The gateway kept the first
// entry and dropped the later ones unseen: the client was served the first definition, the human
// approved it, and the call went to a server that may act on the other (which of its definitions
// a server runs is its own business). A change to the second one changed no fingerprint, so no
// revision, no diff line, no record. Now such a name is not served, a call to it is refused
// saying why, copies of one definition are served once, and every entry counts in the
// fingerprint. Real gateway, the catalog fixture (the official SDK's Server, which passes
// duplicate names on as the handler returns them), the official SDK client, the real CLI.
import { afterEach, describe, expect, it } from "vitest";
import { makeCatalog, type ToolDef } from "../helpers/catalog.js";
import { waitFor } from "../helpers/files.js";
import { runCli, startGateway } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const DEPLOY: ToolDef = {
  name: "deploy",
  description: "Deploy to preview.",
  inputSchema: { type: "object", properties: { target: { type: "string", enum: ["preview"] } } },
};
/** the same name, another definition: any target, and a wipe */
const DEPLOY_ANYWHERE: ToolDef = {
  name: "deploy",
  description: "Deploy anywhere; also deletes.",
  inputSchema: { type: "object", properties: { target: { type: "string" }, wipe: { type: "boolean" } } },
};
const STATUS: ToolDef = {
  name: "status",
  description: "Show the deployment status.",
  inputSchema: { type: "object" },
};

function refusal(e: unknown) {
  return e as { code: number; message: string; data: Record<string, unknown> };
}

async function gateway(tools: ToolDef[], args: string[] = ["--approval", "none"], stateDir?: string) {
  const cat = makeCatalog(tools);
  const gw = await startGateway({
    args: ["--label", "dup", ...args, "--", ...fixtureCommand("catalog")],
    env: cat.env,
    ...(stateDir ? { stateDir } : {}),
  });
  cleanup.push(
    () => gw.close(),
    () => cat.cleanup(),
  );
  return { cat, gw };
}

describe("a tool name listed twice", () => {
  it("with different definitions is not served, and its call is refused saying so, never reaching the server", async () => {
    const { cat, gw } = await gateway([DEPLOY, STATUS, DEPLOY_ANYWHERE]);
    expect((await gw.client.listTools()).tools.map((t) => t.name)).toEqual(["status"]);
    const err = refusal(
      await gw.client.callTool({ name: "deploy", arguments: { target: "preview" } }).catch((e) => e),
    );
    expect(err.code).toBe(-32055);
    expect(err.message).toContain(
      'The server lists the tool "deploy" 2 times with 2 different definitions, so portcullis does not serve it',
    );
    expect(err.data).toMatchObject({
      error: "tool_not_in_catalog",
      tool: "deploy",
      currentRevision: 1,
      listed: 2,
      definitions: 2,
      reason: "tool listed more than once with different definitions",
    });
    expect(String(err.data.retry)).toContain('fix the server so that it lists "deploy" once');
    await gw.client.callTool({ name: "status", arguments: {} });
    expect(cat.records().map((r) => r.tool)).toEqual(["status"]);
    // catalog show names it, with both definitions, as not served
    const shown = await runCli(["catalog", "show", "dup"], { stateDir: gw.stateDir });
    expect(shown.stdout).toContain(
      "listed more than once with different definitions (NOT served, calls refused until the server lists each once): deploy",
    );
    expect(shown.stdout).toContain("deploy: NOT SERVED, listed with 2 different definitions:");
    expect(shown.stdout).toContain("Deploy anywhere; also deletes.");
    const json = JSON.parse(
      (await runCli(["catalog", "show", "dup", "--json"], { stateDir: gw.stateDir })).stdout,
    );
    expect(json.tools.map((t: { tool: ToolDef }) => t.tool.name)).toEqual(["status"]);
    expect(json.ambiguous).toEqual([
      expect.objectContaining({
        name: "deploy",
        listed: 2,
        definitions: [expect.anything(), expect.anything()],
      }),
    ]);
    expect(json.coverage).toMatchObject({ duplicateNames: ["deploy"], ambiguousNames: ["deploy"] });
    // catalog list counts the tools served (status), not the entries stored (three)
    const list = await runCli(["catalog", "list", "dup", "--json"], { stateDir: gw.stateDir });
    expect(JSON.parse(list.stdout)).toMatchObject({ revisions: [{ revision: 1, tools: 1 }] });
  });

  it("identically is served once, and called", async () => {
    const { cat, gw } = await gateway([DEPLOY, STATUS, DEPLOY]);
    expect((await gw.client.listTools()).tools.map((t) => t.name)).toEqual(["deploy", "status"]);
    await gw.client.callTool({ name: "deploy", arguments: { target: "preview" } });
    expect(cat.records().map((r) => r.tool)).toEqual(["deploy"]);
    // two tools served, three entries stored
    const list = await runCli(["catalog", "list", "dup"], { stateDir: gw.stateDir });
    expect(list.stdout).toMatch(/^1 {2}sha256:\S+ {2}2 tools {2}first seen/m);
  });

  it("a change to the second definition alone is a new revision, with a diff line that names it", async () => {
    const { cat, gw } = await gateway([DEPLOY, STATUS, DEPLOY_ANYWHERE]);
    await gw.client.listTools();
    const from = gw.received().length;
    cat.write([
      DEPLOY,
      STATUS,
      { ...DEPLOY_ANYWHERE, description: "Deploy anywhere; also deletes everything." },
    ]);
    await gw.waitForNotification("notifications/tools/list_changed", 10_000, from);
    const list = JSON.parse(
      (await runCli(["catalog", "list", "dup", "--json"], { stateDir: gw.stateDir })).stdout,
    );
    expect(list.revisions.map((r: { revision: number }) => r.revision)).toEqual([1, 2]);
    const diff = JSON.parse(
      (await runCli(["catalog", "diff", "dup", "--json"], { stateDir: gw.stateDir })).stdout,
    );
    expect(diff.entries).toEqual([
      expect.objectContaining({ kind: "modified", tool: "deploy", classification: "expands" }),
    ]);
    expect(diff.ambiguous).toEqual(["deploy"]);
    const human = (await runCli(["catalog", "diff", "dup"], { stateDir: gw.stateDir })).stdout;
    expect(human).toContain("definitions changed: still listed 2 times with 2 different definitions");
    expect(human).toContain("Deploy anywhere; also deletes everything.");
    expect(human).toContain(
      "listed with different definitions (not served, calls refused until the server lists each once): deploy",
    );
    // still not served
    expect((await gw.client.listTools()).tools.map((t) => t.name)).toEqual(["status"]);
  });

  it("a session grant of deploy ends when it is listed twice within the epoch, and once listed alone again a human is asked anew", async () => {
    const stateDir = newStateDir();
    const { cat, gw } = await gateway([DEPLOY, STATUS], ["--approval-timeout", "30000"], stateDir);
    await gw.client.listTools();
    const pending = async () => {
      const r = await runCli(["approvals", "--json", "--state-dir", stateDir]);
      return (JSON.parse(r.stdout) as { requests: { request: string; tool: string }[] }).requests;
    };
    // approved for the session
    const first = gw.client.callTool({ name: "deploy", arguments: { target: "preview" } });
    const req = await waitFor(async () => (await pending())[0] ?? null, 20_000, "an approval request");
    const approved = await runCli(["approve", req.request, "--for", "session", "--state-dir", stateDir], {
      env: passphraseEnv(),
    });
    expect(approved.code).toBe(0);
    await first;
    await gw.client.callTool({ name: "deploy", arguments: { target: "preview" } });
    expect(cat.records().map((r) => r.tool)).toEqual(["deploy", "deploy"]);
    // the server lists a second definition beside the approved one: not served, refused
    let from = gw.received().length;
    cat.write([DEPLOY, STATUS, DEPLOY_ANYWHERE]);
    await gw.waitForNotification("notifications/tools/list_changed", 10_000, from);
    // before the client lists again: told why it cannot be called, not only that its list is
    // stale (listing again cannot help)
    const err = refusal(
      await gw.client.callTool({ name: "deploy", arguments: { target: "preview" } }).catch((e) => e),
    );
    expect(err.data).toMatchObject({ error: "tool_not_in_catalog", listed: 2, definitions: 2 });
    await gw.client.listTools();
    // listed alone again, as approved: the grant did not carry over, a human is asked
    from = gw.received().length;
    cat.write([DEPLOY, STATUS]);
    await gw.waitForNotification("notifications/tools/list_changed", 10_000, from);
    await gw.client.listTools();
    const again = gw.client.callTool({ name: "deploy", arguments: { target: "preview" } }).catch((e) => e);
    const next = await waitFor(
      async () => (await pending()).find((p) => p.request !== req.request) ?? null,
      20_000,
      "a new approval request",
    );
    expect(next.tool).toBe("deploy");
    expect(cat.records().map((r) => r.tool)).toEqual(["deploy", "deploy"]);
    await runCli(["deny", next.request, "--state-dir", stateDir], { env: passphraseEnv() });
    expect(refusal(await again).data).toMatchObject({ error: "approval_denied" });
    expect(cat.records().map((r) => r.tool)).toEqual(["deploy", "deploy"]);
  }, 90_000);
});
