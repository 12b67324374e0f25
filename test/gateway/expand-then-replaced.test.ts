// An expanding catalog change ends the run's grants under epoch A (onExpand "run", the default),
// and then a hot reloader replaces its child (epoch B) before the agent's next call: the
// list_changed that came with the epoch change is handled as an epoch change first. The next
// call is refused authorization_stale once (approved under A, now B, naming the tools the ended
// grants named), not catalog_stale; the call after it (tools re-listed) asks a human again.
// Real gateway, real watcher and catalog fixtures, decisions made by the real CLI.
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { decideByCli, nextStoredRequest, verifiedAuditEvents } from "../helpers/approvals.js";
import { makeCatalog, type ToolDef } from "../helpers/catalog.js";
import { readJsonLines, waitFor } from "../helpers/files.js";
import { runCli, startGateway } from "../helpers/gateway.js";
import { FIXTURES, NODE } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const T1: ToolDef = {
  name: "t1",
  description: "Send a report.",
  inputSchema: { type: "object", required: ["text"], properties: { text: { type: "string" } } },
};
/** t1 gains a `destination_url` input: it can now send the report anywhere (an expanding change) */
const T1_WIDER: ToolDef = {
  ...T1,
  inputSchema: {
    ...T1.inputSchema,
    properties: { ...T1.inputSchema.properties, destination_url: { type: "string" } },
  },
};

interface Start {
  watcher: number;
  pid: number;
  at: string;
}

async function epochOf(stateDir: string): Promise<string> {
  const r = await runCli(["status", "--json", "--state-dir", stateDir]);
  expect(r.code, r.stderr).toBe(0);
  return (JSON.parse(r.stdout) as { gateways: { epoch: string }[] }).gateways[0]!.epoch;
}

function refusal(e: unknown) {
  return e as { code: number; data: Record<string, unknown> };
}

describe("an expanding catalog change, then the server replaced", () => {
  it("the next call is refused authorization_stale once (not catalog_stale); the one after asks a human again", async () => {
    const cat = makeCatalog([T1]);
    cleanup.push(() => cat.cleanup());
    const starts = join(cat.dir, "starts.jsonl");
    // our own state dir: the audit is read after the gateway ended
    const stateDir = newStateDir();
    const gw = await startGateway({
      args: [
        "--label",
        "reports",
        "--approval",
        "session",
        "--approval-timeout",
        "30000",
        "--",
        NODE,
        FIXTURES.watcher,
        "--replay-initialize",
        "--",
        NODE,
        FIXTURES.catalog,
      ],
      env: { ...cat.env, FIXTURE_STARTS: starts },
      stateDir,
    });
    cleanup.push(() => gw.close());
    const seen = new Set<string>();

    // 1. t1 approved for the session under epoch A, and called
    await gw.client.listTools();
    const epochA = await epochOf(stateDir);
    const first = gw.client.callTool({ name: "t1", arguments: { text: "one" } });
    const req1 = await nextStoredRequest(stateDir, seen);
    expect(req1.tool).toBe("t1");
    expect(req1.executionEpoch).toBe(epochA);
    await decideByCli(stateDir, "approve", req1.request, "--for", "session");
    expect((await first).isError).toBeFalsy();
    expect(cat.records().map((r) => r.args.text)).toEqual(["one"]);
    const [start1] = await waitFor(
      () => {
        const s = readJsonLines<Start>(starts);
        return s.length === 1 && s;
      },
      10_000,
      "the watcher's first child",
    );

    // 2. an expanding change under epoch A (the watcher does not watch the catalog): the run's
    // grants end
    cat.write([T1_WIDER]);
    await gw.waitForStderr(/expands authority \(t1\).*grant\(s\) ended/, 15_000);
    await waitFor(
      async () => (await verifiedAuditEvents(stateDir)).some((e) => e.type === "grants_revoked"),
      15_000,
      "grants_revoked in the audit",
    );
    expect(gw.stderr()).not.toMatch(/running server replaced/);

    // 3. the watcher replaces its child: epoch B
    process.kill(start1!.watcher, "SIGHUP");
    const [, start2] = await waitFor(
      () => {
        const s = readJsonLines<Start>(starts);
        return s.length === 2 && s;
      },
      15_000,
      "the watcher's second child",
    );
    expect(start2!.pid).not.toBe(start1!.pid);
    await gw.waitForStderr(/running server replaced: /, 15_000);
    const epochB = await waitFor(
      async () => {
        const e = await epochOf(stateDir);
        return e !== epochA && e;
      },
      15_000,
      "the new epoch in status",
    );

    // 4. the call, tools not re-listed: refused as an epoch change, once, never forwarded
    const stale = refusal(
      await gw.client.callTool({ name: "t1", arguments: { text: "two" } }).then(
        () => null,
        (e: unknown) => e,
      ),
    );
    expect(stale).not.toBeNull();
    expect(stale.code).toBe(-32051);
    expect(stale.data).toMatchObject({
      error: "authorization_stale",
      reason: "server execution epoch changed",
      approvedEpoch: epochA,
      currentEpoch: epochB,
    });
    expect(stale.data.approvedEpoch).not.toBe(stale.data.currentEpoch);
    expect(stale.data.changedTools).toEqual(["t1"]);
    expect(cat.records().map((r) => r.args.text)).toEqual(["one"]);

    // 5. re-listed, the call asks a human again (not refused stale a second time)
    await gw.client.listTools();
    const third = gw.client.callTool({
      name: "t1",
      arguments: { text: "three", destination_url: "https://example.com/r" },
    });
    const req2 = await nextStoredRequest(stateDir, seen);
    expect(req2.tool).toBe("t1");
    expect(req2.executionEpoch).toBe(epochB);
    await decideByCli(stateDir, "approve", req2.request, "--for", "session");
    expect((await third).isError).toBeFalsy();
    const records = cat.records();
    expect(records.map((r) => [r.args.text, r.pid])).toEqual([
      ["one", start1!.pid],
      ["three", start2!.pid],
    ]);

    // 6. the audit: the grants ended, then the epoch changed, then the stale refusal, then a new request
    await gw.close();
    const events = await verifiedAuditEvents(stateDir);
    const revoked = events.findIndex((e) => e.type === "grants_revoked");
    const replaced = events.findIndex((e) => e.type === "server_replaced");
    const denied = events.filter((e) => e.type === "authorization_denied");
    expect(denied.map((e) => [e.reason, e.tool, e.epoch])).toEqual([["authorization_stale", "t1", epochB]]);
    const deniedAt = events.indexOf(denied[0]!);
    const requested = events.findIndex((e) => e.type === "approval_requested" && e.epoch === epochB);
    expect(events[revoked]).toMatchObject({
      reason: "catalog change expands authority",
      expanding: [expect.objectContaining({ tool: "t1" })],
    });
    expect(events[replaced]).toMatchObject({ oldEpoch: epochA, newEpoch: epochB });
    expect(revoked).toBeGreaterThanOrEqual(0);
    expect(replaced).toBeGreaterThan(revoked);
    expect(deniedAt).toBeGreaterThan(replaced);
    expect(requested).toBeGreaterThan(deniedAt);
    expect(events.filter((e) => e.type === "server_replaced")).toHaveLength(1);
    expect(events.filter((e) => e.type === "grants_revoked")).toHaveLength(1);
  });
});
