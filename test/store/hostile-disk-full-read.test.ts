// Reading the audit log off a full disk: the moment a user needs `audit export` to save the log
// to another disk is when the state directory's disk is full. A 4 MiB tmpfs mounted for the test
// (root only: where mount is refused, each test skips and says why), the state directory in it,
// a gateway's calls recorded, then a file written until ENOSPC. What must hold: with no gateway
// running, `audit verify`, `audit export` (to a file on another disk), `audit checkpoint` and
// `status` read the store (SQLite could not create the -shm file a write-ahead-log store is read
// through, and every one of them said "the disk is full"); what they read is the whole log,
// including where the -wal file holds records and no -shm file is there to read them through
// (read as SQLite's recovery reads the log, in memory: they were refused, saying so, rather than
// verify a log cut short). Real processes throughout.
import { existsSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { FIXTURES, NODE } from "../helpers/paths.js";
import { type RawGateway, rawGateway } from "../helpers/raw.js";
import { type SmallDisk, smallDisk } from "../helpers/smallDisk.js";

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

const TOOLS = '[{"name":"say","inputSchema":{"type":"object"}}]';

/** A gateway on the small disk that has forwarded `calls` calls (each recorded). */
async function gatewayWithCalls(disk: SmallDisk, calls: number): Promise<RawGateway> {
  const gw = rawGateway({
    args: ["--label", "full", "--approval", "none", "--", NODE, FIXTURES.rawlines],
    env: { FIXTURE_RAW_LOG: join(tempDir(), "raw.log"), FIXTURE_RAW_TOOLS: TOOLS },
    stateDir: disk.stateDir,
  });
  cleanup.push(() => gw.close());
  await gw.initialize();
  for (let n = 0; n < calls; n++)
    expect((await gw.request("tools/call", { name: "say", arguments: { n } })).result).toEqual({});
  return gw;
}

/** The number of sealed records an export holds (one JSON line each). */
const records = (jsonl: string): number => jsonl.split("\n").filter((l) => l.trim() !== "").length;

/**
 * The export of a running gateway's log once the results of its `calls` calls are in it (each is
 * recorded after its answer was sent, so it may come after the client has the answer).
 */
async function exportOnceRecorded(stateDir: string, calls: number): Promise<string> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const r = await runCli(["audit", "export"], { stateDir });
    expect(r.code, r.stderr).toBe(0);
    const results = r.stdout.split("\n").filter((l) => l.includes("tool_result")).length;
    if (results >= calls) return r.stdout;
    if (Date.now() > deadline) throw new Error(`${results} of ${calls} call results recorded`);
  }
}

