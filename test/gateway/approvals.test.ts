// Approvals bound to the execution epoch, end to end: real gateways, real fixture servers,
// human decisions made by the real CLI in another process with the passphrase.

import { execFileSync } from "node:child_process";
import { readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { decideByCli, nextStoredRequest, pending } from "../helpers/approvals.js";
import { childrenOf, removeDir, tempDir, waitFor } from "../helpers/files.js";
import { runCli, startInventory } from "../helpers/gateway.js";
import { NODE } from "../helpers/paths.js";
import { makeProject, type Project } from "../helpers/project.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";
import { gatewayRow } from "../helpers/status.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

async function decide(stateDir: string, verb: "approve" | "deny" | "revoke", id: string, ...extra: string[]) {
  const r = await decideByCli(stateDir, verb, id, ...extra);
  expect(r.stderr).not.toMatch(/error/i);
  return r;
}

async function epochOf(stateDir: string, gatewayPid?: number): Promise<string> {
  const r = await runCli(["status", "--json", "--state-dir", stateDir]);
  const rows = JSON.parse(r.stdout).gateways as { pid: number; epoch: string }[];
  return (gatewayPid ? rows.find((g) => g.pid === gatewayPid) : rows[0])!.epoch;
}

async function inventory(
  project: Project,
  stateDir: string,
  extra: string[] = [],
  command = project.command,
  env: Record<string, string> = {},
) {
  const gw = await startInventory(project, extra, { command, credentials: true, stateDir, env });
  cleanup.push(() => gw.close());
  return gw;
}

function refusal(e: unknown) {
  return e as { code: number; data: Record<string, unknown> };
}

describe("the seed's six-step rebuild test", () => {
  it("approval of epoch A never reaches the code of epoch B; the record and the audit say which code acted", async () => {
    const stateDir = newStateDir();
    const project = makeProject("A");
    cleanup.push(() => project.cleanup());
    // 1. revision A under a watcher (the development mechanism), its record captured, tools listed
    const gw = await inventory(
      project,
      stateDir,
      ["--approval-timeout", "30000"],
      [NODE, "--watch", "dist/server.js"],
      // node --watch outlives its closed stdin: at the end, SIGTERM after 200 ms, not the 1.5 s grace
      { PORTCULLIS_SHUTDOWN_GRACE_MS: "200" },
    );
    await gw.client.listTools();
    const epochA = await epochOf(stateDir);
    // … and the write tool approved for this run
    const first = gw.client.callTool({ name: "adjust_inventory", arguments: { sku: "S-1", delta: 1 } });
    const req1 = await nextStoredRequest(stateDir);
    expect(req1.tool).toBe("adjust_inventory");
    await decide(stateDir, "approve", req1.request, "--for", "session");
    // 2. one call, marked revision=A
    expect((await first).isError).toBeFalsy();
    expect(project.records().map((r) => r.revision)).toEqual(["A"]);

    // 3. rebuild to B: same tool name, a new required field, a handler that writes revision=B
    const root = JSON.parse((await runCli(["status", "--json", "--state-dir", stateDir])).stdout).gateways[0]
      .record.processId;
    const children = () => childrenOf(root);
    const before = children();
    project.rebuild("B");
    // 4. the watcher replaces the worker behind the same pipe
    await waitFor(
      () => children() !== "" && children() !== before,
      15_000,
      "the watcher to replace its child",
    );

    // 5. the call prepared before the refresh is refused because the epoch changed; the client,
    // which listed revision 1, is behind for this tool too (B added a required input): it is told
    const stale = refusal(
      await gw.client
        .callTool({ name: "adjust_inventory", arguments: { sku: "S-1", delta: 2 } })
        .catch((e) => e),
    );
    expect(stale.code).toBe(-32051);
    // the row shows the new epoch as it comes up, or at the next heartbeat when the store was busy
    // then: the refusal is no sign that it was written yet
    await gatewayRow(stateDir, (r) => r.epoch !== epochA, "the row to show B's epoch", 15_000);
    const epochB = await epochOf(stateDir);
    expect(epochB).not.toBe(epochA);
    expect(stale.data).toMatchObject({
      error: "authorization_stale",
      reason: "server execution epoch changed",
      approvedEpoch: epochA,
      currentEpoch: epochB,
      retry: "refresh tool metadata and request authorization",
      seenRevision: 1,
      currentRevision: 2,
    });
    expect(stale.data.changedTools).toContain("adjust_inventory");

    // 6. re-list, approve anew, call again
    await gw.client.listTools();
    const second = gw.client.callTool({
      name: "adjust_inventory",
      arguments: { sku: "S-1", delta: 2, warehouse: "w" },
    });
    const req2 = await nextStoredRequest(stateDir, new Set([req1.request]));
    const shown = await runCli(["approvals", "--state-dir", stateDir]);
    expect(shown.stdout).toContain(epochB);
    expect(shown.stdout).toMatch(/warehouse/);
    await decide(stateDir, "approve", req2.request);
    expect((await second).isError).toBeFalsy();

    // the fixture's own record: exactly which calls each revision received
    expect(project.records().map((r) => [r.revision, r.tool, r.args.delta])).toEqual([
      ["A", "adjust_inventory", 1],
      ["B", "adjust_inventory", 2],
    ]);
    // the audit log: epoch A with the first grant, the refusal under epoch B, epoch B with a new grant
    await gw.close();
    const activity = await runCli(["audit", "activity", "--json", "--state-dir", stateDir], {
      env: passphraseEnv(),
    });
    expect(activity.code).toBe(0);
    const calls = (
      JSON.parse(activity.stdout) as { tool: string; epoch: string; decision: string; grant: string | null }[]
    ).filter((a) => a.tool === "adjust_inventory");
    expect(calls.map((c) => [c.epoch, c.decision])).toEqual([
      [epochA, "allowed"],
      [epochB, "authorization_stale"],
      [epochB, "allowed"],
    ]);
    expect(calls[0]!.grant).toBeTruthy();
    expect(calls[2]!.grant).toBeTruthy();
    expect(calls[2]!.grant).not.toBe(calls[0]!.grant);
  });
});

describe("grants across runs and modes", () => {
  it("two gateways (two runs) share the store: run X's grant does not cover run Y; deny and revoke work", async () => {
    const stateDir = newStateDir();
    const project = makeProject("A");
    cleanup.push(() => project.cleanup());
    const x = await inventory(project, stateDir, ["--approval-timeout", "30000"]);
    const y = await inventory(project, stateDir, ["--approval-timeout", "30000"]);
    await Promise.all([x.client.listTools(), y.client.listTools()]);
    const callX = x.client.callTool({ name: "read_status", arguments: {} });
    const rx = await nextStoredRequest(stateDir);
    await decide(stateDir, "approve", rx.request);
    await callX;
    // run Y asks on its own
    const callY = y.client.callTool({ name: "read_status", arguments: {} }).catch((e) => e);
    const ry = await nextStoredRequest(stateDir, new Set([rx.request]));
    expect(ry.agentRun).not.toBe(rx.agentRun);
    await decide(stateDir, "deny", ry.request, "--reason", "not this one");
    expect(refusal(await callY).data).toMatchObject({ error: "approval_denied" });
    // run X's grant still covers X
    await x.client.callTool({ name: "read_status", arguments: {} });
    // revoke: the next call of X asks again
    const grants = JSON.parse((await runCli(["grants", "--json", "--state-dir", stateDir])).stdout)
      .grants as {
      grant: string;
    }[];
    expect(grants).toHaveLength(1);
    await decide(stateDir, "revoke", grants[0]!.grant);
    const again = x.client.callTool({ name: "read_status", arguments: {} });
    const r3 = await nextStoredRequest(stateDir, new Set([rx.request, ry.request]));
    await decide(stateDir, "approve", r3.request, "--for", "call");
    await again;
    expect(project.records().map((r) => r.tool)).toEqual(["read_status", "read_status", "read_status"]);
  });

  it("per-call approvals are never remembered; a timeout is approval_timeout", async () => {
    const stateDir = newStateDir();
    const project = makeProject("A");
    cleanup.push(() => project.cleanup());
    // 4 s: finding the first request and approving it (two CLI processes) must fit in it on a
    // loaded machine; the second call then waits it out
    const gw = await inventory(project, stateDir, ["--approval", "per-call", "--approval-timeout", "4000"]);
    await gw.client.listTools();
    const first = gw.client.callTool({ name: "read_status", arguments: {} });
    const r1 = await nextStoredRequest(stateDir);
    await decide(stateDir, "approve", r1.request, "--for", "call");
    await first;
    const timedOut = refusal(
      await gw.client.callTool({ name: "read_status", arguments: {} }).catch((e) => e),
    );
    expect(timedOut.code).toBe(-32058);
    expect(timedOut.data).toMatchObject({ error: "approval_timeout" });
    expect(project.records()).toHaveLength(1);
  });

  it("mode none asks nobody but still checks epochs and catalogs", async () => {
    const stateDir = newStateDir();
    const project = makeProject("A");
    cleanup.push(() => project.cleanup());
    const gw = await inventory(project, stateDir, ["--approval", "none", "--on-change", "restart"]);
    await gw.client.listTools();
    await gw.client.callTool({ name: "read_status", arguments: {} });
    expect(await pending(stateDir)).toHaveLength(0);
    project.rebuild("B");
    await gw.waitForStderr(/new execution epoch/, 15_000);
    const err = refusal(
      await gw.client
        .callTool({ name: "adjust_inventory", arguments: { sku: "a", delta: 1 } })
        .catch((e) => e),
    );
    expect(err.data).toMatchObject({ error: "catalog_stale" });
  });
});

describe("portcullis demo", () => {
  it("tells the whole story and exits 0, and starts no console without --console", async () => {
    // The demo's keyring with the cheap test key derivation: the story is the subject here, not
    // scrypt's cost, which the demo otherwise pays at init and at every unlock. Its directory
    // made under a TMPDIR of the test's own, and kept (--keep; test/console/demo.test.ts runs it
    // without), so that what it started there can be seen after it.
    const tmp = tempDir("portcullis-demo-test-");
    cleanup.push(() => removeDir(tmp));
    const r = await runCli(["demo", "--keep"], {
      timeoutMs: 120_000,
      env: { PORTCULLIS_INSECURE_TEST_KDF: "1", TMPDIR: tmp },
    });
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/refused -32051/);
    expect(r.stdout).toMatch(/authorization_stale/);
    expect(r.stdout).toMatch(/revision=A/);
    expect(r.stdout).toMatch(/revision=B/);
    expect(r.stdout).toMatch(/audit verify: ok/);
    // the demo decides in-process: no gateway of its started a console on demand (the credential
    // chapter's did, twice, and with --keep it outlived the demo), and nothing of it runs on
    const kept = /\(kept: (.+)\)/.exec(r.stdout)![1]!;
    expect(readdirSync(join(kept, "state")).filter((f) => f.startsWith("console"))).toEqual([]);
    // the kept state directory is named, with a command that reads it as printed (the root
    // itself holds no keyring: a --state-dir of it was told to run `portcullis init` there)
    const command = /to read its audit log, run: portcullis (.+)$/m.exec(r.stdout)![1]!.split(" ");
    expect(command).toEqual(["audit", "activity", "--state-dir", join(kept, "state")]);
    const passphrase = /the passphrase "([^"]+)"/.exec(r.stdout)![1]!;
    const passFile = join(tmp, "pass");
    writeFileSync(passFile, `${passphrase}\n`, { mode: 0o600 });
    const read = await runCli(command, { env: { PORTCULLIS_PASSPHRASE_FILE: passFile } });
    expect(read.code, read.stderr).toBe(0);
    expect(read.stdout).toMatch(/adjust_inventory/);
    const ps = execFileSync("ps", ["-eo", "args"], { encoding: "utf8" });
    expect(ps.split("\n").filter((line) => line.includes(tmp))).toEqual([]);
  });
});
