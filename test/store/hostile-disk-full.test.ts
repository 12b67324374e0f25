// A state directory on a file system that fills up while portcullis runs: a tmpfs of 4 MiB
// mounted for the test (root only: where mount is refused, as in an unprivileged CI container,
// each test skips and says why), the state directory in it, then a file written until ENOSPC.
// What must hold: a tools/call that cannot be recorded is refused (never forwarded) with a reason
// that names the store and says to free space; the gateway is not hurt and forwards again once
// space is back; a call in flight when the disk fills is closed once; every command said the disk
// is full (never a deleted -wal, never a stack trace) and exits 2, but those that only read the
// log (audit export, status) read it; `vault set` keeps the old value; the chain verifies
// afterwards. Real processes throughout.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { auditActivity } from "../helpers/approvals.js";
import { commandNamed } from "../helpers/commandNamed.js";
import { tempDir, waitFor } from "../helpers/files.js";
import { runCli, startInventory } from "../helpers/gateway.js";
import { FIXTURES, NODE } from "../helpers/paths.js";
import { makeProject } from "../helpers/project.js";
import { rawGateway } from "../helpers/raw.js";
import { smallDisk } from "../helpers/smallDisk.js";
import { passphraseEnv } from "../helpers/state.js";

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

const TOOLS = '[{"name":"say","inputSchema":{"type":"object"}}]';

/** The tools/call lines the rawlines fixture received (its log is outside the small disk). */
function callsReceived(log: string): string[] {
  if (!existsSync(log)) return [];
  return readFileSync(log, "utf8")
    .split("\n")
    .filter((l) => l.includes("tools/call"));
}

describe("a tools/call while the state directory's disk is full", () => {
  it("is refused audit_unavailable, not forwarded, its reason naming the store and what to do; forwarded again once space is back", async (ctx) => {
    const disk = smallDisk(cleanup);
    if (typeof disk === "string") return ctx.skip(disk);
    const log = join(tempDir(), "raw.log");
    const gw = rawGateway({
      args: ["--label", "full", "--approval", "none", "--", NODE, FIXTURES.rawlines],
      env: { FIXTURE_RAW_LOG: log, FIXTURE_RAW_TOOLS: TOOLS },
      stateDir: disk.stateDir,
    });
    cleanup.push(() => gw.close());
    await gw.initialize();
    expect((await gw.request("tools/call", { name: "say", arguments: { n: 1 } })).result).toEqual({});
    expect(callsReceived(log)).toHaveLength(1);

    disk.fill();
    const db = join(disk.stateDir, "portcullis.db");
    for (let i = 0; i < 2; i++) {
      const refused = await gw.request("tools/call", { name: "say", arguments: { n: 2 + i } });
      expect(refused.error?.code).toBe(-32603);
      expect(refused.error?.message).toBe(
        "The audit log could not record this call, so it was not forwarded.",
      );
      const reason = String((refused.error?.data as { reason?: unknown } | undefined)?.reason);
      // the problem, where, and the one thing to do: not SQLite's "database or disk is full"
      expect(reason).toContain(`the store ${db} cannot be written: the disk is full.`);
      expect(reason).toContain(`free space on the file system that holds ${disk.stateDir}`);
    }
    expect(callsReceived(log)).toHaveLength(1); // nothing unrecorded reached the server
    // what passes unguarded still does (docs/security.md, "What passes unguarded")
    expect((await gw.request("ping")).result).toEqual({});

    disk.free();
    expect((await gw.request("tools/call", { name: "say", arguments: { n: 9 } })).result).toEqual({});
    expect(callsReceived(log)).toHaveLength(2);
    gw.closeStdin();
    expect(await gw.exited).toEqual({ code: 0, signal: null });
    expect(gw.stderr()).not.toMatch(/ {4}at |SqliteError/);
    const verify = await runCli(["audit", "verify"], { stateDir: disk.stateDir });
    expect(verify.code, verify.stderr).toBe(0);
  });

  it("a call in flight when the disk fills is closed once, as interrupted, by the next gateway", async (ctx) => {
    const disk = smallDisk(cleanup);
    if (typeof disk === "string") return ctx.skip(disk);
    const project = makeProject("A");
    cleanup.push(() => project.cleanup());
    const gw = await startInventory(project, ["--approval", "none"], { stateDir: disk.stateDir });
    cleanup.push(() => gw.close());
    await gw.client.listTools();
    const answer = gw.client.callTool({ name: "slow_write", arguments: {} }, undefined, { timeout: 60_000 });
    await waitFor(() => project.counter() === 1, 15_000, "slow_write at the server");
    disk.fill();
    project.release();
    // its answer is the server's: the call did run, only its end cannot be recorded
    expect(await answer).toMatchObject({ content: [{ text: "slow_write released: revision A count 1" }] });
    await gw.close();
    disk.free();
    const next = await startInventory(project, ["--approval", "none"], { stateDir: disk.stateDir });
    await next.client.listTools();
    await next.close();
    const calls = (await auditActivity(disk.stateDir)).filter((a) => a.tool === "slow_write");
    expect(calls.map((a) => [a.outcome, a.interruption])).toEqual([["interrupted", "gateway_gone"]]);
    const verify = await runCli(["audit", "verify"], { stateDir: disk.stateDir });
    expect(verify.code, verify.stderr).toBe(0);
  });
});