describe("reading the audit log while its disk is full", () => {
  it("with no gateway running: verify, export to another disk, checkpoint and status read the whole log", async (ctx) => {
    const disk = smallDisk(cleanup);
    if (typeof disk === "string") return ctx.skip(disk);
    const { stateDir } = disk;
    const gw = await gatewayWithCalls(disk, 5);
    gw.closeStdin();
    expect(await gw.exited).toEqual({ code: 0, signal: null });
    const db = join(stateDir, "portcullis.db");
    // the last connection checkpointed the log and removed its files: the store is its file alone
    expect(existsSync(`${db}-wal`)).toBe(false);
    const before = await runCli(["audit", "export"], { stateDir });
    expect(before.code, before.stderr).toBe(0);
    expect(records(before.stdout)).toBeGreaterThan(10);

    disk.fill();
    const verify = await runCli(["audit", "verify"], { stateDir });
    // was: exit 2, "the store … cannot be written: the disk is full"
    expect({ code: verify.code, stderr: verify.stderr }).toEqual({ code: 0, stderr: "" });
    expect(verify.stdout).toContain(`${records(before.stdout)} records`);

    // saved to another disk, whole: the same records as before the disk filled
    const other = join(tempDir("portcullis-other-disk-"), "audit.jsonl");
    const exported = await runCli(["audit", "export"], { stateDir });
    expect({ code: exported.code, stderr: exported.stderr }).toEqual({ code: 0, stderr: "" });
    writeFileSync(other, exported.stdout);
    expect(readFileSync(other, "utf8")).toBe(before.stdout);
    const saved = await runCli(["audit", "verify", "--file", other], { stateDir });
    expect(saved.code, saved.stderr).toBe(0);

    const checkpoint = await runCli(["audit", "checkpoint"], { stateDir });
    expect(checkpoint.code, checkpoint.stderr).toBe(0);
    expect(JSON.parse(checkpoint.stdout)).toMatchObject({ seq: records(before.stdout) });

    // status reads it, and says the disk is full (test/store/status-read-only.test.ts)
    const status = await runCli(["status"], { stateDir });
    expect({ code: status.code, stdout: status.stdout, stderr: status.stderr }).toEqual({
      code: 0,
      // the gateways that ran here are named by count (test/cli/status-none-running.test.ts)
      stdout: expect.stringMatching(
        /^no gateway is running \(\d+ ha(s|ve) run here: 'portcullis status --all --state-dir \S+' lists (it|them)\)\n$/,
      ),
      stderr: expect.stringMatching(
        /^portcullis status: the store \S+ cannot be written: the disk is full\. Read as it is, without writing; what gateways could not record since the disk filled is not in it\. To fix it: free space [^\n]*\n$/,
      ),
    });

    // nothing of the reads stayed behind holding space, and the store works once space is back
    disk.free();
    const after = await runCli(["audit", "verify"], { stateDir });
    expect(after.code, after.stderr).toBe(0);
  });

  it("a gateway killed while its -wal holds records, its -shm left: they are read through it", async (ctx) => {
    const disk = smallDisk(cleanup);
    if (typeof disk === "string") return ctx.skip(disk);
    const { stateDir } = disk;
    const db = join(stateDir, "portcullis.db");
    const gw = await gatewayWithCalls(disk, 3);
    const before = { stdout: await exportOnceRecorded(stateDir, 3) };
    gw.kill("SIGKILL");
    await gw.exited;
    expect(statSync(`${db}-wal`).size).toBeGreaterThan(0);
    expect(existsSync(`${db}-shm`)).toBe(true);
    disk.fill();
    const exported = await runCli(["audit", "export"], { stateDir });
    expect({ code: exported.code, stderr: exported.stderr }).toEqual({ code: 0, stderr: "" });
    expect(exported.stdout).toBe(before.stdout);
    const verify = await runCli(["audit", "verify"], { stateDir });
    expect(verify.code, verify.stderr).toBe(0);
  });

  it("a -wal holding records with no -shm to read it through: read with the store's file in memory, whole, the -wal left as it was", async (ctx) => {
    const disk = smallDisk(cleanup);
    if (typeof disk === "string") return ctx.skip(disk);
    const { stateDir } = disk;
    const db = join(stateDir, "portcullis.db");
    const gw = await gatewayWithCalls(disk, 3);
    const before = { stdout: await exportOnceRecorded(stateDir, 3) };
    gw.kill("SIGKILL");
    await gw.exited;
    // the -shm file (an index SQLite rebuilds from the -wal) gone, as a copy of the directory
    // that left it out leaves it: reading the log needs it made again, 32 KiB the disk lacks
    rmSync(`${db}-shm`);
    const wal = readFileSync(`${db}-wal`);
    const file = readFileSync(db);
    expect(wal.length).toBeGreaterThan(0);
    disk.fill();
    // read as SQLite's recovery reads the log, in memory (src/store/walImage.ts): the records
    // only the -wal holds are there (was: refused, "reading the file alone would miss them")
    const exported = await runCli(["audit", "export"], { stateDir });
    expect({ code: exported.code, stderr: exported.stderr }).toEqual({ code: 0, stderr: "" });
    expect(exported.stdout).toBe(before.stdout);
    const verify = await runCli(["audit", "verify"], { stateDir });
    expect({ code: verify.code, stderr: verify.stderr }).toEqual({ code: 0, stderr: "" });
    expect(verify.stdout).toContain(`${records(before.stdout)} records`);
    // nothing written: the store's file and its -wal are as they were
    expect(readFileSync(db).equals(file)).toBe(true);
    expect(readFileSync(`${db}-wal`).equals(wal)).toBe(true);
    // with space back, SQLite reads the same
    disk.free();
    const after = await runCli(["audit", "export"], { stateDir });
    expect(after.code, after.stderr).toBe(0);
    expect(after.stdout).toBe(before.stdout);
  });
});
