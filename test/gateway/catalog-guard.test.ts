// Catalog revisions and the stale-call guard, end to end: fixture servers with several
// revisions driven through the gateway by the official SDK client.
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterEach, describe, expect, it } from "vitest";
import { DELETE_ENVIRONMENT, makeCatalog, numberedTools, type ToolDef } from "../helpers/catalog.js";
import { sleep, waitFor } from "../helpers/files.js";
import { runCli, type Session, startGateway, startInventory } from "../helpers/gateway.js";
import { fixtureCommand, NODE } from "../helpers/paths.js";
import { makeProject } from "../helpers/project.js";

const READ_ISSUE: ToolDef = {
  name: "read_issue",
  description: "Read an issue.",
  inputSchema: { type: "object", required: ["issue_id"], properties: { issue_id: { type: "string" } } },
  annotations: { readOnlyHint: true },
};
const POST_COMMENT: ToolDef = {
  name: "post_comment",
  description: "Post a comment on an issue.",
  inputSchema: {
    type: "object",
    required: ["issue_id", "body"],
    properties: { issue_id: { type: "string" }, body: { type: "string" } },
  },
};

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

async function catalogGateway(tools: ToolDef[], opts: { pageSize?: number } = {}) {
  const cat = makeCatalog(tools, opts);
  const gw = await startGateway({
    args: ["--label", "issues", "--approval", "none", "--", ...fixtureCommand("catalog")],
    env: cat.env,
  });
  cleanup.push(
    () => gw.close(),
    () => cat.cleanup(),
  );
  return { cat, gw };
}

async function listChangedAfter(gw: Session<Client>, from: number) {
  return gw.waitForNotification("notifications/tools/list_changed", 10_000, from);
}

function refusal(e: unknown) {
  return e as { code: number; data: Record<string, unknown> };
}

describe("catalog revisions", () => {
  it("an added post_comment beside read_issue is `added`, `expands`, and the client is told", async () => {
    const { cat, gw } = await catalogGateway([READ_ISSUE]);
    await gw.client.listTools();
    const from = gw.received().length;
    cat.write([READ_ISSUE, POST_COMMENT]);
    await listChangedAfter(gw, from);
    const names = (await gw.client.listTools()).tools.map((t) => t.name);
    expect(names).toEqual(["read_issue", "post_comment"]);
    const diff = await runCli(["catalog", "diff", "issues", "--json"], { stateDir: gw.stateDir });
    expect(diff.code).toBe(0);
    const d = JSON.parse(diff.stdout);
    expect(d.from).toBe(1);
    expect(d.to).toBe(2);
    expect(d.entries).toEqual([
      expect.objectContaining({ kind: "added", tool: "post_comment", classification: "expands" }),
    ]);
    const human = await runCli(["catalog", "diff", "issues"], { stateDir: gw.stateDir });
    expect(human.stdout).toMatch(/post_comment/);
    expect(human.stdout).toMatch(/expands/);

    // A word or a flag a subcommand does not take is refused, not passed over: `show issues 1`
    // printed revision 2 as if it were revision 1.
    const refused = async (args: string[], said: string) => {
      const r = await runCli(["catalog", ...args], { stateDir: gw.stateDir });
      expect(r.code).toBe(2);
      expect(r.stdout).toBe("");
      expect(r.stderr).toBe(`portcullis catalog${said}\n`);
    };
    await refused(["show", "issues", "1"], " show: takes one LABEL (a revision is given with --revision N).");
    await refused(["list", "issues", "extra"], " list: takes one LABEL.");
    await refused(
      ["diff", "issues", "--revision", "1"],
      " diff: --revision is for catalog show (diff takes FROM TO).",
    );
    const lsit =
      ": unknown subcommand \"lsit\" (did you mean list?); use show, diff or list ('portcullis catalog --help' says what each does).";
    await refused(["lsit", "issues"], lsit);
    await refused(["lsit"], lsit);
    // a revision is written in digits: "0x2" was revision 2, "2e0" too, and a number past 2^53
    // was named rounded ("no revision 100000000000000000000")
    const notNumber = " must be a revision number (1, 2, … as 'catalog list' shows them).";
    for (const n of ["0x2", "2e0", " 2", "99999999999999999999"]) {
      await refused(["show", "issues", "--revision", n], ` show: --revision${notNumber}`);
      await refused(["diff", "issues", "1", n], ` diff: TO${notNumber}`);
    }
    const one = JSON.parse(
      (await runCli(["catalog", "show", "issues", "--revision", "1", "--json"], { stateDir: gw.stateDir }))
        .stdout,
    );
    expect(one.revision).toBe(1);
  });

  it("serves every page of a catalog served in three pages, and fingerprints them all", async () => {
    const { gw } = await catalogGateway(numberedTools("tool", 6), { pageSize: 2 });
    const listed = await gw.client.listTools();
    expect(listed.tools.map((t) => t.name)).toEqual(numberedTools("tool", 6).map((t) => t.name));
    expect(listed.nextCursor).toBeUndefined();
    const show = JSON.parse(
      (await runCli(["catalog", "show", "issues", "--json"], { stateDir: gw.stateDir })).stdout,
    );
    expect(show.coverage).toMatchObject({ pages: 3, tools: 6, complete: true });
    expect(show.tools).toHaveLength(6);
    for (const t of show.tools) expect(t.fingerprint).toMatch(/^sha256:[0-9a-f]{64}$/);
  });
});

