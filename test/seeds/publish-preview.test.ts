// Seed 000, "Les métadonnées doivent être actualisées lorsque le contrat annoncé change": the
// publish_preview example. A running server (same code, same epoch) republishes its catalog with
// an optional `target` {enum [preview, production], default preview}. The seed asks three things:
// refresh the catalog, make the default visible in the review, and test an omitted argument with
// the code that runs. Also: a metadata-only refresh keeps the epoch, and whether the approval
// survives depends on whether the new catalog exceeds the approved scope.
// Real gateway, real catalog fixture, approvals by the real CLI with the passphrase.
import { afterEach, describe, expect, it } from "vitest";
import { decideByCli, nextStoredRequest, verifiedAuditEvents } from "../helpers/approvals.js";
import { makeCatalog, PUBLISH_PREVIEW_V1, PUBLISH_PREVIEW_V2, type ToolDef } from "../helpers/catalog.js";
import { runCli, startGateway } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const READ_BRANCH: ToolDef = {
  name: "read_branch",
  description: "Read a branch's head.",
  inputSchema: { type: "object", required: ["branch"], properties: { branch: { type: "string" } } },
  annotations: { readOnlyHint: true },
};

async function epochOf(stateDir: string): Promise<string> {
  const r = await runCli(["status", "--json"], { stateDir });
  expect(r.code).toBe(0);
  return (JSON.parse(r.stdout) as { gateways: { epoch: string }[] }).gateways[0]!.epoch;
}

describe("seed 000: publish_preview gains an optional target with a default", () => {
  it("catalog refreshed under the same epoch; the grant does not cover the wider tool; the review shows the default; an omitted target reaches the code as the default", async () => {
    const stateDir = newStateDir();
    const cat = makeCatalog([PUBLISH_PREVIEW_V1, READ_BRANCH]);
    const gw = await startGateway({
      args: ["--label", "previews", "--approval-timeout", "30000", "--", ...fixtureCommand("catalog")],
      env: cat.env,
      stateDir,
    });
    cleanup.push(
      () => gw.close(),
      () => cat.cleanup(),
    );
    await gw.client.listTools();
    const epoch = await epochOf(stateDir);
    const seen = new Set<string>();

    // approved for the session under the first contract
    const first = gw.client.callTool({ name: "publish_preview", arguments: { branch: "main" } });
    const r1 = await nextStoredRequest(stateDir, seen);
    expect(r1.tool).toBe("publish_preview");
    await decideByCli(stateDir, "approve", r1.request, "--for", "session");
    expect((await first).isError).toBeFalsy();
    // covered: no new request for the same tool
    expect(
      (await gw.client.callTool({ name: "publish_preview", arguments: { branch: "dev" } })).isError,
    ).toBeFalsy();

    // the server publishes the new contract (no restart: same process, same code)
    const from = gw.received().length;
    cat.write([PUBLISH_PREVIEW_V2, READ_BRANCH]);
    await gw.waitForNotification("notifications/tools/list_changed", 10_000, from);
    // metadata refresh only: the execution epoch is the same
    expect(await epochOf(stateDir)).toBe(epoch);
    const listed = (await gw.client.listTools()).tools.find((t) => t.name === "publish_preview")!;
    expect(listed.inputSchema.properties).toMatchObject({
      target: { enum: ["preview", "production"], default: "preview" },
    });

    // the agent omits target: the old grant does not cover the wider contract, a human is asked
    const omitted = gw.client.callTool({ name: "publish_preview", arguments: { branch: "main" } });
    const r2 = await nextStoredRequest(stateDir, seen);
    expect(r2.tool).toBe("publish_preview");
    expect(r2.executionEpoch).toBe(epoch);
    // the review makes the new input and its default visible, and what the omitted argument becomes
    const review = await runCli(["approvals", "--verbose"], { stateDir });
    expect(review.code).toBe(0);
    expect(review.stdout).toMatch(/target/);
    expect(review.stdout).toMatch(/target: string, default "preview" \(enum preview\|production\)/);
    expect(review.stdout).toMatch(/target = "preview" .*schema default/);
    expect(review.stdout).toMatch(/production/);
    const asJson = await runCli(["approvals", "--json"], { stateDir });
    const args = (
      JSON.parse(asJson.stdout) as {
        requests: { review: { arguments: { name: string; value: unknown }[] } }[];
      }
    ).requests[0]!.review.arguments;
    expect(args).toContainEqual(expect.objectContaining({ name: "target", value: "preview" }));
    await decideByCli(stateDir, "approve", r2.request, "--for", "call");
    expect((await omitted).isError).toBeFalsy();

    // what the running code received: the omitted target as the default the human saw
    expect(cat.records().map((r) => r.args)).toEqual([
      { branch: "main" },
      { branch: "dev" },
      { branch: "main", target: "preview" },
    ]);
    await gw.close();
    const events = await verifiedAuditEvents(stateDir);
    const called = events.filter((e) => e.type === "tool_called" && e.tool === "publish_preview");
    expect(called).toHaveLength(3);
    expect(called.map((e) => e.epoch)).toEqual([epoch, epoch, epoch]);
    expect(called[2]!.defaultsApplied).toEqual(["target"]);
    expect(called[2]!.revision).toBe(2);
    expect(called[0]!.revision).toBe(1);
  });
});
