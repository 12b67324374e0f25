// What the supervisor calls a replaced worker: a watcher's new worker, or a process that
// execve()s into other code under the same pid, is a new epoch; a helper the server ran that
// exits with nothing in its place is not (the process that answers never changed).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterEach, describe, expect, it } from "vitest";
import { decideByCli, nextStoredRequest, verifiedAuditEvents } from "../helpers/approvals.js";
import { readJsonLines, removeDir, tempDir, waitFor } from "../helpers/files.js";
import { runCli, type Session, startGateway } from "../helpers/gateway.js";
import { FIXTURES, NODE } from "../helpers/paths.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

async function start(command: string[], env: Record<string, string> = {}): Promise<Session<Client>> {
  const gw = await startGateway({ args: ["--label", "kids", "--approval", "none", "--", ...command], env });
  cleanup.push(() => gw.close());
  await gw.client.listTools();
  return gw;
}

async function current(gw: Session<Client>): Promise<{ epoch: string; processId: number }> {
  const r = await runCli(["status", "--json"], { stateDir: gw.stateDir });
  expect(r.code).toBe(0);
  const row = (JSON.parse(r.stdout) as { gateways: { epoch: string; record: { processId: number } }[] })
    .gateways[0]!;
  return { epoch: row.epoch, processId: row.record.processId };
}

async function call(gw: Session<Client>, name: string): Promise<Record<string, unknown>> {
  const res = await gw.client.callTool({ name, arguments: {} });
  expect(res.isError).toBeFalsy();
  return JSON.parse((res.content as { text: string }[])[0]!.text);
}