describe("the stale-call guard", () => {
  it("a tool dropped from the list is refused by the gateway and never reaches the server", async () => {
    const { cat, gw } = await catalogGateway([READ_ISSUE, DELETE_ENVIRONMENT]);
    await gw.client.listTools();
    const from = gw.received().length;
    cat.write([READ_ISSUE]);
    await listChangedAfter(gw, from);
    await gw.client.listTools();
    const err = await gw.client
      .callTool({ name: "delete_environment", arguments: { environment: "prod" } })
      .catch((e) => e);
    expect(refusal(err).code).toBe(-32055);
    expect(refusal(err).data).toMatchObject({
      error: "tool_not_in_catalog",
      tool: "delete_environment",
      currentRevision: 2,
    });
    await gw.client.callTool({ name: "read_issue", arguments: { issue_id: "1" } });
    expect(cat.records().map((r) => r.tool)).toEqual(["read_issue"]);
  });

  it("staleness is per tool: after a change to one tool, an unchanged tool is served without re-listing; the changed, added and removed ones are catalog_stale until the client lists", async () => {
    const { cat, gw } = await catalogGateway([READ_ISSUE, POST_COMMENT]);
    await gw.client.listTools();
    await gw.client.callTool({ name: "read_issue", arguments: { issue_id: "1" } });
    let from = gw.received().length;
    // post_comment gains an input (a changed definition); read_issue does not change
    const changed: ToolDef = {
      ...POST_COMMENT,
      inputSchema: {
        ...POST_COMMENT.inputSchema,
        properties: { ...POST_COMMENT.inputSchema.properties, url: { type: "string" } },
      },
    };
    cat.write([READ_ISSUE, changed]);
    await listChangedAfter(gw, from);
    for (let i = 0; i < 2; i++) {
      // the host never re-lists: its user is not locked out of the tool that did not change
      const ok = await gw.client.callTool({ name: "read_issue", arguments: { issue_id: `u${i}` } });
      expect(ok.isError).toBeFalsy();
    }
    const err = await gw.client
      .callTool({ name: "post_comment", arguments: { issue_id: "2", body: "hi" } })
      .catch((e) => e);
    expect(refusal(err).code).toBe(-32052);
    expect(refusal(err).data).toMatchObject({
      error: "catalog_stale",
      tool: "post_comment",
      seenRevision: 1,
      currentRevision: 2,
    });
    expect(String(refusal(err).data.retry)).toMatch(/reconnect/);
    // a tool removed since the client's list is stale too (its view of it is wrong)
    from = gw.received().length;
    cat.write([changed]);
    await listChangedAfter(gw, from);
    const gone = await gw.client
      .callTool({ name: "read_issue", arguments: { issue_id: "3" } })
      .catch((e) => e);
    expect(refusal(gone).data).toMatchObject({ error: "catalog_stale", tool: "read_issue" });
    await gw.client.listTools();
    await gw.client.callTool({ name: "post_comment", arguments: { issue_id: "4", body: "ok" } });
    expect(cat.records().map((r) => r.args.issue_id)).toEqual(["1", "u0", "u1", "4"]);
  });

  it("catalog_stale says how the tool differs from the client's last list: added, removed or changed", async () => {
    const { cat, gw } = await catalogGateway([READ_ISSUE]);
    await gw.client.listTools();
    const call = async (name: string) =>
      refusal(
        await gw.client.callTool({ name, arguments: { issue_id: "1", body: "x" } }).catch((e: unknown) => e),
      );
    const step = async (tools: ToolDef[]) => {
      const from = gw.received().length;
      cat.write(tools);
      await listChangedAfter(gw, from);
    };
    const said = (e: { code: number; data: Record<string, unknown> }) => {
      expect(e.code).toBe(-32052);
      // the SDK puts "MCP error CODE: " before the gateway's message
      return [
        (e as unknown as { message: string }).message.replace(/^MCP error -32052: /, ""),
        e.data.reason,
      ];
    };

    await step([READ_ISSUE, POST_COMMENT]);
    expect(said(await call("post_comment"))).toEqual([
      'The tool "post_comment" was added to the tool catalog since this client last listed it.',
      "not in the tools/list this client last received",
    ]);
    await step([POST_COMMENT]);
    expect(said(await call("read_issue"))).toEqual([
      'The tool "read_issue" was removed from the tool catalog since this client last listed it.',
      "removed from the catalog since this client last listed",
    ]);
    await step([{ ...READ_ISSUE, description: "Read an issue and its comments." }, POST_COMMENT]);
    const changed = await call("read_issue");
    expect(said(changed)).toEqual([
      'The tool "read_issue" changed since this client last listed the tool catalog.',
      "its definition changed since this client last listed",
    ]);
    // the data fields are the same in all three
    expect(Object.keys(changed.data).sort()).toEqual(
      ["currentRevision", "error", "reason", "retry", "seenRevision", "tool"].sort(),
    );
  });

  it("a client that calls before it ever listed is judged on the current catalog (the conformance suite does this)", async () => {
    const { cat, gw } = await catalogGateway([READ_ISSUE]);
    const ok = await gw.client.callTool({ name: "read_issue", arguments: { issue_id: "1" } });
    expect(ok.isError).toBeFalsy();
    const err = await gw.client
      .callTool({ name: "post_comment", arguments: { issue_id: "1", body: "x" } })
      .catch((e) => e);
    expect(refusal(err).data).toMatchObject({ error: "tool_not_in_catalog", tool: "post_comment" });
    expect(cat.records().map((r) => r.tool)).toEqual(["read_issue"]);
  });

  it("arguments that do not validate get an isError result listing the errors, and nothing is forwarded", async () => {
    const { cat, gw } = await catalogGateway([READ_ISSUE]);
    await gw.client.listTools();
    const res = await gw.client.callTool({ name: "read_issue", arguments: { issue_id: 42 } });
    expect(res.isError).toBe(true);
    expect(JSON.stringify(res.content)).toMatch(/issue_id/);
    const missing = await gw.client.callTool({ name: "read_issue", arguments: {} });
    expect(missing.isError).toBe(true);
    expect(cat.records()).toHaveLength(0);
  });

  it("arguments the schema's own defaults make invalid are refused the same way, naming the field, and nothing is forwarded", async () => {
    const deploy: ToolDef = {
      name: "deploy",
      description: "Deploy.",
      inputSchema: {
        type: "object",
        properties: {
          target: { type: "string", enum: ["preview", "staging"], default: "production" },
          note: { type: "string" },
        },
      },
    };
    const { cat, gw } = await catalogGateway([deploy]);
    await gw.client.listTools();
    // the client sent valid arguments; the default filled in for `target` is outside its enum
    const res = await gw.client.callTool({ name: "deploy", arguments: { note: "hi" } });
    expect(res.isError).toBe(true);
    expect(JSON.stringify(res.content)).toMatch(
      /Field \\"target\\" must be one of .*defaults were filled in/,
    );
    expect(cat.records()).toHaveLength(0);
    const ok = await gw.client.callTool({ name: "deploy", arguments: { note: "hi", target: "preview" } });
    expect(ok.isError).toBeFalsy();
    expect(cat.records()).toHaveLength(1);
  });

  it("a restart while a write is pending: epoch_transition, and the write ran once and was not retried", async () => {
    const project = makeProject("B");
    const gw = await startInventory(project, ["--approval", "none", "--on-change", "restart"]);
    cleanup.push(
      () => gw.close(),
      () => project.cleanup(),
    );
    await gw.client.listTools();
    const pending = gw.client
      .callTool({ name: "slow_write", arguments: {} }, undefined, { timeout: 30_000 })
      .catch((e) => e);
    await waitFor(() => project.counter() === 1, 10_000, "slow_write to start");
    project.rebuild("C");
    const err = refusal(await pending);
    expect(err.code).toBe(-32054);
    expect(err.data).toMatchObject({ error: "epoch_transition", retried: false });
    await gw.waitForStderr(/new execution epoch: .*restart/, 15_000);
    await sleep(500);
    project.release();
    expect(project.counter()).toBe(1);
    expect(project.records().filter((r) => r.tool === "slow_write")).toHaveLength(1);
    // the same catalog came back: the client may call again without re-listing
    const again = await gw.client.callTool({ name: "read_status", arguments: {} });
    expect(JSON.stringify(again.content)).toContain('\\"revision\\":\\"C\\"');
  });

  it("calls arriving during identity-pending are held, then evaluated against the new catalog", async () => {
    const project = makeProject("A");
    // a wrapper that starts the server slowly keeps the new epoch identity-pending for a while
    const slow = ["/bin/sh", "-c", `sleep 1.5; exec "${NODE}" dist/server.js`];
    const gw = await startGateway({
      args: [
        "--label",
        "inventory",
        "--approval",
        "none",
        "--on-change",
        "restart",
        "--watch",
        "dist/**",
        "--",
        ...slow,
      ],
      cwd: project.dir,
      env: { ...project.env, ...project.credentialEnv },
      connectTimeoutMs: 30_000,
    });
    cleanup.push(
      () => gw.close(),
      () => project.cleanup(),
    );
    await gw.client.listTools();
    const mark = gw.stderr().length;
    project.rebuild("B"); // adjust_inventory gains a required `warehouse`
    await gw.waitForStderr(/restarting server/, 10_000, mark);
    // prepared against revision A's schema, sent while the new process is starting
    const err = refusal(
      await gw.client
        .callTool({ name: "adjust_inventory", arguments: { sku: "X-1", delta: 1 } })
        .catch((e) => e),
    );
    // the line comes on stderr, what was awaited on another pipe (or the store, or the exit): read in either order
    await waitFor(
      () => /holding tools\/call/.test(gw.stderr().slice(mark)),
      20_000,
      "the gateway's line on the held call",
    );
    expect(gw.stderr().slice(mark)).toMatch(/holding tools\/call/);
    expect(err.code).toBe(-32052);
    expect(err.data).toMatchObject({ error: "catalog_stale", seenRevision: 1, currentRevision: 2 });
    expect(project.records()).toHaveLength(0);
    await gw.client.listTools();
    const ok = await gw.client.callTool({
      name: "adjust_inventory",
      arguments: { sku: "X-1", delta: 1, warehouse: "w1" },
    });
    expect(ok.isError).toBeFalsy();
    expect(project.records().map((r) => r.revision)).toEqual(["B"]);
  });
});
