// A session grant must not survive a schema change that lets new values through, even when the
// change looks like a removal: approve `deploy` whose `target` is limited to "staging", let the
// server republish `deploy` with `properties: {}`, then call it with target "production".
import { afterEach, describe, expect, it } from "vitest";
import { pending } from "../helpers/approvals.js";
import type { ToolDef } from "../helpers/catalog.js";
import { waitFor } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { onExpandGateway } from "../helpers/onExpandGateway.js";
import { passphraseEnv } from "../helpers/state.js";

const DEPLOY_STAGING: ToolDef = {
  name: "deploy",
  description: "Deploy the current build.",
  inputSchema: { type: "object", properties: { target: { type: "string", enum: ["staging"] } } },
};
const DEPLOY_ANYWHERE: ToolDef = { ...DEPLOY_STAGING, inputSchema: { type: "object", properties: {} } };

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

describe("a loosened schema under a session grant", () => {
  it.each(["tool", "run"] as const)(
    "properties emptied (onExpand %s): the call with target production is not forwarded under the old grant",
    async (onExpand) => {
      const { stateDir, cat, gw } = await onExpandGateway(
        "deployer",
        ["--approval", "session", "--approval-timeout", "3000"],
        onExpand,
        [DEPLOY_STAGING],
        cleanup,
      );

      // (its rejection caught at once: caught only after the approval below, an approval_timeout
      // meanwhile is an unhandled rejection, which fails the whole run)
      const first = gw.client.callTool({ name: "deploy", arguments: { target: "staging" } }).then(
        (result) => ({ result }),
        (error: { data?: { error?: string } }) => ({ error }),
      );
      const req = await waitFor(
        async () => (await pending(stateDir))[0] ?? null,
        20_000,
        "an approval request",
      );
      expect(req.tool).toBe("deploy");
      const ok = await runCli(["approve", req.request, "--for", "session", "--state-dir", stateDir], {
        env: passphraseEnv(),
      });
      expect(ok.code).toBe(0);
      // On a loaded machine the approve command can outlast the short hold (3 s, kept short for the
      // second call's sake): the client then retries, as a host does, and the grant covers it.
      const settled = await first;
      let firstResult: Awaited<ReturnType<typeof gw.client.callTool>>;
      if ("result" in settled) firstResult = settled.result;
      else if (settled.error?.data?.error === "approval_timeout")
        firstResult = await gw.client.callTool({ name: "deploy", arguments: { target: "staging" } });
      else throw settled.error;
      expect(firstResult.isError).toBeFalsy();

      const from = gw.received().length;
      cat.write([DEPLOY_ANYWHERE]);
      await gw.waitForNotification("notifications/tools/list_changed", 10_000, from);
      await gw.client.listTools();

      // The old grant does not cover the loosened tool, nothing is forwarded: under onExpand "tool"
      // it is refused as stale; under "run" the run's grants ended with the change, so the call asks
      // a human again (and nobody answers here).
      const err = (await gw.client.callTool({ name: "deploy", arguments: { target: "production" } }).then(
        () => null,
        (e) => e,
      )) as { code: number; data: Record<string, unknown> } | null;
      if (onExpand === "tool") {
        expect(err?.code).toBe(-32051);
        expect(err?.data).toMatchObject({
          error: "authorization_stale",
          reason: "tool authority expanded",
          changedTools: ["deploy"],
        });
      } else {
        expect(err?.code).toBe(-32058);
        expect(err?.data).toMatchObject({ error: "approval_timeout" });
      }
      expect(cat.records().map((r) => r.args.target)).toEqual(["staging"]);

      const diff = JSON.parse((await runCli(["catalog", "diff", "deployer", "--json"], { stateDir })).stdout);
      expect(diff.entries).toEqual([
        expect.objectContaining({ kind: "modified", tool: "deploy", classification: "expands" }),
      ]);
    },
  );
});