describe("replaced workers", () => {
  it("a helper alive at the first answer that exits with nothing in its place keeps the epoch, and the server is initialized once", async () => {
    const dir = tempDir();
    cleanup.push(() => removeDir(dir));
    const record = join(dir, "requests.jsonl");
    const gw = await start([NODE, FIXTURES.children], {
      FIXTURE_HELPER_AT_INIT: "1",
      FIXTURE_RECORD: record,
    });
    const before = await current(gw);
    const { stopped } = await call(gw, "helper_stop");
    expect(stopped).toEqual(expect.any(Number));
    // the replacement check runs before this call is forwarded: the helper is gone by then
    expect(await call(gw, "whoami")).toEqual({ pid: before.processId });
    expect(await call(gw, "whoami")).toEqual({ pid: before.processId });
    expect((await current(gw)).epoch).toBe(before.epoch);
    expect(gw.stderr()).not.toMatch(/running server replaced|new execution epoch/);
    const initializes = readJsonLines<{ method: string }>(record).filter((r) => r.method === "initialize");
    expect(initializes).toHaveLength(1);
  });

  it("a relaying watcher's new worker (its own pipes, not the gateway's) is a new epoch", async () => {
    const dir = tempDir();
    cleanup.push(() => removeDir(dir));
    const starts = join(dir, "starts.jsonl");
    const gw = await start([NODE, FIXTURES.watcher, "--", NODE, FIXTURES.children], {
      FIXTURE_STARTS: starts,
    });
    const before = await current(gw);
    const first = await call(gw, "whoami");
    process.kill(before.processId, "SIGHUP"); // the watcher restarts its worker
    await waitFor(() => readJsonLines(starts).length === 2, 10_000, "the watcher's second worker");
    const after = await call(gw, "whoami");
    expect(after.pid).not.toBe(first.pid);
    const line = await gw.waitForStderr(/running server replaced: /, 5_000);
    // The code now serving is the new worker's, under the watcher (the process the gateway
    // launched): the watcher's pid is named as the watcher's, never as the server replaced.
    expect(line).toContain(
      `process ${first.pid} was replaced by process ${after.pid}, a new worker of watcher process ${before.processId}`,
    );
    expect(line).toContain(`the process the gateway launched (pid=${before.processId})`);
    expect(line).toContain(`epoch=${before.epoch} ended`);
    expect(line).not.toMatch(/replaced: pid=/);
    const now = await current(gw);
    expect(now.epoch).not.toBe(before.epoch);
    // the new epoch's line says the code under the launched process is new, not that pid serves
    const next = await gw.waitForStderr(/new execution epoch: [^\n]*/, 5_000);
    expect(next).toContain(
      `new execution epoch: new code under the process the gateway launched (pid=${before.processId}) epoch=${now.epoch} (was ${before.epoch}; replaced)`,
    );
  });

  it("status after a watcher's new worker: the epoch began with the new worker, not with the watcher's process", async () => {
    const dir = tempDir();
    cleanup.push(() => removeDir(dir));
    const starts = join(dir, "starts.jsonl");
    const gw = await start([NODE, FIXTURES.watcher, "--", NODE, FIXTURES.children], {
      FIXTURE_STARTS: starts,
    });
    const before = await current(gw);
    await call(gw, "whoami");
    process.kill(before.processId, "SIGHUP"); // the watcher restarts its worker
    await waitFor(() => readJsonLines(starts).length === 2, 10_000, "the watcher's second worker");
    await call(gw, "whoami");
    const after = await waitFor(
      async () => {
        const c = await current(gw);
        return c.epoch !== before.epoch && c;
      },
      10_000,
      "the new epoch in status",
    );
    const r = await runCli(["status"], { stateDir: gw.stateDir });
    const line = r.stdout.split("\n").find((l) => l.trim().startsWith("epoch"));
    expect(line).toContain(after.epoch);
    // the watcher's process is the one the epoch names, and it was started long before this epoch
    expect(line).not.toMatch(/server pid \d+, started/);
    expect(line).toContain(`when the code under server pid ${before.processId} was replaced`);
    const json = await runCli(["status", "--json"], { stateDir: gw.stateDir });
    expect(JSON.parse(json.stdout).gateways[0].epochReason).toBe("replaced");
  });

  it("the approval review of a call under a watcher's new worker: the epoch began with the new worker, not with the watcher's process", async () => {
    const dir = tempDir();
    cleanup.push(() => removeDir(dir));
    const starts = join(dir, "starts.jsonl");
    const gw = await startGateway({
      args: [
        "--label",
        "kids",
        "--approval-timeout",
        "60000",
        "--",
        NODE,
        FIXTURES.watcher,
        "--",
        NODE,
        FIXTURES.children,
      ],
      env: { FIXTURE_STARTS: starts },
    });
    cleanup.push(() => gw.close());
    await gw.client.listTools();
    const before = await current(gw);
    process.kill(before.processId, "SIGHUP"); // the watcher restarts its worker
    await waitFor(() => readJsonLines(starts).length === 2, 10_000, "the watcher's second worker");
    // the idle poll sees the new worker: the call is asked for under the replaced epoch
    const after = await waitFor(
      async () => {
        const c = await current(gw);
        return c.epoch !== before.epoch && c;
      },
      10_000,
      "the new epoch in status",
    );
    void gw.client.callTool({ name: "whoami", arguments: {} }).catch(() => {});
    const req = await nextStoredRequest(gw.stateDir!);
    expect(req.executionEpoch).toBe(after.epoch);
    const r = await runCli(["approvals", "--verbose", "--state-dir", gw.stateDir!]);
    expect(r.code, r.stderr).toBe(0);
    // the watcher's process is the one the epoch names, and it was started long before this epoch
    expect(r.stdout).not.toMatch(/server pid \d+, started/);
    expect(r.stdout).toContain(`when the code under server pid ${before.processId} was replaced`);
  });

  it.skipIf(process.platform !== "linux")(
    "a server that execve()s into the same interpreter with other code gets a new epoch before its next call",
    async () => {
      // the idle poll pushed out of the way: the check before forwarding must see it
      const gw = await start(["python3", FIXTURES.execs], { PORTCULLIS_POLL_MS: "600000" });
      const before = await current(gw);
      expect(await call(gw, "whoami")).toEqual({ pid: before.processId, stage: "before" });
      await call(gw, "become");
      await waitFor(
        () => readFileSync(`/proc/${before.processId}/cmdline`, "utf8").includes("after"),
        10_000,
        "the server's execve",
      );
      // same pid, same start time, same executable: only the program image is new
      expect(await call(gw, "whoami")).toEqual({ pid: before.processId, stage: "after" });
      await gw.waitForStderr(/running server replaced: .*now runs other code \(execve\)/, 5_000);
      expect((await current(gw)).epoch).not.toBe(before.epoch);
    },
  );

  it.skipIf(process.platform !== "linux")(
    "an approval given to the code before an execve under the same pid does not follow it: the next call is refused stale, and the new code never gets it",
    async () => {
      // Caught before the call is written, or not at all: a look made only when the answer came
      // back would let the new code run a call approved for the old. The idle poll is pushed out
      // of the way, so only the look before forwarding can see the execve.
      const gw = await startGateway({
        args: ["--label", "kids", "--approval", "session", "--", "python3", FIXTURES.execs],
        env: { PORTCULLIS_POLL_MS: "600000" },
      });
      cleanup.push(() => gw.close());
      await gw.client.listTools();
      const stateDir = gw.stateDir!;
      const before = await current(gw);
      const seen = new Set<string>();
      const approved = async (name: string) => {
        const pending = gw.client.callTool({ name, arguments: {} });
        const req = await nextStoredRequest(stateDir, seen);
        expect((await decideByCli(stateDir, "approve", req.request, "--for", "session")).code).toBe(0);
        return JSON.parse(((await pending).content as { text: string }[])[0]!.text);
      };
      expect(await approved("whoami")).toEqual({ pid: before.processId, stage: "before" });
      await approved("become");
      await waitFor(
        () => readFileSync(`/proc/${before.processId}/cmdline`, "utf8").includes("after"),
        10_000,
        "the server's execve",
      );

      // whoami's session grant names the old epoch: refused stale, never forwarded
      const stale = await gw.client.callTool({ name: "whoami", arguments: {} }).then(
        () => null,
        (e: { code?: number; data?: Record<string, unknown> }) => e,
      );
      expect(stale).toMatchObject({
        code: -32051,
        data: { error: "authorization_stale", approvedEpoch: before.epoch },
      });
      const after = await current(gw);
      expect(after.epoch).not.toBe(before.epoch);
      expect(stale!.data!.currentEpoch).toBe(after.epoch);
      // the new code received no whoami: every forwarded call's intent names the epoch it went to
      const called = (await verifiedAuditEvents(stateDir)).filter((e) => e.type === "tool_called");
      expect(called.map((e) => [e.tool, e.epoch])).toEqual([
        ["whoami", before.epoch],
        ["become", before.epoch],
      ]);
    },
  );
});
