// "The human approved X, Y ran" through a schema default. The gateway forwards the *effective*
// arguments (schema defaults filled in, docs/design.md step 9), yet the classifier that decides
// whether a session grant survives a catalog revision (src/catalog/diff.ts, provablySubset) reads
// `default` as a mere annotation. A revision could therefore change what reaches the server for the
// very same call while being classified `narrows`, and the old session grant kept covering it.
// Now any change of the defaults an input schema fills in (src/catalog/filledDefaults.ts) expands.
//
// 1. `delete_branch` could only ever dry-run: `dry_run` is `{const: true, default: true}`, so every
//    forwarded call carries `dry_run: true`. The server republishes it with `dry_run` dropped and
//    `additionalProperties: false` ("property removed (no longer accepted)", narrows). The same
//    call `{branch}` now reaches the server without `dry_run`: the server's own default decides
//    (a real delete). No call under the approved definition could have reached the server so.
// 2. docs/catalog.md: "default added" expands (what an omitted field means changed). A default
//    added inside a new `allOf` branch is classified "allOf added", narrows, and ajv fills it in.
import { afterEach, describe, expect, it } from "vitest";
import { pending } from "../helpers/approvals.js";
import type { ToolDef } from "../helpers/catalog.js";
import { waitFor } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { onExpandGateway } from "../helpers/onExpandGateway.js";
import { passphraseEnv } from "../helpers/state.js";

const DRY_ONLY: ToolDef = {
  name: "delete_branch",
  description: "Delete a branch.",
  inputSchema: {
    type: "object",
    required: ["branch"],
    properties: { branch: { type: "string" }, dry_run: { const: true, default: true } },
    additionalProperties: false,
  },
};
const DRY_RUN_DROPPED: ToolDef = {
  ...DRY_ONLY,
  inputSchema: {
    type: "object",
    required: ["branch"],
    properties: { branch: { type: "string" } },
    additionalProperties: false,
  },
};

const PUBLISH: ToolDef = {
  name: "publish",
  description: "Publish a build of a branch (to preview unless a target is given).",
  inputSchema: {
    type: "object",
    required: ["branch"],
    properties: { branch: { type: "string" }, target: { enum: ["preview", "production"] } },
  },
};
const PUBLISH_DEFAULT_IN_ALLOF: ToolDef = {
  ...PUBLISH,
  inputSchema: { ...PUBLISH.inputSchema, allOf: [{ properties: { target: { default: "production" } } }] },
};

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

async function approvedThenRevised(
  before: ToolDef,
  after: ToolDef,
  args: Record<string, unknown>,
  onExpand: "tool" | "run",
) {
  const { stateDir, cat, gw } = await onExpandGateway(
    "brancher",
    ["--approval", "session", "--approval-timeout", "3000"],
    onExpand,
    [before],
    cleanup,
  );

  // Its rejection (approval_timeout, when the approval below comes after the 3 s) is caught at
  // once: caught only once the approval is in, it was an unhandled rejection meanwhile, which
  // fails the whole run (seen under load).
  const first = gw.client.callTool({ name: before.name, arguments: args }).then(
    (result) => ({ result }),
    (error: { data?: { error?: string } }) => ({ error }),
  );
  const req = await waitFor(async () => (await pending(stateDir))[0] ?? null, 20_000, "an approval request");
  const ok = await runCli(["approve", req.request, "--for", "session", "--state-dir", stateDir], {
    env: passphraseEnv(),
  });
  expect(ok.code).toBe(0);
  const settled = await first;
  let firstResult: Awaited<ReturnType<typeof gw.client.callTool>>;
  if ("result" in settled) firstResult = settled.result;
  else if (settled.error?.data?.error === "approval_timeout")
    firstResult = await gw.client.callTool({ name: before.name, arguments: args });
  else throw settled.error;
  expect(firstResult.isError).toBeFalsy();

  const from = gw.received().length;
  cat.write([after]);
  await gw.waitForNotification("notifications/tools/list_changed", 10_000, from);
  await gw.client.listTools();

  const second = await gw.client.callTool({ name: after.name, arguments: args }).then(
    (r) => ({ ok: r }),
    (e: { code: number; data?: Record<string, unknown> }) => ({ err: e }),
  );
  const diff = JSON.parse((await runCli(["catalog", "diff", "brancher", "--json"], { stateDir })).stdout);
  return { records: cat.records(), second, diff };
}

describe("a session grant and the defaults the gateway fills in", () => {
  it.each(["tool", "run"] as const)(
    "a dry-run-only tool whose dry_run is dropped (onExpand %s): the call never reaches the server without dry_run",
    async (onExpand) => {
      const { records, diff } = await approvedThenRevised(
        DRY_ONLY,
        DRY_RUN_DROPPED,
        { branch: "main" },
        onExpand,
      );
      // What the human approved could only ever send dry_run: true.
      expect(records[0]?.args).toEqual({ branch: "main", dry_run: true });
      // The classifier called this a narrowing, and the old grant ran a real delete; what the
      // gateway fills into a call changed, so it expands, and the grant stops covering the tool.
      expect(diff.entries[0]).toMatchObject({
        kind: "modified",
        tool: "delete_branch",
        classification: "expands",
      });
      // Every call that reached the server is a dry run.
      expect(records.map((r) => r.args)).toEqual([{ branch: "main", dry_run: true }]);
    },
  );

  it("a default added inside a new allOf branch is a default added (expands), not a narrowing", async () => {
    const { records, diff } = await approvedThenRevised(
      PUBLISH,
      PUBLISH_DEFAULT_IN_ALLOF,
      { branch: "main" },
      "tool",
    );
    expect(records[0]?.args).toEqual({ branch: "main" });
    // the approved call left target to the server (preview); the grant must not carry a call that
    // now goes out with target production
    expect(records.map((r) => r.args)).toEqual([{ branch: "main" }]);
    // docs/catalog.md, "Schema keywords": a default added expands.
    expect(diff.entries[0]).toMatchObject({ kind: "modified", tool: "publish", classification: "expands" });
  });
});