describe("commands on a full disk", () => {
  it("run launches no server: a store it cannot write is refused before any server runs", async (ctx) => {
    const disk = smallDisk(cleanup);
    if (typeof disk === "string") return ctx.skip(disk);
    disk.fill();
    // the server's first act, long before the gateway could have opened its store: a server
    // spawned early (src/supervisor/earlyStart.ts) and ended unused has still run
    const launched = join(tempDir(), "launched");
    const r = await runCli(
      ["run", "--label", "full", "--", "sh", "-c", 'echo x > "$0"; exec sleep 30', launched],
      {
        stateDir: disk.stateDir,
      },
    );
    expect(r.code, r.stderr).toBe(2);
    expect(existsSync(launched)).toBe(false);
  });

  it("say the disk is full and what to do, exit 2, keep the old secret; everything works once space is back", async (ctx) => {
    const disk = smallDisk(cleanup);
    if (typeof disk === "string") return ctx.skip(disk);
    const { stateDir } = disk;
    const env = passphraseEnv();
    const set = (value: string) =>
      runCli(["vault", "set", "tok", "--from-stdin", "--deliver", "env"], {
        stateDir,
        env,
        input: `${value}\n`,
      });
    expect((await set("old-value-1234567")).code).toBe(0);
    disk.fill();

    const db = join(stateDir, "portcullis.db");
    // named by the command that failed (vault, run)
    const full = (command: string) =>
      `portcullis ${command}: the store ${db} cannot be written: the disk is full. To fix it: free space on the file system that holds ${stateDir} (df -h ${stateDir} shows what is left).\n`;
    for (const args of [
      ["vault", "set", "tok", "--from-stdin", "--deliver", "env"],
      ["vault", "rm", "tok"],
      ["run", "--label", "full", "--", NODE, FIXTURES.echo],
    ]) {
      const r = await runCli(args, { stateDir, env, input: "new-value-which-is-longer-than-the-old\n" });
      // was: "… its -shm file describes a write-ahead log that …-wal does not hold, as when the
      // -wal file is deleted …; what was only in the deleted file is lost", with advice to end
      // every portcullis process
      expect({ args, stderr: r.stderr, code: r.code }).toEqual({
        args,
        stderr: full(commandNamed(args)),
        code: 2,
      });
    }
    const doctor = await runCli(["doctor", "--json"], { stateDir, env });
    const findings = (JSON.parse(doctor.stdout) as { findings: { ok: boolean; cause?: string }[] }).findings;
    expect(findings.filter((f) => !f.ok).map((f) => f.cause)).toEqual(["disk-full"]);
    // what only reads reads all the same (test/store/hostile-disk-full-read.test.ts); status says
    // the disk is full as it does
    for (const args of [["audit", "export"], ["status"]]) {
      const r = await runCli(args, { stateDir, env });
      expect({ args, code: r.code, stderr: r.stderr }).toEqual({
        args,
        code: 0,
        stderr:
          args[0] === "status"
            ? expect.stringMatching(/^portcullis status: .* the disk is full\. Read as it is/)
            : "",
      });
    }

    disk.free();
    const list = await runCli(["vault", "list", "--json"], { stateDir, env });
    expect(list.code, list.stderr).toBe(0);
    const secrets = (JSON.parse(list.stdout) as { secrets: { name: string; bytes: number }[] }).secrets;
    expect(secrets).toEqual([expect.objectContaining({ name: "tok", bytes: "old-value-1234567".length })]);
    const verify = await runCli(["audit", "verify"], { stateDir, env });
    expect(verify.code, verify.stderr).toBe(0);
    expect((await set("new-value-7654321")).code).toBe(0);
  });
});
